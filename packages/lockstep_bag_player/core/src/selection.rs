//! Which topics play (`--topics`, `--regex`, `--exclude-regex`) and under which names (`--remap`).

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

use crate::error::{Error, Result};

/// The topics to play, as `ros2 bag play` selects them: with neither `--topics` nor `--regex`, every topic;
/// otherwise the topics listed plus those matching `--regex`. `--exclude-regex` then removes matches, except
/// topics listed by name (naming a topic is the stronger statement).
#[derive(Debug, Clone)]
pub struct TopicSelection {
    topics: BTreeSet<String>,
    regex: Option<Regex>,
    exclude: Option<Regex>,
}

impl TopicSelection {
    /// `topics` may hold empty strings (ignored); empty patterns mean "not given".
    pub fn new(topics: &[String], regex: &str, exclude_regex: &str) -> Result<Self> {
        let compile = |option: &'static str, pattern: &str| -> Result<Option<Regex>> {
            if pattern.is_empty() {
                return Ok(None);
            }
            Regex::new(pattern).map(Some).map_err(|e| Error::Regex {
                option,
                pattern: pattern.to_owned(),
                reason: e.to_string(),
            })
        };
        Ok(Self {
            topics: topics
                .iter()
                .map(|t| t.trim())
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect(),
            regex: compile("regex", regex)?,
            exclude: compile("exclude-regex", exclude_regex)?,
        })
    }

    /// The bag's topics that play, sorted. A topic listed in `--topics` that the bag does not have is an
    /// error naming it and the bag's topics (a typo must not silently play nothing).
    pub fn select<'a>(&self, bag_topics: impl IntoIterator<Item = &'a str>) -> Result<Vec<String>> {
        let bag: BTreeSet<&str> = bag_topics.into_iter().collect();
        if let Some(missing) = self.topics.iter().find(|t| !bag.contains(t.as_str())) {
            return Err(Error::UnknownTopic {
                topic: missing.clone(),
                available: bag.iter().copied().collect::<Vec<_>>().join(", "),
            });
        }
        let everything = self.topics.is_empty() && self.regex.is_none();
        Ok(bag
            .into_iter()
            .filter(|t| {
                let named = self.topics.contains(*t);
                let matched = everything || self.regex.as_ref().is_some_and(|r| r.is_match(t));
                named || (matched && !self.exclude.as_ref().is_some_and(|r| r.is_match(t)))
            })
            .map(str::to_owned)
            .collect())
    }
}

/// `from:=to` rules (absolute names; each `from` once) as a map.
pub fn parse_remaps(rules: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for rule in rules.iter().map(|r| r.trim()).filter(|r| !r.is_empty()) {
        let bad = |reason: &str| Error::Remap {
            rule: rule.to_owned(),
            reason: reason.to_owned(),
        };
        let (from, to) = rule.split_once(":=").ok_or_else(|| bad("no `:=`"))?;
        for name in [from, to] {
            if !name.starts_with('/') || name.len() < 2 || name.contains(char::is_whitespace) {
                return Err(bad(&format!("`{name}` is not an absolute topic name")));
            }
        }
        if out.insert(from.to_owned(), to.to_owned()).is_some() {
            return Err(bad(&format!("`{from}` is remapped twice")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BAG: [&str; 4] = ["/a", "/b", "/camera/image", "/camera/info"];

    fn select(topics: &[&str], regex: &str, exclude: &str) -> Result<Vec<String>> {
        let topics: Vec<String> = topics.iter().map(|t| t.to_string()).collect();
        TopicSelection::new(&topics, regex, exclude)?.select(BAG)
    }

    #[test]
    fn everything_by_default_minus_exclusions() {
        assert_eq!(select(&[], "", "").unwrap(), BAG);
        assert_eq!(select(&[], "", "^/camera").unwrap(), ["/a", "/b"]);
    }

    #[test]
    fn listed_topics_and_regex_matches_add_up() {
        assert_eq!(select(&["/a"], "", "").unwrap(), ["/a"]);
        assert_eq!(select(&["/a"], "info$", "").unwrap(), ["/a", "/camera/info"]);
        // A listed topic is kept even when an exclusion matches it.
        assert_eq!(
            select(&["/a"], "^/camera", "^/a|image").unwrap(),
            ["/a", "/camera/info"]
        );
    }

    #[test]
    fn a_listed_topic_missing_from_the_bag_is_named() {
        let e = select(&["/a", "/nope"], "", "").unwrap_err().to_string();
        assert!(e.contains("`/nope`") && e.contains("/camera/info"), "{e}");
        let e = select(&[], "(", "").unwrap_err().to_string();
        assert!(e.starts_with("option `regex`: `(`"), "{e}");
    }

    #[test]
    fn remaps_are_parsed_and_checked() {
        let rules = vec!["/a:=/x".to_string(), " /b:=/y/z ".to_string(), String::new()];
        let map = parse_remaps(&rules).unwrap();
        assert_eq!(map["/a"], "/x");
        assert_eq!(map["/b"], "/y/z");
        for bad in ["/a", "a:=/b", "/a:=b", "/a:=/b c"] {
            let e = parse_remaps(&[bad.to_string()]).unwrap_err().to_string();
            assert!(e.contains(bad) || e.contains("absolute"), "{e}");
        }
        let twice = parse_remaps(&["/a:=/x".into(), "/a:=/y".into()])
            .unwrap_err()
            .to_string();
        assert!(twice.contains("twice"), "{twice}");
    }
}
