//! The recorder's settings (its parameters as plain values) and what they become once checked: the topic
//! selection, the bag's writer options, the queue bound and the periods of the node's tasks.

use std::time::Duration;

use lockstep_bag::{ChunkCompression, WriterOptions};

use crate::error::{Error, Result};
use crate::selection::{SelectionSettings, TopicSelection};

/// rosbag2's `max_cache_size` default.
pub const DEFAULT_QUEUE_BYTES: u64 = 100 * 1024 * 1024;

/// The recorder's parameters as plain values (the node declares them as ROS parameters, `lockstep bag
/// record` fills them from its flags). Ranges are checked by the node's parameter rules before.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub output: String,
    pub all_topics: bool,
    pub topics: String,
    pub include_regex: String,
    pub exclude_regex: String,
    pub all_services: bool,
    pub all_actions: bool,
    pub services: String,
    pub actions: String,
    pub exclude_topics: String,
    pub exclude_services: String,
    pub exclude_actions: String,
    pub topic_types: String,
    pub exclude_topic_types: String,
    pub discovery_period_secs: f64,
    pub compression: String,
    pub max_bag_size_bytes: i64,
    pub max_bag_duration_secs: f64,
    pub start_paused: bool,
    pub status_period_secs: f64,
    pub max_queue_bytes: i64,
    pub test_write_delay_secs: f64,
    pub type_support: String,
    pub snapshot_mode: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            output: String::new(),
            all_topics: true,
            topics: String::new(),
            include_regex: String::new(),
            exclude_regex: String::new(),
            all_services: true,
            all_actions: true,
            services: String::new(),
            actions: String::new(),
            exclude_topics: String::new(),
            exclude_services: String::new(),
            exclude_actions: String::new(),
            topic_types: String::new(),
            exclude_topic_types: String::new(),
            discovery_period_secs: 0.1,
            compression: "none".into(),
            max_bag_size_bytes: 0,
            max_bag_duration_secs: 0.0,
            start_paused: false,
            status_period_secs: 1.0,
            max_queue_bytes: DEFAULT_QUEUE_BYTES as i64,
            test_write_delay_secs: 0.0,
            type_support: "generic".into(),
            snapshot_mode: false,
        }
    }
}

/// Which type support subscriptions use (parameter `type_support`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeSupport {
    /// Each type's support loaded at run time from `AMENT_PREFIX_PATH`.
    Generic,
    /// Only the types compiled into the binary.
    Compiled,
}

impl TypeSupport {
    pub fn parse(value: &str) -> Result<Self> {
        match value {
            "generic" | "" => Ok(Self::Generic),
            "compiled" => Ok(Self::Compiled),
            other => Err(Error::InvalidChoice {
                parameter: "type_support",
                value: other.to_owned(),
                expected: "`generic` or `compiled`",
            }),
        }
    }
}

/// The checked settings, as the recorder uses them.
#[derive(Debug, Clone)]
pub struct RecorderConfig {
    /// The bag directory to create.
    pub output: String,
    pub selection: TopicSelection,
    pub writer: WriterOptions,
    pub start_paused: bool,
    pub max_queue_bytes: u64,
    /// Sleep before each write (a slow disk, for tests of the queue bound).
    pub write_delay: Duration,
    pub discovery_period: Duration,
    pub status_period: Duration,
    pub type_support: TypeSupport,
    /// Keep the last `max_queue_bytes` of messages in memory and write them only on a snapshot.
    pub snapshot_mode: bool,
}

impl RecorderConfig {
    /// Check `s` and convert it; an empty `output` becomes `lockstep_bag_<now_unix_secs>`.
    pub fn new(s: &Settings, now_unix_secs: u64) -> Result<Self> {
        let list = |text: &str| -> Vec<String> { text.split(',').map(str::to_owned).collect() };
        let selection = TopicSelection::from_settings(&SelectionSettings {
            all_topics: s.all_topics,
            all_services: s.all_services,
            all_actions: s.all_actions,
            topics: list(&s.topics),
            services: list(&s.services),
            actions: list(&s.actions),
            include_regex: s.include_regex.clone(),
            exclude_regex: s.exclude_regex.clone(),
            exclude_topics: list(&s.exclude_topics),
            exclude_services: list(&s.exclude_services),
            exclude_actions: list(&s.exclude_actions),
            topic_types: list(&s.topic_types),
            exclude_topic_types: list(&s.exclude_topic_types),
        })?;
        let output = if s.output.is_empty() {
            format!("lockstep_bag_{now_unix_secs}")
        } else {
            s.output.clone()
        };
        Ok(Self {
            output,
            selection,
            writer: writer_options(s)?,
            start_paused: s.start_paused,
            max_queue_bytes: s.max_queue_bytes.max(1) as u64,
            write_delay: Duration::from_secs_f64(s.test_write_delay_secs.max(0.0)),
            // Floors so that a period never spins the node (the parameter rules refuse less already).
            discovery_period: Duration::from_secs_f64(s.discovery_period_secs.max(0.01)),
            status_period: Duration::from_secs_f64(s.status_period_secs.max(0.05)),
            type_support: TypeSupport::parse(&s.type_support)?,
            snapshot_mode: s.snapshot_mode,
        })
    }
}

/// The bag's options: chunk compression and when to split into a new file (0 means never).
fn writer_options(s: &Settings) -> Result<WriterOptions> {
    let compression = match s.compression.as_str() {
        "none" | "" => ChunkCompression::None,
        "zstd" => ChunkCompression::Zstd,
        other => {
            return Err(Error::InvalidChoice {
                parameter: "compression",
                value: other.to_owned(),
                expected: "`none` or `zstd`",
            })
        }
    };
    Ok(WriterOptions {
        compression,
        max_bag_size_bytes: (s.max_bag_size_bytes > 0).then_some(s.max_bag_size_bytes as u64),
        max_bag_duration_ns: (s.max_bag_duration_secs > 0.0)
            .then_some((s.max_bag_duration_secs * 1e9) as u64),
        ..WriterOptions::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_the_writer_options_and_periods() {
        let s = Settings {
            compression: "zstd".into(),
            max_bag_size_bytes: 1000,
            max_bag_duration_secs: 1.5,
            discovery_period_secs: 0.001,
            ..Settings::default()
        };
        let c = RecorderConfig::new(&s, 42).unwrap();
        assert_eq!(c.output, "lockstep_bag_42");
        assert_eq!(c.writer.compression, ChunkCompression::Zstd);
        assert_eq!(c.writer.max_bag_size_bytes, Some(1000));
        assert_eq!(c.writer.max_bag_duration_ns, Some(1_500_000_000));
        assert_eq!(c.discovery_period, Duration::from_millis(10));
        assert_eq!(c.max_queue_bytes, 100 * 1024 * 1024);
        assert_eq!(c.type_support, TypeSupport::Generic);
        let never = RecorderConfig::new(&Settings::default(), 0).unwrap();
        assert_eq!(never.writer.max_bag_size_bytes, None);
        assert_eq!(never.writer.max_bag_duration_ns, None);
    }

    #[test]
    fn unknown_choices_are_refused_naming_the_parameter() {
        let bad = Settings {
            compression: "lz4".into(),
            ..Settings::default()
        };
        let e = RecorderConfig::new(&bad, 0).unwrap_err().to_string();
        assert_eq!(e, "parameter `compression`: `lz4` is not `none` or `zstd`");
        let bad = Settings {
            type_support: "static".into(),
            ..Settings::default()
        };
        let e = RecorderConfig::new(&bad, 0).unwrap_err().to_string();
        assert!(e.starts_with("parameter `type_support`"), "{e}");
    }
}
