//! Finding topics to record and taking their messages.
//!
//! Every `discovery_period_secs` the node looks at the graph; each new topic the selection matches is
//! subscribed with QoS adapted to its publishers, through one of two type supports (parameter
//! `type_support`):
//! - `generic` (default): the type's support library is loaded at run time from `AMENT_PREFIX_PATH`
//!   ([`lockstep_ros::generic`]), so every installed type records, compiled into this binary or not. Messages
//!   are handled on the generic node's take thread, so the queue bound holds end to end: a message refused
//!   is never queued anywhere.
//! - `compiled`: r2r's bindings built into the binary (only the packages of `IDL_PACKAGE_FILTER`), taken on
//!   the node's executor; kept to compare the two paths (`scripts/bench/recorder_e2e.sh`).
//!
//! A topic that cannot be subscribed (its type installed nowhere) is logged once and listed in the
//! status's `skipped`, with the package and the paths searched; everything else records.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use lockstep_bag::{MessageDefinitions, TopicSpec};
use lockstep_recorder::{adapt_qos, DropReason, Throttle, TopicSelection, HEADER_TYPE};
use lockstep_ros::generic::GenericNode;
use lockstep_ros::{lock, qos, SharedNode};
use r2r::lockstep_interfaces::msg::{DependencyHeader, ModuleTopology};
use r2r::WrappedTypesupport;

use crate::shared::Shared;
use crate::writer::Command;

/// Which type support subscriptions use (parameter `type_support`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeSupport {
    Generic,
    Compiled,
}

impl TypeSupport {
    pub fn parse(value: &str) -> anyhow::Result<Self> {
        match value {
            "generic" | "" => Ok(Self::Generic),
            "compiled" => Ok(Self::Compiled),
            other => anyhow::bail!("parameter `type_support`: `{other}` is not `generic` or `compiled`"),
        }
    }
}

/// What discovery needs besides the node.
pub struct Discovery {
    pub selection: TopicSelection,
    pub commands: Sender<Command>,
    pub shared: Arc<Shared>,
    pub period: Duration,
    /// Fully qualified name of the recorder node.
    pub own_name: String,
    pub type_support: TypeSupport,
    /// The recorder's generic node: subscriptions (`generic`) and graph queries.
    pub generic: GenericNode,
}

/// Seconds between two looks at who publishes and subscribes each recorded topic.
const GRAPH_PERIOD: Duration = Duration::from_secs(1);

/// How long a new topic waits for the recorder's graph node to see its publishers' type hash (it may see a
/// publisher a while after the main node: over 500 ms on a loaded CI machine, where a topic was then stored
/// without its hash); after that it is recorded with the hash left empty, as rosbag2 does when the middleware
/// reports none.
const TYPE_HASH_WAIT: Duration = Duration::from_secs(5);

/// Look at the graph every `period`; subscribe to each new matching topic with QoS adapted to its publishers.
/// Every [`GRAPH_PERIOD`], and when topics were added, note who publishes and subscribes each recorded topic (the bag's `lockstep_graph`).
pub async fn discover(node: SharedNode, d: Discovery) {
    let logger = lockstep_ros::logger_name(&node).unwrap_or_default();
    let own_status_topic = format!("{}/status", d.own_name);
    let ament_prefix_path = std::env::var("AMENT_PREFIX_PATH").unwrap_or_default();
    let mut definitions = MessageDefinitions::from_prefix_path(&ament_prefix_path);
    d.shared.attach_graph_probe(
        d.generic.graph_probe(),
        vec![d.own_name.clone(), d.generic.node_name()],
    );
    let mut known: BTreeSet<String> = BTreeSet::new();
    let probe = d.generic.graph_probe();
    // Topics waiting for their type hash, since when.
    let mut hash_wait: BTreeMap<String, tokio::time::Instant> = BTreeMap::new();
    let mut interval = tokio::time::interval(d.period);
    let mut last_graph = tokio::time::Instant::now();
    loop {
        interval.tick().await;
        let Ok(n) = lock(&node) else { return };
        let Ok(graph) = n.get_topic_names_and_types() else {
            continue;
        };
        drop(n);
        // Sorted, so topics discovered in the same round are added in a stable order.
        let graph: BTreeMap<_, _> = graph.into_iter().collect();
        let mut added = false;
        for (topic, types) in graph {
            if known.contains(&topic) || topic == own_status_topic || !d.selection.matches(&topic) {
                continue;
            }
            let Some(type_name) = types.first().cloned() else {
                continue;
            };
            let Ok(n) = lock(&node) else { return };
            let publishers = n.get_publishers_info_by_topic(&topic, false).unwrap_or_default();
            drop(n);
            if publishers.is_empty() {
                continue; // only subscribers so far: the QoS to match is not known yet
            }
            // The type description hash rosbag2 Jazzy stores per topic (`RIHS01_...`): tools that copy the
            // bag's topics (the Python `rosbags` writer) refuse a topic without one.
            let type_hash = match probe.publisher_type_hash(&topic) {
                Ok(Some(hash)) => hash,
                _ => {
                    let since = *hash_wait
                        .entry(topic.clone())
                        .or_insert_with(tokio::time::Instant::now);
                    if since.elapsed() < TYPE_HASH_WAIT {
                        continue;
                    }
                    r2r::log_warn!(
                        &logger,
                        "{topic}: its publishers report no type hash: stored empty"
                    );
                    String::new()
                }
            };
            hash_wait.remove(&topic);
            known.insert(topic.clone());
            let offered: Vec<lockstep_bag::QosProfile> =
                publishers.iter().map(|p| qos::to_bag(&p.qos_profile)).collect();
            if d.type_support == TypeSupport::Generic {
                // Known before the bag learns the topic: a type installed nowhere adds nothing to the bag.
                let found = lockstep_ros::typesupport::message_type_support(&type_name, &ament_prefix_path);
                if let Err(e) = found {
                    skip(&d, &logger, &topic, &type_name, &e.to_string());
                    continue;
                }
            }
            let (definition, missing) = definitions.resolve_or_empty(&type_name);
            if let Some(e) = missing {
                r2r::log_warn!(&logger, "{topic}: no message definition stored: {e}");
            }
            let spec = TopicSpec::new(topic.clone(), type_name.clone())
                .with_qos(offered.clone())
                .with_type_hash(type_hash)
                .with_definition(definition);
            // The bag thread learns the topic before the first message: the channel keeps order.
            if d.commands.send(Command::AddTopic(Box::new(spec))).is_err() {
                return;
            }
            let recorder = TopicRecorder::new(&topic, &type_name, &d, &logger);
            if let Err(e) = subscribe(&node, &d, &topic, &type_name, &offered, recorder) {
                skip(&d, &logger, &topic, &type_name, &e);
                continue;
            }
            r2r::log_info!(&logger, "recording {topic} ({type_name})");
            added = true;
        }
        // A new topic's endpoints are noted at once (a short recording may end before the next period).
        if added || last_graph.elapsed() >= GRAPH_PERIOD {
            last_graph = tokio::time::Instant::now();
            d.shared.refresh_graph();
        }
    }
}

/// Log once and list in the status a topic that cannot be recorded.
fn skip(d: &Discovery, logger: &str, topic: &str, type_name: &str, reason: &str) {
    r2r::log_warn!(logger, "not recording {topic} ({type_name}): {reason}");
    d.shared.note_skipped(topic, type_name, reason);
}

/// Subscribe to `topic` with the type support chosen; messages go to `recorder`. `Err` is the reason for the
/// log and the status.
fn subscribe(
    node: &SharedNode,
    d: &Discovery,
    topic: &str,
    type_name: &str,
    offered: &[lockstep_bag::QosProfile],
    mut recorder: TopicRecorder,
) -> Result<(), String> {
    let wanted = adapt_qos(offered);
    let mut profile = qos::keep_all_reliable();
    if !wanted.reliable {
        profile = profile.best_effort();
    }
    if wanted.transient_local {
        profile = profile.transient_local();
    }
    match d.type_support {
        TypeSupport::Generic => d
            .generic
            .subscribe_with(topic, type_name, profile, move |data| {
                recorder.on_message(data);
            })
            .map(drop)
            .map_err(|e| e.to_string()),
        TypeSupport::Compiled => {
            let mut stream = lock(node)
                .map_err(|e| e.to_string())?
                .subscribe_raw(topic, type_name, profile)
                .map_err(|e| e.to_string())?;
            tokio::spawn(async move {
                while let Some(data) = stream.next().await {
                    if !recorder.on_message(data) {
                        return;
                    }
                }
            });
            Ok(())
        }
    }
}

/// Seconds between two log lines about drops on one topic.
const DROP_LOG_PERIOD: Duration = Duration::from_secs(2);

/// What each message of one topic goes through: counted, dropped when paused, stopped or over the queue
/// bound, fed to the topology when it is a dependency header or a declared topology, and sent to the bag.
struct TopicRecorder {
    topic: Arc<str>,
    is_header: bool,
    is_topology: bool,
    commands: Sender<Command>,
    shared: Arc<Shared>,
    received: Arc<AtomicU64>,
    drop_log: Throttle,
    logger: String,
}

impl TopicRecorder {
    fn new(topic: &str, type_name: &str, d: &Discovery, logger: &str) -> Self {
        Self {
            topic: topic.into(),
            is_header: type_name == HEADER_TYPE,
            is_topology: type_name == "lockstep_interfaces/msg/ModuleTopology",
            commands: d.commands.clone(),
            received: d.shared.received_counter(topic),
            shared: d.shared.clone(),
            drop_log: Throttle::new(DROP_LOG_PERIOD),
            logger: logger.to_owned(),
        }
    }

    /// Handle one message; `false` once the bag thread is gone.
    fn on_message(&mut self, data: Vec<u8>) -> bool {
        let shared = &self.shared;
        shared.received.fetch_add(1, Ordering::SeqCst);
        self.received.fetch_add(1, Ordering::Relaxed);
        let received_ns = lockstep_trace::now_ns() as u64;
        if shared.paused.load(Ordering::Relaxed) {
            return true;
        }
        if shared.stopped.load(Ordering::Relaxed) {
            shared.note_dropped(&self.topic, DropReason::AfterError);
            return true;
        }
        // Headers and declared topologies are recorded as they are and also feed the topology.
        if self.is_header {
            if let Ok(header) = DependencyHeader::from_serialized_bytes(&data) {
                let _ = self.commands.send(Command::Header(Box::new(header)));
            }
        } else if self.is_topology {
            if let Ok(topology) = ModuleTopology::from_serialized_bytes(&data) {
                let _ = self.commands.send(Command::Declared(topology));
            }
        }
        if !shared.budget.try_reserve(data.len() as u64) {
            let dropped = shared.note_dropped(&self.topic, DropReason::QueueFull);
            if self.drop_log.ready(std::time::Instant::now()) {
                r2r::log_warn!(
                    &self.logger,
                    "{}: write queue full ({} of max_queue_bytes {} bytes waiting): {dropped} messages \
                     dropped so far",
                    self.topic,
                    shared.budget.used(),
                    shared.budget.max()
                );
            }
            return true;
        }
        let write = Command::Write {
            topic: self.topic.clone(),
            received_ns,
            data,
        };
        self.commands.send(write).is_ok()
    }
}
