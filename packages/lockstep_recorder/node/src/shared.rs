//! State shared by the node's tasks, the take thread and the bag thread: pause/stop flags, the queue budget,
//! counters, the statistics, the module topology and the ROS graph of recorded topics.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lockstep_recorder::{DropReason, QueueBudget, Statistics};
use lockstep_ros::graph::{Endpoint, GraphProbe};
use lockstep_trace::{now_ns, Topology, TopologyBuilder};
use lockstep_trace_ros::{component_from_msg, header_from_msg, topology_to_msg};
use r2r::lockstep_interfaces::msg::{
    DependencyHeader, ModuleTopology, RecorderStatus, SkippedTopic, TopicStatistics,
};

use crate::pending_parameters::Pending;

/// The ROS graph of one recorded topic: fully qualified names of the nodes publishing and subscribing it
/// (the recorder itself left out).
#[derive(Default, Clone)]
pub(crate) struct TopicGraph {
    pub(crate) writers: BTreeSet<String>,
    pub(crate) readers: BTreeSet<String>,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) stats: Statistics,
    pub(crate) types: BTreeMap<String, String>,
    pub(crate) topology: TopologyBuilder,
    pub(crate) graph: BTreeMap<String, TopicGraph>,
    /// Topic -> (type, why it is not recorded).
    pub(crate) skipped: BTreeMap<String, (String, String)>,
    pub(crate) file_index: usize,
    pub(crate) error: Option<String>,
}

/// State shared by the node's tasks and the bag thread.
pub struct Shared {
    pub paused: AtomicBool,
    /// Set once recording stopped on a write failure.
    pub stopped: AtomicBool,
    /// Bytes waiting for the bag thread, bounded by parameter `max_queue_bytes`.
    pub budget: QueueBudget,
    /// Messages taken from DDS (recorded or not); the node's drain on shutdown waits for it to stand still.
    pub received: Arc<AtomicU64>,
    /// The same per topic (each topic's task counts into its own counter, without a lock).
    received_by_topic: Mutex<BTreeMap<String, Arc<AtomicU64>>>,
    bag_path: String,
    pub(crate) logger: String,
    state: Mutex<State>,
    /// Asks the ROS graph who publishes and subscribes (with the recorder's own node names, to leave out).
    graph_probe: Mutex<Option<(GraphProbe, Vec<String>)>>,
    /// The modules' parameters and their changes, waiting for the bag thread (learnt by `parameters`).
    pub(crate) parameters: Pending,
}

impl Shared {
    pub fn new(
        paused: bool,
        bag_path: String,
        max_queue_bytes: u64,
        logger: String,
        received: Arc<AtomicU64>,
    ) -> Arc<Self> {
        Arc::new(Self {
            paused: AtomicBool::new(paused),
            stopped: AtomicBool::new(false),
            budget: QueueBudget::new(max_queue_bytes),
            received,
            received_by_topic: Mutex::default(),
            bag_path,
            logger,
            state: Mutex::default(),
            graph_probe: Mutex::default(),
            parameters: Pending::default(),
        })
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> Option<R> {
        self.state.lock().ok().map(|mut s| f(&mut s))
    }

    pub fn note_skipped(&self, topic: &str, type_name: &str, reason: &str) {
        self.with(|s| {
            s.skipped
                .insert(topic.to_owned(), (type_name.to_owned(), reason.to_owned()))
        });
    }

    /// From now on, learn the graph of recorded topics with `probe`, leaving out the recorder's own nodes
    /// (fully qualified names).
    pub fn attach_graph_probe(&self, probe: GraphProbe, own_names: Vec<String>) {
        if let Ok(mut slot) = self.graph_probe.lock() {
            *slot = Some((probe, own_names));
        }
    }

    /// Add what the graph shows now for every recorded topic (nodes are only added: a node that left is
    /// still part of what happened during the recording).
    pub fn refresh_graph(&self) {
        let Ok(probe) = self.graph_probe.lock() else {
            return;
        };
        let Some((probe, own_names)) = probe.as_ref() else {
            return;
        };
        let topics: Vec<String> = self
            .with(|s| s.types.keys().cloned().collect())
            .unwrap_or_default();
        let nodes = |endpoints: Result<Vec<Endpoint>, _>| -> Vec<String> {
            endpoints
                .unwrap_or_default()
                .into_iter()
                .map(|e| e.node)
                .filter(|n| !own_names.contains(n))
                .collect()
        };
        for topic in topics {
            let writers = nodes(probe.publishers(&topic));
            let readers = nodes(probe.subscriptions(&topic));
            self.with(|s| {
                let entry = s.graph.entry(topic).or_default();
                entry.writers.extend(writers);
                entry.readers.extend(readers);
            });
        }
    }

    /// The counter of messages taken from DDS on `topic`.
    pub fn received_counter(&self, topic: &str) -> Arc<AtomicU64> {
        self.received_by_topic
            .lock()
            .map(|mut m| m.entry(topic.to_owned()).or_default().clone())
            .unwrap_or_default()
    }

    /// Count a message received and not recorded; returns the topic's running count for `reason`.
    pub fn note_dropped(&self, topic: &str, reason: DropReason) -> u64 {
        self.with(|s| {
            let type_name = s.types.get(topic).cloned().unwrap_or_default();
            s.stats.drop_message(topic, &type_name, reason)
        })
        .unwrap_or(0)
    }

    /// The topology learnt so far, as the interface message (sorted by module).
    pub fn topology_msg(&self) -> ModuleTopology {
        let components = self.with(|s| s.topology.components()).unwrap_or_default();
        topology_to_msg(&Topology { components })
    }

    pub fn status(&self) -> RecorderStatus {
        let stamp = lockstep_ros::time::ns_to_time(now_ns());
        let paused = self.paused.load(Ordering::Relaxed);
        let recording = !self.stopped.load(Ordering::Relaxed);
        let received: BTreeMap<String, u64> = self
            .received_by_topic
            .lock()
            .map(|m| {
                m.iter()
                    .map(|(t, n)| (t.clone(), n.load(Ordering::Relaxed)))
                    .collect()
            })
            .unwrap_or_default();
        self.with(|s| RecorderStatus {
            stamp: stamp.clone(),
            bag_path: self.bag_path.clone(),
            paused,
            recording,
            error: s.error.clone().unwrap_or_default(),
            topology_error: s.topology_check().err().unwrap_or_default(),
            file_index: s.file_index as u32,
            total_messages: s.stats.total_messages(),
            total_bytes: s.stats.total_bytes(),
            queue_bytes: self.budget.used(),
            max_queue_bytes: self.budget.max(),
            topics: s
                .stats
                .topics()
                .map(|(topic, t)| TopicStatistics {
                    topic: topic.to_owned(),
                    type_: t.type_name.clone(),
                    received: received.get(topic).copied().unwrap_or(0),
                    messages: t.messages,
                    bytes: t.bytes,
                    dropped: t.dropped,
                    dropped_queue_full: t.dropped_queue_full,
                    dropped_after_error: t.dropped_after_error,
                })
                .collect(),
            skipped: s
                .skipped
                .iter()
                .map(|(topic, (type_name, reason))| SkippedTopic {
                    topic: topic.clone(),
                    type_: type_name.clone(),
                    reason: reason.clone(),
                })
                .collect(),
        })
        .unwrap_or_default()
    }
}

impl State {
    pub(crate) fn learn_header(&mut self, header: &DependencyHeader) -> Result<(), String> {
        self.stats
            .note_header(&header.channel_name, &header.module_name, header.sequence_num);
        self.topology
            .add_header(&header_from_msg(header))
            .map_err(|e| format!("header of {}#{}: {e}", header.channel_name, header.sequence_num))
    }

    pub(crate) fn learn_declared(&mut self, declared: &ModuleTopology) -> Result<(), String> {
        for c in &declared.components {
            self.topology
                .add_component(&component_from_msg(c))
                .map_err(|e| format!("declared topology of {}: {e}", c.module_name))?;
        }
        Ok(())
    }

    /// Whether the topology learnt so far is a DAG; else the cycle, described.
    pub(crate) fn topology_check(&self) -> Result<(), String> {
        self.topology.build().map(drop).map_err(|e| e.to_string())
    }

    /// The topology as JSON: `{"module": {"reads": [...], "writes": [...]}}`, sorted.
    pub(crate) fn topology_json(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> = self
            .topology
            .components()
            .into_iter()
            .map(|c| {
                let wiring = serde_json::json!({ "reads": c.reader_channels, "writes": c.writer_channels });
                (c.module_name, wiring)
            })
            .collect();
        serde_json::Value::Object(map).to_string()
    }
}
