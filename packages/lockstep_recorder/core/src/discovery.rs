//! Which topics of the ROS graph to record, and when ([`Discoverer`]): the node lists the graph every
//! `discovery_period_secs` and asks about publishers; this decides. A topic is recorded once the selection
//! takes it, it has a publisher (whose QoS to match) and the publishers' type hash is known, or
//! [`TYPE_HASH_WAIT`] has passed without one (then the hash is stored empty, as rosbag2 does when the
//! middleware reports none). Each topic is decided once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use lockstep_bag::{MessageDefinitions, QosProfile, TopicSpec};

use crate::selection::TopicSelection;

/// How long a new topic waits for the recorder's graph node to see its publishers' type hash (it may see a
/// publisher a while after the main node: over 500 ms on a loaded CI machine, where a topic was then stored
/// without its hash).
pub const TYPE_HASH_WAIT: Duration = Duration::from_secs(5);

/// Seconds between two looks at who publishes and subscribes each recorded topic.
pub const GRAPH_PERIOD: Duration = Duration::from_secs(1);

/// What to do with a candidate topic now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Look again next round (no publisher yet, or its type hash not seen yet).
    Later,
    /// Record it, with this type hash (empty when `hash_missing`: log it).
    Record { type_hash: String, hash_missing: bool },
}

/// What to do with a candidate topic now, all checks done.
#[derive(Debug)]
pub enum Plan {
    /// Look again next round.
    Later,
    /// Not recordable (its type is installed nowhere): log it once and list it in the status.
    Skip { reason: String },
    /// Add it to the bag, then subscribe.
    Record(Box<TopicSpec>),
}

/// The discovery decisions, round after round.
pub struct Discoverer {
    selection: TopicSelection,
    /// The recorder's own `~/status`, never recorded.
    own_status_topic: String,
    /// Topics decided (recorded, or skipped for good).
    known: BTreeSet<String>,
    /// Topics waiting for their type hash, since when.
    hash_wait: BTreeMap<String, Instant>,
    last_graph: Instant,
    definitions: MessageDefinitions,
}

impl Discoverer {
    /// `own_name`: the recorder node's fully qualified name. `definitions` finds the message definitions
    /// stored with each topic.
    pub fn new(
        selection: TopicSelection,
        own_name: &str,
        definitions: MessageDefinitions,
        now: Instant,
    ) -> Self {
        Self {
            selection,
            own_status_topic: format!("{own_name}/status"),
            known: BTreeSet::new(),
            hash_wait: BTreeMap::new(),
            last_graph: now,
            definitions,
        }
    }

    /// The topics of `graph` (topic -> types) still to decide, as (topic, type), sorted by topic so topics
    /// discovered in the same round are added in a stable order.
    pub fn candidates(
        &self,
        graph: impl IntoIterator<Item = (String, Vec<String>)>,
    ) -> Vec<(String, String)> {
        let mut list: Vec<(String, String)> = (graph.into_iter())
            .filter(|(topic, _)| !self.known.contains(topic) && *topic != self.own_status_topic)
            .filter_map(|(topic, types)| Some((topic, types.into_iter().next()?)))
            .filter(|(topic, type_name)| self.selection.matches_typed(topic, type_name))
            .collect();
        list.sort();
        list
    }

    /// Decide a candidate given whether it `has_publishers` and their `type_hash`, if reported.
    pub fn decide(
        &mut self,
        topic: &str,
        has_publishers: bool,
        type_hash: Option<String>,
        now: Instant,
    ) -> Decision {
        if !has_publishers {
            return Decision::Later; // only subscribers so far: the QoS to match is not known yet
        }
        let (type_hash, hash_missing) = match type_hash {
            Some(hash) => (hash, false),
            None => {
                let since = *self.hash_wait.entry(topic.to_owned()).or_insert(now);
                if now.duration_since(since) < TYPE_HASH_WAIT {
                    return Decision::Later;
                }
                (String::new(), true)
            }
        };
        self.hash_wait.remove(topic);
        self.known.insert(topic.to_owned());
        Decision::Record {
            type_hash,
            hash_missing,
        }
    }

    /// [`decide`](Self::decide), then check the type is `installed` (for the type support that needs it)
    /// and make the topic's [`spec`](Self::spec); `warn` takes what to log on the way.
    #[allow(clippy::too_many_arguments)]
    pub fn plan(
        &mut self,
        topic: &str,
        type_name: &str,
        offered: Vec<QosProfile>,
        type_hash: Option<String>,
        now: Instant,
        installed: impl FnOnce() -> Result<(), String>,
        warn: &dyn Fn(&str),
    ) -> Plan {
        let decision = self.decide(topic, !offered.is_empty(), type_hash, now);
        let Decision::Record {
            type_hash,
            hash_missing,
        } = decision
        else {
            return Plan::Later;
        };
        if hash_missing {
            warn(&format!(
                "{topic}: its publishers report no type hash: stored empty"
            ));
        }
        // Known before the bag learns the topic: a type installed nowhere adds nothing to the bag.
        if let Err(reason) = installed() {
            return Plan::Skip { reason };
        }
        let (spec, missing) = self.spec(topic, type_name, offered, type_hash);
        if let Some(e) = missing {
            warn(&format!("{topic}: no message definition stored: {e}"));
        }
        Plan::Record(Box::new(spec))
    }

    /// The bag's description of a topic to record: its publishers' `offered` QoS, type hash and message
    /// definition; with why no definition was found, if so (to log; the topic records anyway).
    pub fn spec(
        &mut self,
        topic: &str,
        type_name: &str,
        offered: Vec<QosProfile>,
        type_hash: String,
    ) -> (TopicSpec, Option<String>) {
        let (definition, missing) = self.definitions.resolve_or_empty(type_name);
        let spec = TopicSpec::new(topic.to_owned(), type_name.to_owned())
            .with_qos(offered)
            .with_type_hash(type_hash)
            .with_definition(definition);
        (spec, missing.map(|e| e.to_string()))
    }

    /// Whether to note the graph of the recorded topics now: every [`GRAPH_PERIOD`], and at once when
    /// topics were `added` (a short recording may end before the next period).
    pub fn graph_due(&mut self, added: bool, now: Instant) -> bool {
        let due = added || now.duration_since(self.last_graph) >= GRAPH_PERIOD;
        if due {
            self.last_graph = now;
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn discoverer(now: Instant) -> Discoverer {
        let selection = TopicSelection::new(true, &[], "", "^/rosout$").unwrap();
        Discoverer::new(selection, "/rec", MessageDefinitions::from_prefix_path(""), now)
    }

    fn graph(list: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        (list.iter())
            .map(|(t, types)| (t.to_string(), types.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn candidates_are_selected_sorted_typed_and_never_the_recorders_status() {
        let d = discoverer(Instant::now());
        let g = graph(&[
            ("/z", &["std_msgs/msg/String"]),
            ("/rosout", &["rcl_interfaces/msg/Log"]),
            ("/rec/status", &["lockstep_interfaces/msg/RecorderStatus"]),
            ("/untyped", &[]),
            ("/a", &["std_msgs/msg/Int32", "other/msg/Int32"]),
        ]);
        let listed = d.candidates(g);
        let expected = [("/a", "std_msgs/msg/Int32"), ("/z", "std_msgs/msg/String")];
        assert_eq!(listed.len(), 2);
        for ((t, ty), (et, ety)) in listed.iter().zip(expected) {
            assert_eq!((t.as_str(), ty.as_str()), (et, ety));
        }
    }

    #[test]
    fn a_topic_waits_for_publishers_and_their_hash_then_is_decided_once() {
        let t0 = Instant::now();
        let mut d = discoverer(t0);
        assert_eq!(
            d.decide("/a", false, Some("RIHS01_x".into()), t0),
            Decision::Later
        );
        assert_eq!(d.decide("/a", true, None, t0), Decision::Later);
        let almost = t0 + TYPE_HASH_WAIT - Duration::from_millis(1);
        assert_eq!(d.decide("/a", true, None, almost), Decision::Later);
        let hashed = Decision::Record {
            type_hash: "RIHS01_x".into(),
            hash_missing: false,
        };
        assert_eq!(d.decide("/a", true, Some("RIHS01_x".into()), almost), hashed);
        assert!(
            d.candidates(graph(&[("/a", &["t/msg/T"])])).is_empty(),
            "decided once"
        );
        // Without a hash for TYPE_HASH_WAIT, the topic records with the hash left empty.
        assert_eq!(d.decide("/b", true, None, t0), Decision::Later);
        let empty = Decision::Record {
            type_hash: String::new(),
            hash_missing: true,
        };
        assert_eq!(d.decide("/b", true, None, t0 + TYPE_HASH_WAIT), empty);
    }

    #[test]
    fn the_graph_is_noted_every_period_and_when_topics_were_added() {
        let t0 = Instant::now();
        let mut d = discoverer(t0);
        assert!(!d.graph_due(false, t0 + Duration::from_millis(10)));
        assert!(d.graph_due(true, t0 + Duration::from_millis(20)));
        assert!(!d.graph_due(false, t0 + GRAPH_PERIOD));
        assert!(d.graph_due(false, t0 + Duration::from_millis(20) + GRAPH_PERIOD));
    }

    #[test]
    fn a_plan_warns_of_a_missing_hash_and_skips_a_type_installed_nowhere() {
        let t0 = Instant::now();
        let mut d = discoverer(t0);
        let warnings = std::cell::RefCell::new(Vec::new());
        let warn = |line: &str| warnings.borrow_mut().push(line.to_owned());
        let offered = || vec![QosProfile::default()];
        let installed = || Ok(());
        let plan = d.plan("/a", "t/msg/T", vec![], None, t0, installed, &warn);
        assert!(matches!(plan, Plan::Later), "no publisher yet");
        let plan = d.plan("/a", "t/msg/T", offered(), None, t0, installed, &warn);
        assert!(matches!(plan, Plan::Later), "waiting for the hash");
        let later = t0 + TYPE_HASH_WAIT;
        let plan = d.plan(
            "/a",
            "t/msg/T",
            offered(),
            None,
            later,
            || Err("nowhere".into()),
            &warn,
        );
        assert!(matches!(plan, Plan::Skip { reason } if reason == "nowhere"));
        assert_eq!(
            warnings.borrow()[0],
            "/a: its publishers report no type hash: stored empty"
        );
        let plan = d.plan("/b", "t/msg/T", offered(), Some("h".into()), t0, installed, &warn);
        let Plan::Record(spec) = plan else {
            panic!("{plan:?}")
        };
        assert_eq!(spec.name, "/b");
        assert_eq!(warnings.borrow().len(), 2, "the definition of t/msg/T is nowhere");
    }

    #[test]
    fn the_spec_carries_the_offered_qos_and_hash_and_says_when_no_definition_was_found() {
        let mut d = discoverer(Instant::now());
        let (spec, missing) = d.spec(
            "/a",
            "nowhere_msgs/msg/X",
            vec![QosProfile::default()],
            "h".into(),
        );
        assert_eq!(
            (spec.name.as_str(), spec.type_name.as_str()),
            ("/a", "nowhere_msgs/msg/X")
        );
        assert!(missing.is_some());
    }
}
