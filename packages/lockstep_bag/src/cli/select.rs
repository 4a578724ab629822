//! What `lockstep bag filter` keeps: the topics (`--topics`, `--regex`, `--exclude-regex`, and Lockstep's own
//! data whatever the selection), the latched topics whose last message before the range is kept too, and
//! the times of the range, read exactly from decimal seconds.

use anyhow::{bail, Result};
use regex::Regex;
use std::collections::BTreeSet;

/// Prefix of Lockstep's own topics: module topologies and traced nodes' event logs.
pub(super) const LOCKSTEP_PREFIX: &str = "/lockstep/";
/// Prefix of the latched per-module topology topics (`lockstep_trace::names::TOPOLOGY_TOPIC_PREFIX`).
pub(super) const TOPOLOGY_PREFIX: &str = "/lockstep/topology/";
/// Suffix of a topic's dependency-header sidecar (`lockstep_trace::names::HEADER_TOPIC_SUFFIX`).
pub(super) const HEADER_SUFFIX: &str = "/lockstep_header";

/// The topics a filter keeps, as `ros2 bag` selects them: with neither `--topics` nor `--regex`, every
/// topic; otherwise the topics listed plus those `--regex` matches (anywhere in the name). `--exclude-regex`
/// then removes matches, except topics listed by name.
///
/// Lockstep's own data stays whatever the selection, so that a filtered recording still replays in
/// lock-step: every `/lockstep/...` topic, and the dependency headers (`<topic>/lockstep_header`) of every
/// topic kept. `--exclude-regex` drops them only when its text names Lockstep (holds `lockstep`, as
/// `^/lockstep/events/` or `lockstep_header$` do): `.*` or `camera` never drop them by accident.
#[derive(Debug)]
pub(super) struct TopicSelection {
    topics: BTreeSet<String>,
    regex: Option<Regex>,
    exclude: Option<Regex>,
    exclude_names_lockstep: bool,
}

impl TopicSelection {
    /// The selection of these options; a bad pattern is an error naming the option.
    pub(super) fn new(topics: &[String], regex: Option<&str>, exclude: Option<&str>) -> Result<Self> {
        Ok(TopicSelection {
            topics: topics
                .iter()
                .map(|t| t.trim())
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect(),
            regex: regex.map(|p| compile("--regex", p)).transpose()?,
            exclude: exclude.map(|p| compile("--exclude-regex", p)).transpose()?,
            exclude_names_lockstep: exclude.is_some_and(|p| p.contains("lockstep")),
        })
    }

    /// The topics of `bag` (its topic names) that are kept. A topic listed in `--topics` that the bag does
    /// not have is an error naming it and the bag's topics (a typo must not silently keep nothing).
    pub(super) fn kept(&self, bag: &BTreeSet<&str>) -> Result<BTreeSet<String>> {
        if let Some(missing) = self.topics.iter().find(|t| !bag.contains(t.as_str())) {
            let names: Vec<&str> = bag.iter().copied().collect();
            bail!(
                "topic `{missing}` given to --topics is not in the bag, whose topics are: {}",
                names.join(", ")
            );
        }
        let everything = self.topics.is_empty() && self.regex.is_none();
        let excluded = |t: &str| self.exclude.as_ref().is_some_and(|r| r.is_match(t));
        let mut kept: BTreeSet<String> = bag
            .iter()
            .filter(|t| {
                let matched = everything || self.regex.as_ref().is_some_and(|r| r.is_match(t));
                self.topics.contains(**t) || (matched && !excluded(t))
            })
            .map(|t| t.to_string())
            .collect();
        let lockstep_excluded = |t: &str| self.exclude_names_lockstep && excluded(t);
        let headers: Vec<String> = kept.iter().map(|t| format!("{t}{HEADER_SUFFIX}")).collect();
        for t in bag.iter().filter(|t| t.starts_with(LOCKSTEP_PREFIX)) {
            if !lockstep_excluded(t) {
                kept.insert(t.to_string());
            }
        }
        for h in headers {
            if bag.contains(h.as_str()) && !lockstep_excluded(&h) {
                kept.insert(h);
            }
        }
        Ok(kept)
    }
}

/// The kept topics whose last message before the start of the range is kept too: those the whole of
/// `last_per_channel` matches (as `mcap filter --last-per-channel-topic-regex`), and the latched module
/// topologies (`/lockstep/topology/...`), which a module publishes once when it starts.
pub(super) fn latched(kept: &BTreeSet<String>, last_per_channel: Option<&Regex>) -> BTreeSet<String> {
    kept.iter()
        .filter(|t| t.starts_with(TOPOLOGY_PREFIX) || last_per_channel.is_some_and(|r| r.is_match(t)))
        .cloned()
        .collect()
}

/// `pattern` compiled to match a whole topic name (mcap's `^...$`).
pub(super) fn whole_name(option: &str, pattern: &str) -> Result<Regex> {
    // A bad pattern is reported as it was written.
    compile(option, pattern)?;
    compile(option, &format!("^(?:{pattern})$"))
}

fn compile(option: &str, pattern: &str) -> Result<Regex> {
    Regex::new(pattern).map_err(|e| {
        let reason = e.to_string().lines().last().unwrap_or_default().trim().to_owned();
        anyhow::anyhow!("option {option}: `{pattern}` is not a regular expression: {reason}")
    })
}

/// Seconds as a nanosecond count, for time options: decimal digits with an optional fraction, read exactly
/// (an epoch time in f64 would lose the nanoseconds), fraction digits past the ninth dropped; an exponent
/// form is read as a float. At most 2^64 - 1 ns (the year 2554); negative, NaN or infinite values are
/// refused.
pub(super) fn seconds_arg(text: &str) -> Result<u64, String> {
    let bad = || {
        format!("`{text}` is not a number of seconds from 0 to 18446744073.709551615 (e.g. 1700000000.25)")
    };
    let t = text.trim();
    if t.contains(['e', 'E']) {
        let secs: f64 = t.parse().map_err(|_| bad())?;
        if !(secs.is_finite() && (0.0..=1.8e10).contains(&secs)) {
            return Err(bad());
        }
        return Ok((secs * 1e9).round() as u64);
    }
    let (whole, fraction) = t.split_once('.').unwrap_or((t, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
        return Err(bad());
    }
    let mut ns = 0u64;
    for (i, b) in fraction.bytes().take(9).enumerate() {
        ns += u64::from(b - b'0') * 10u64.pow(8 - i as u32);
    }
    let secs: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    secs.checked_mul(1_000_000_000)
        .and_then(|s| s.checked_add(ns))
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BAG: [&str; 7] = [
        "/a",
        "/a/lockstep_header",
        "/b",
        "/b/lockstep_header",
        "/camera/image",
        "/lockstep/events/n1",
        "/lockstep/topology/m1",
    ];

    fn kept(topics: &[&str], regex: Option<&str>, exclude: Option<&str>) -> Vec<String> {
        let topics: Vec<String> = topics.iter().map(|t| t.to_string()).collect();
        let s = TopicSelection::new(&topics, regex, exclude).unwrap();
        s.kept(&BAG.into_iter().collect()).unwrap().into_iter().collect()
    }

    #[test]
    fn lockstep_data_stays_unless_an_exclusion_names_it() {
        assert_eq!(kept(&[], None, None), BAG);
        assert_eq!(
            kept(&["/a"], None, None),
            [
                "/a",
                "/a/lockstep_header",
                "/lockstep/events/n1",
                "/lockstep/topology/m1"
            ]
        );
        assert_eq!(
            kept(&[], Some("camera"), Some(".*")),
            ["/lockstep/events/n1", "/lockstep/topology/m1"]
        );
        assert_eq!(
            kept(&[], None, Some("^/lockstep/events/|^/b|lockstep_header$")),
            ["/a", "/camera/image", "/lockstep/topology/m1"]
        );
        // A listed topic stays even when an exclusion matches it.
        assert_eq!(kept(&["/b"], None, Some("^/b$|lockstep")), ["/b"]);
    }

    #[test]
    fn bad_options_are_named() {
        let s = TopicSelection::new(&["/nope".into()], None, None).unwrap();
        let e = s.kept(&BAG.into_iter().collect()).unwrap_err().to_string();
        assert!(e.contains("`/nope`") && e.contains("/camera/image"), "{e}");
        let e = TopicSelection::new(&[], Some("("), None).unwrap_err().to_string();
        assert!(
            e.starts_with("option --regex: `(` is not a regular expression"),
            "{e}"
        );
        let e = whole_name("--last-per-channel-topic-regex", "(")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`(`") && !e.contains("^(?:"), "{e}");
    }

    #[test]
    fn latched_topics_match_whole_names() {
        let all: BTreeSet<String> = BAG.iter().map(|t| t.to_string()).collect();
        let re = whole_name("x", "/a").unwrap();
        assert_eq!(
            latched(&all, Some(&re)).into_iter().collect::<Vec<_>>(),
            ["/a", "/lockstep/topology/m1"]
        );
    }

    #[test]
    fn seconds_are_read_exactly() {
        assert_eq!(seconds_arg("1700000000.123456789"), Ok(1_700_000_000_123_456_789));
        assert_eq!(seconds_arg("1.5"), Ok(1_500_000_000));
        assert_eq!(seconds_arg(".25"), Ok(250_000_000));
        assert_eq!(seconds_arg("3"), Ok(3_000_000_000));
        assert_eq!(seconds_arg("1.0000000019"), Ok(1_000_000_001));
        assert_eq!(seconds_arg("1.7e9"), Ok(1_700_000_000_000_000_000));
        for bad in ["", ".", "-1", "nan", "inf", "1e30", "1,5", "18446744074", "0x10"] {
            assert!(seconds_arg(bad).is_err(), "{bad}");
        }
    }
}
