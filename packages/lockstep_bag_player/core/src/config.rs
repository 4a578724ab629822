//! A play's options: as given (node parameters or `lockstep bag play` flags, [`PlayOptions`]) and checked
//! and converted to the units the player uses ([`PlayConfig`]). The numeric ranges are checked by the node's
//! parameter rules; here the checks those rules cannot say: a bag is given, `/clock` is off or fast enough
//! for a timer, and at most one of rosbag2's three ways to publish `/clock` is asked for.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::service_events::{RequestSource, SentRequests};

/// The highest `/clock` frequency (Hz).
pub const MAX_CLOCK_HZ: f64 = 10_000.0;
/// The slowest `/clock` (one a quarter of an hour): below it the period does not fit a timer.
pub const MIN_CLOCK_HZ: f64 = 0.001;

/// The options as the node's parameters hold them (see the node's `PlayerParams` for each one's meaning).
#[derive(Debug, Clone, PartialEq)]
pub struct PlayOptions {
    pub bag: String,
    pub rate: f64,
    pub start_paused: bool,
    pub start_offset: f64,
    pub playback_duration: f64,
    pub playback_until_timestamp: f64,
    pub topics: String,
    pub regex: String,
    pub exclude_regex: String,
    pub remap: String,
    pub clock: f64,
    pub delay: f64,
    pub read_ahead_queue_size: i64,
    pub qos_profile_overrides_path: String,
    pub wait_for_all_acked: i64,
    pub wait_for_subscribers: i64,
    pub exit_at_end: bool,
    pub message_order: String,
    pub clock_topics: String,
    pub clock_topics_all: bool,
    pub publish_service_requests: bool,
    pub service_requests_source: String,
    pub send_actions_as_client: bool,
}

/// Which time stamp orders and times the messages (rosbag2's `--message-order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MessageOrder {
    /// The log (receive) time, each bag's own order.
    #[default]
    Received,
    /// The publish (send) time where the bag stores one, else the log time.
    Sent,
}

impl MessageOrder {
    /// `received` or `sent`, as rosbag2 names them.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "received" | "" => Ok(Self::Received),
            "sent" => Ok(Self::Sent),
            other => Err(format!(
                "parameter 'message_order' = `{other}`: must be one of `received`, `sent`"
            )),
        }
    }

    /// The time stamp that orders and times `message` (ns since 1970). A publish time of 0 means the writer
    /// did not know it: the log time stands in.
    pub fn stamp(self, message: &lockstep_bag::BagMessage) -> u64 {
        match self {
            Self::Sent if message.publish_time_ns != 0 => message.publish_time_ns,
            _ => message.log_time_ns,
        }
    }
}

/// When `/clock` is published besides (or instead of) the `--clock` timer: rosbag2's `--clock-topics` and
/// `--clock-topics-all`, just before each message of those topics (bag names) with that message's time stamp.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ClockTopics {
    #[default]
    Off,
    Listed(BTreeSet<String>),
    All,
}

impl ClockTopics {
    /// Whether a message of `topic` (its name in the bag) publishes `/clock` first.
    pub fn triggers(&self, topic: &str) -> bool {
        match self {
            Self::Off => false,
            Self::Listed(topics) => topics.contains(topic),
            Self::All => true,
        }
    }

    pub fn is_off(&self) -> bool {
        *self == Self::Off
    }
}

/// A play's options, checked.
#[derive(Debug, Clone)]
pub struct PlayConfig {
    /// The bags, played as one stream (see `merge`); one or more.
    pub bags: Vec<PathBuf>,
    pub rate: f64,
    pub start_paused: bool,
    pub start_offset_secs: f64,
    pub playback_duration_secs: f64,
    pub playback_until_ns: u64,
    pub looped: bool,
    pub topics: Vec<String>,
    pub regex: String,
    pub exclude_regex: String,
    pub remaps: Vec<String>,
    pub clock_hz: f64,
    pub delay_secs: f64,
    pub read_ahead_queue_size: usize,
    pub qos_overrides_path: Option<PathBuf>,
    pub wait_for_all_acked_ms: u64,
    pub wait_for_subscribers: usize,
    pub exit_at_end: bool,
    pub message_order: MessageOrder,
    pub clock_topics: ClockTopics,
    /// Recorded service and action calls sent to live servers instead of published as events.
    pub requests: SentRequests,
}

impl PlayOptions {
    /// A bag must be given; the message says how.
    pub fn check_bag(&self) -> Result<(), String> {
        if bags(&self.bag).is_empty() {
            Err("parameter `bag`: no bag given (-p bag:=<directory or file>[,<another>...])".to_owned())
        } else {
            Ok(())
        }
    }

    /// Check what the parameter ranges cannot and convert; `looped` is the parameter `loop`. Errors name the
    /// parameter.
    pub fn config(&self, looped: bool) -> Result<PlayConfig, String> {
        self.check_bag()?;
        if !(self.clock == 0.0 || self.clock >= MIN_CLOCK_HZ) {
            return Err(format!(
                "parameter 'clock' = {}: must be 0 (no /clock) or in [{MIN_CLOCK_HZ}, {MAX_CLOCK_HZ}] Hz",
                lockstep_ranges::number(self.clock)
            ));
        }
        let clock_topics = self.clock_topics()?;
        Ok(PlayConfig {
            bags: bags(&self.bag),
            rate: self.rate,
            start_paused: self.start_paused,
            start_offset_secs: self.start_offset,
            playback_duration_secs: self.playback_duration,
            playback_until_ns: (self.playback_until_timestamp * 1e9).round() as u64,
            looped,
            topics: list(&self.topics),
            regex: self.regex.clone(),
            exclude_regex: self.exclude_regex.clone(),
            remaps: list(&self.remap),
            clock_hz: self.clock,
            delay_secs: self.delay,
            read_ahead_queue_size: usize::try_from(self.read_ahead_queue_size).unwrap_or(1),
            qos_overrides_path: (!self.qos_profile_overrides_path.is_empty())
                .then(|| PathBuf::from(&self.qos_profile_overrides_path)),
            wait_for_all_acked_ms: u64::try_from(self.wait_for_all_acked).unwrap_or(0),
            wait_for_subscribers: usize::try_from(self.wait_for_subscribers).unwrap_or(0),
            exit_at_end: self.exit_at_end,
            message_order: MessageOrder::parse(&self.message_order)?,
            clock_topics,
            requests: SentRequests {
                services: self.publish_service_requests,
                actions: self.send_actions_as_client,
                source: RequestSource::parse(&self.service_requests_source)?,
            },
        })
    }

    /// `clock_topics` / `clock_topics_all`; like rosbag2's `--clock`, `--clock-topics` and
    /// `--clock-topics-all`, at most one of the three ways to publish `/clock` may be given.
    fn clock_topics(&self) -> Result<ClockTopics, String> {
        let listed: BTreeSet<String> = list(&self.clock_topics).into_iter().collect();
        let asked = [
            (self.clock > 0.0, "clock"),
            (!listed.is_empty(), "clock_topics"),
            (self.clock_topics_all, "clock_topics_all"),
        ];
        let given: Vec<&str> = asked.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect();
        if given.len() > 1 {
            return Err(format!(
                "parameters '{}' exclude each other (one way to publish /clock, as rosbag2's --clock, \
                 --clock-topics and --clock-topics-all)",
                given.join("' and '")
            ));
        }
        Ok(if self.clock_topics_all {
            ClockTopics::All
        } else if listed.is_empty() {
            ClockTopics::Off
        } else {
            ClockTopics::Listed(listed)
        })
    }
}

/// The bags of the parameter `bag`: the whole text when it names an existing file or directory (so a single
/// bag's path may hold commas), otherwise a comma-separated list (paths may hold spaces).
pub fn bags(text: &str) -> Vec<PathBuf> {
    let whole = text.trim();
    if whole.is_empty() {
        return Vec::new();
    }
    if Path::new(whole).exists() {
        return vec![PathBuf::from(whole)];
    }
    whole
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// A list parameter: items separated by commas or whitespace.
pub fn list(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> PlayOptions {
        PlayOptions {
            bag: "some.mcap".into(),
            rate: 1.0,
            start_paused: false,
            start_offset: 0.0,
            playback_duration: -1.0,
            playback_until_timestamp: 1.5,
            topics: "/a, /b /c".into(),
            regex: String::new(),
            exclude_regex: String::new(),
            remap: "/a:=/x".into(),
            clock: 0.0,
            delay: 0.0,
            read_ahead_queue_size: 1000,
            qos_profile_overrides_path: String::new(),
            wait_for_all_acked: 1000,
            wait_for_subscribers: 0,
            exit_at_end: false,
            message_order: "received".into(),
            clock_topics: String::new(),
            clock_topics_all: false,
            publish_service_requests: false,
            service_requests_source: "service_introspection".into(),
            send_actions_as_client: false,
        }
    }

    #[test]
    fn lists_split_on_commas_and_spaces_and_times_become_ns() {
        let config = options().config(true).unwrap();
        assert_eq!(config.topics, ["/a", "/b", "/c"]);
        assert_eq!(config.remaps, ["/a:=/x"]);
        assert_eq!(config.playback_until_ns, 1_500_000_000);
        assert!(config.looped && config.qos_overrides_path.is_none());
    }

    #[test]
    fn no_bag_and_a_clock_too_slow_for_a_timer_are_refused() {
        let mut o = options();
        assert!(o.config(false).is_ok());
        o.clock = 100.0;
        assert!(o.config(false).is_ok());
        for hz in [1e-300, 5e-324] {
            o.clock = hz;
            let e = o.config(false).err().unwrap_or_default();
            assert!(e.contains("must be 0 (no /clock) or in [0.001, 10000] Hz"), "{e}");
        }
        o.bag.clear();
        assert!(o.config(false).err().is_some_and(|e| e.contains("no bag given")));
    }

    #[test]
    fn bags_are_a_comma_separated_list_unless_the_whole_text_is_a_path() {
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("a, b");
        std::fs::create_dir(&odd).unwrap();
        let text = odd.display().to_string();
        assert_eq!(bags(&text), [odd]);
        assert_eq!(
            bags(" x.mcap, y bag ,,z "),
            [PathBuf::from("x.mcap"), "y bag".into(), "z".into()]
        );
        assert!(bags("  ").is_empty());
    }

    #[test]
    fn one_way_to_publish_clock_and_a_known_message_order() {
        let mut o = options();
        o.clock_topics = "/a, /b".into();
        let config = o.config(false).unwrap();
        assert!(config.clock_topics.triggers("/b") && !config.clock_topics.triggers("/c"));
        o.clock = 10.0;
        let e = o.config(false).err().unwrap_or_default();
        assert!(e.contains("'clock' and 'clock_topics' exclude each other"), "{e}");
        o.clock = 0.0;
        o.clock_topics_all = true;
        assert!(o.config(false).is_err());
        o.clock_topics.clear();
        assert_eq!(o.config(false).unwrap().clock_topics, ClockTopics::All);
        o.message_order = "sent".into();
        assert_eq!(o.config(false).unwrap().message_order, MessageOrder::Sent);
        o.message_order = "newest".into();
        assert!(o
            .config(false)
            .err()
            .is_some_and(|e| e.contains("'message_order'")));
    }
}
