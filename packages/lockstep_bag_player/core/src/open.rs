//! Opening the bags of a play: their readers and time range, the selected topics, their remaps and QoS
//! overrides, the window to play, and what each played topic is published as. A bad bag or option is an
//! error naming it, before anything is published. Several bags play as one: their topics are the union (a
//! topic of one name must have one type in every bag), their span from the earliest to the latest message.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lockstep_bag::{BagReader, BagTopic, QosProfile};

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
    #[error(
        "topic {topic} is {first_type} in {} but {other_type} in {}: a topic must have one type in every bag",
        first_bag.display(),
        other_bag.display()
    )]
    TypeMismatch {
        topic: String,
        first_type: String,
        first_bag: PathBuf,
        other_type: String,
        other_bag: PathBuf,
    },
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Option(#[from] crate::Error),
}

/// The bags opened for a play.
pub struct OpenBag {
    /// Each bag and its reader, in the order given.
    pub readers: Vec<(PathBuf, BagReader)>,
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
    /// In all the bags.
    pub message_count: u64,
}

impl OpenBag {
    /// Open the bags of `config` and check its options against them.
    pub fn open(config: &PlayConfig) -> Result<Self, OpenError> {
        let mut readers = Vec::new();
        for path in &config.bags {
            let reader = BagReader::open(path).map_err(|source| OpenError::Bag {
                path: path.clone(),
                source,
            })?;
            readers.push((path.clone(), reader));
        }
        let (bag_start_ns, bag_end_ns) = time_range(&readers)?;
        check_types(&readers)?;
        let selection = TopicSelection::new(&config.topics, &config.regex, &config.exclude_regex)?;
        let names = readers
            .iter()
            .flat_map(|(_, r)| r.topics().iter().map(|t| t.metadata.name.as_str()));
        let selected = selection.select(names)?;
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
            readers,
            bag_start_ns,
            bag_end_ns,
            selected,
            remaps,
            overrides,
            window,
        })
    }

    /// Each selected topic in the bags' order (the first bag's topics, then those only later bags have):
    /// the name it is published under and the QoS recorded in any bag, or overridden.
    pub fn topic_plans(&self) -> Vec<TopicPlan> {
        let mut order: Vec<&str> = Vec::new();
        let mut seen: BTreeMap<&str, Vec<&BagTopic>> = BTreeMap::new();
        for topic in self.readers.iter().flat_map(|(_, r)| r.topics()) {
            let name = topic.metadata.name.as_str();
            if !self.selected.iter().any(|s| s == name) {
                continue;
            }
            let entry = seen.entry(name).or_default();
            if entry.is_empty() {
                order.push(name);
            }
            entry.push(topic);
        }
        order
            .into_iter()
            .filter_map(|name| seen.get(name).map(|in_bags| self.plan(in_bags)))
            .collect()
    }

    /// How a topic found in one or more bags (`in_bags`, not empty) is published.
    fn plan(&self, in_bags: &[&BagTopic]) -> TopicPlan {
        let first = &in_bags[0].metadata;
        let bag_name = &first.name;
        let offered: Vec<QosProfile> = (in_bags.iter())
            .flat_map(|t| t.metadata.offered_qos_profiles.iter().cloned())
            .collect();
        let chosen = playback_qos(bag_name, &offered, self.overrides.get(bag_name));
        TopicPlan {
            bag_name: bag_name.clone(),
            out_name: self
                .remaps
                .get(bag_name)
                .cloned()
                .unwrap_or_else(|| bag_name.clone()),
            type_name: first.type_name.clone(),
            qos: chosen.profile,
            note: chosen.note,
            message_count: in_bags.iter().map(|t| t.message_count).sum(),
        }
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

/// From the earliest to the latest message of the bags; a bag without messages is skipped, all of them
/// empty is an error naming the first.
fn time_range(readers: &[(PathBuf, BagReader)]) -> Result<(u64, u64), OpenError> {
    let range = (readers.iter())
        .filter_map(|(_, r)| r.time_range())
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
    match (range, readers.first()) {
        (Some(range), _) => Ok(range),
        (None, Some((path, reader))) => Err(OpenError::Empty {
            path: path.clone(),
            damage: reader.damage_note(),
        }),
        (None, None) => Err(OpenError::Option(crate::error::option("bag", "no bag given"))),
    }
}

/// A topic of one name has one type in every bag.
fn check_types(readers: &[(PathBuf, BagReader)]) -> Result<(), OpenError> {
    let mut first: BTreeMap<&str, (&str, &PathBuf)> = BTreeMap::new();
    for (path, reader) in readers {
        for topic in reader.topics() {
            let (name, type_name) = (topic.metadata.name.as_str(), topic.metadata.type_name.as_str());
            let (first_type, first_bag) = *first.entry(name).or_insert((type_name, path));
            if first_type != type_name {
                return Err(OpenError::TypeMismatch {
                    topic: name.to_owned(),
                    first_type: first_type.to_owned(),
                    first_bag: first_bag.clone(),
                    other_type: type_name.to_owned(),
                    other_bag: path.clone(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PlayOptions;
    use lockstep_bag::{BagWriter, TopicSpec, WriterOptions};

    /// A bag `name` with one message on each of `topics` (name, type, time).
    fn bag(dir: &std::path::Path, name: &str, topics: &[(&str, &str, u64)]) -> String {
        let path = dir.join(name);
        let mut writer = BagWriter::create(&path, WriterOptions::default()).unwrap();
        for &(topic, type_name, t) in topics {
            writer.add_topic(TopicSpec::new(topic, type_name)).unwrap();
            writer.write(topic, t, &[0, 1, 0, 0, 1, 0, 0, 0, 0]).unwrap();
        }
        writer.finish().unwrap();
        path.display().to_string()
    }

    const STRING: &str = "std_msgs/msg/String";

    /// A bag with `/a` and `/b` (one message each) and a config playing it with `remap`.
    fn config(dir: &std::path::Path, remap: &str) -> PlayConfig {
        options(bag(dir, "bag", &[("/a", STRING, 1), ("/b", STRING, 2)]), remap)
            .config(false)
            .unwrap()
    }

    fn options(bag: String, remap: &str) -> PlayOptions {
        PlayOptions {
            bag,
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
            message_order: String::new(),
            clock_topics: String::new(),
            clock_topics_all: false,
            publish_service_requests: false,
            service_requests_source: "service_introspection".into(),
            send_actions_as_client: false,
        }
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
        config.bags = vec![dir.path().join("nothing")];
        let e = OpenBag::open(&config).err().unwrap().to_string();
        assert!(e.starts_with("opening bag ") && e.ends_with("nothing"), "{e}");
    }

    #[test]
    fn several_bags_play_their_topics_together_over_their_whole_span() {
        let dir = tempfile::tempdir().unwrap();
        let one = bag(dir.path(), "one", &[("/a", STRING, 5), ("/b", STRING, 6)]);
        let two = bag(dir.path(), "two", &[("/c", STRING, 2), ("/a", STRING, 9)]);
        let open = OpenBag::open(&options(format!("{one},{two}"), "").config(false).unwrap()).unwrap();
        assert_eq!((open.bag_start_ns, open.bag_end_ns), (2, 9));
        let plans: Vec<_> = (open.topic_plans().into_iter())
            .map(|t| (t.bag_name, t.message_count))
            .collect();
        assert_eq!(plans, [("/a".into(), 2), ("/b".into(), 1), ("/c".into(), 1)]);
    }

    #[test]
    fn a_topic_of_two_types_is_refused_naming_both_bags() {
        let dir = tempfile::tempdir().unwrap();
        let one = bag(dir.path(), "one", &[("/a", STRING, 5)]);
        let two = bag(dir.path(), "two", &[("/a", "std_msgs/msg/Int32", 9)]);
        let config = options(format!("{one},{two}"), "").config(false).unwrap();
        let e = OpenBag::open(&config).err().unwrap().to_string();
        assert_eq!(
            e,
            format!("topic /a is {STRING} in {one} but std_msgs/msg/Int32 in {two}: a topic must have one type in every bag")
        );
    }
}
