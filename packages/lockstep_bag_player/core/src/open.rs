//! Opening the bag for a play: its reader and time range, the selected topics, their remaps and QoS
//! overrides, the window to play, and what each played topic is published as. A bad bag or option is an
//! error naming it, before anything is published.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lockstep_bag::{BagReader, QosProfile};

use crate::{parse_qos_overrides, parse_remaps, playback_qos, PlayConfig, TopicSelection, Window};

/// The largest QoS overrides file read.
const MAX_QOS_OVERRIDES_BYTES: u64 = 1 << 20;

/// Why the bag of a play cannot be opened (a file named each time).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("opening bag {}", path.display())]
    Bag {
        path: PathBuf,
        #[source]
        source: lockstep_bag::Error,
    },
    #[error("bag {} has no messages{damage}", path.display())]
    Empty { path: PathBuf, damage: String },
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Option(#[from] crate::Error),
}

/// The bag opened for a play.
pub struct OpenBag {
    pub reader: BagReader,
    pub bag_start_ns: u64,
    pub bag_end_ns: u64,
    pub selected: Vec<String>,
    pub remaps: BTreeMap<String, String>,
    pub overrides: BTreeMap<String, QosProfile>,
    pub window: Window,
}

/// How one selected topic is published.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicPlan {
    /// Its name in the bag, and the name it is published under (remapped).
    pub bag_name: String,
    pub out_name: String,
    pub type_name: String,
    pub qos: QosProfile,
    /// Set when the recorded publishers' QoS disagreed (log it once).
    pub note: Option<String>,
    pub message_count: u64,
}

impl OpenBag {
    /// Open the bag of `config` and check its options against it.
    pub fn open(config: &PlayConfig) -> Result<Self, OpenError> {
        let path = &config.bag;
        let reader = BagReader::open(path).map_err(|source| OpenError::Bag {
            path: path.clone(),
            source,
        })?;
        let (bag_start_ns, bag_end_ns) = reader.time_range().ok_or_else(|| OpenError::Empty {
            path: path.clone(),
            damage: reader.damage_note(),
        })?;
        let selection = TopicSelection::new(&config.topics, &config.regex, &config.exclude_regex)?;
        let selected = selection.select(reader.topics().iter().map(|t| t.metadata.name.as_str()))?;
        let remaps = parse_remaps(&config.remaps)?;
        let overrides = match &config.qos_overrides_path {
            Some(path) => {
                let text = lockstep_ranges::file::read_text(path, MAX_QOS_OVERRIDES_BYTES).map_err(|e| {
                    OpenError::Read {
                        path: path.clone(),
                        source: std::io::Error::other(e),
                    }
                })?;
                parse_qos_overrides(&text, path)?
            }
            None => BTreeMap::new(),
        };
        let window = Window::new(
            bag_start_ns,
            bag_end_ns,
            config.start_offset_secs,
            config.playback_duration_secs,
            config.playback_until_ns,
        )?;
        Ok(Self {
            reader,
            bag_start_ns,
            bag_end_ns,
            selected,
            remaps,
            overrides,
            window,
        })
    }

    /// Each selected topic in the bag's order: the name it is published under and the recorded or
    /// overridden QoS.
    pub fn topic_plans(&self) -> Vec<TopicPlan> {
        self.reader
            .topics()
            .iter()
            .filter(|t| self.selected.contains(&t.metadata.name))
            .map(|topic| {
                let bag_name = &topic.metadata.name;
                let chosen = playback_qos(
                    bag_name,
                    &topic.metadata.offered_qos_profiles,
                    self.overrides.get(bag_name),
                );
                TopicPlan {
                    bag_name: bag_name.clone(),
                    out_name: self
                        .remaps
                        .get(bag_name)
                        .cloned()
                        .unwrap_or_else(|| bag_name.clone()),
                    type_name: topic.metadata.type_name.clone(),
                    qos: chosen.profile,
                    note: chosen.note,
                    message_count: topic.message_count,
                }
            })
            .collect()
    }

    /// The warnings for QoS overrides of topics that do not play (`played`: the bag names that do).
    pub fn unused_overrides(&self, played: impl Fn(&str) -> bool) -> Vec<String> {
        self.overrides
            .keys()
            .filter(|t| !played(t))
            .map(|t| format!("QoS override for {t}: not a played topic of this bag"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PlayOptions;
    use lockstep_bag::{BagWriter, TopicSpec, WriterOptions};

    /// A bag with `/a` and `/b` (one message each) and a config playing it with `remap`.
    fn config(dir: &std::path::Path, remap: &str) -> PlayConfig {
        let path = dir.join("bag");
        let mut writer = BagWriter::create(&path, WriterOptions::default()).unwrap();
        for (topic, t) in [("/a", 1), ("/b", 2)] {
            writer
                .add_topic(TopicSpec::new(topic, "std_msgs/msg/String"))
                .unwrap();
            writer.write(topic, t, &[0, 1, 0, 0, 1, 0, 0, 0, 0]).unwrap();
        }
        writer.finish().unwrap();
        let options = PlayOptions {
            bag: path.display().to_string(),
            rate: 1.0,
            start_paused: false,
            start_offset: 0.0,
            playback_duration: -1.0,
            playback_until_timestamp: 0.0,
            topics: String::new(),
            regex: String::new(),
            exclude_regex: String::new(),
            remap: remap.into(),
            clock: 0.0,
            delay: 0.0,
            read_ahead_queue_size: 1,
            qos_profile_overrides_path: String::new(),
            wait_for_all_acked: 0,
            wait_for_subscribers: 0,
            exit_at_end: true,
        };
        options.config(false).unwrap()
    }

    #[test]
    fn each_topic_plays_under_its_remapped_name_over_the_bag_span() {
        let dir = tempfile::tempdir().unwrap();
        let bag = OpenBag::open(&config(dir.path(), "/a:=/x")).unwrap();
        assert_eq!((bag.bag_start_ns, bag.bag_end_ns), (1, 2));
        let names: Vec<_> = bag
            .topic_plans()
            .into_iter()
            .map(|t| (t.bag_name, t.out_name, t.message_count))
            .collect();
        assert_eq!(
            names,
            [("/a".into(), "/x".into(), 1), ("/b".into(), "/b".into(), 1)]
        );
    }

    #[test]
    fn a_missing_bag_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), "");
        config.bag = dir.path().join("nothing");
        let e = OpenBag::open(&config).err().unwrap().to_string();
        assert!(e.starts_with("opening bag ") && e.ends_with("nothing"), "{e}");
    }
}
