//! Finding topics to record and taking their messages.
//!
//! Every `discovery_period_secs` the node lists the graph and, for the topics the core's
//! [`Discoverer`] takes, asks who publishes them (their QoS and type hash); each topic it decides to record
//! is subscribed with QoS adapted to its publishers, through one of two type supports (parameter
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

use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use lockstep_bag::MessageDefinitions;
use lockstep_recorder::{
    adapt_qos, Command, Discoverer, Plan, Readiness, Recording, TopicRecorder, TopicSelection, TypeSupport,
};
use lockstep_ros::generic::GenericNode;
use lockstep_ros::{lock, qos, SharedNode};

use crate::messages;

/// What discovery needs besides the node.
pub struct Discovery {
    pub selection: TopicSelection,
    /// When to say `ready: recording <n> topics`.
    pub readiness: Readiness,
    pub commands: Sender<Command>,
    pub recording: Arc<Recording>,
    pub period: Duration,
    /// Fully qualified name of the recorder node.
    pub own_name: String,
    pub type_support: TypeSupport,
    /// The recorder's generic node: subscriptions (`generic`) and graph queries.
    pub generic: GenericNode,
}

/// Look at the graph every `period`; subscribe to each topic the discoverer decides to record. Note who
/// publishes and subscribes each recorded topic when the discoverer says so (the bag's `lockstep_graph`).
pub async fn discover(node: SharedNode, d: Discovery) {
    let logger = lockstep_ros::logger_name(&node).unwrap_or_default();
    let ament_prefix_path = std::env::var("AMENT_PREFIX_PATH").unwrap_or_default();
    let own = vec![d.own_name.clone(), d.generic.node_name()];
    d.recording.attach_graph(messages::graph_query(&d.generic, own));
    let definitions = MessageDefinitions::from_prefix_path(&ament_prefix_path);
    let mut discoverer = Discoverer::new(d.selection.clone(), &d.own_name, definitions, Instant::now());
    let probe = d.generic.graph_probe();
    let mut interval = tokio::time::interval(d.period);
    let mut readiness = d.readiness.clone();
    loop {
        interval.tick().await;
        let Ok(n) = lock(&node) else { return };
        let Ok(graph) = n.get_topic_names_and_types() else {
            continue;
        };
        drop(n);
        let (mut added, mut undecided) = (false, 0);
        for (topic, type_name) in discoverer.candidates(graph) {
            let Ok(n) = lock(&node) else { return };
            let publishers = n.get_publishers_info_by_topic(&topic, false).unwrap_or_default();
            drop(n);
            // The type description hash rosbag2 Jazzy stores per topic (`RIHS01_...`): tools that copy the
            // bag's topics (the Python `rosbags` writer) refuse a topic without one.
            let hash = (!publishers.is_empty())
                .then(|| probe.publisher_type_hash(&topic).ok().flatten())
                .flatten();
            let offered: Vec<_> = publishers.iter().map(|p| qos::to_bag(&p.qos_profile)).collect();
            let installed = || match d.type_support {
                TypeSupport::Generic => {
                    lockstep_ros::typesupport::message_type_support(&type_name, &ament_prefix_path)
                        .map(drop)
                        .map_err(|e| e.to_string())
                }
                TypeSupport::Compiled => Ok(()),
            };
            let warn = |line: &str| r2r::log_warn!(&logger, "{line}");
            let now = Instant::now();
            let spec = match discoverer.plan(&topic, &type_name, offered.clone(), hash, now, installed, &warn)
            {
                Plan::Later => {
                    undecided += usize::from(!offered.is_empty());
                    continue;
                }
                Plan::Skip { reason } => {
                    skip(&d, &logger, &topic, &type_name, &reason);
                    continue;
                }
                Plan::Record(spec) => spec,
            };
            // The bag thread learns the topic before the first message: the channel keeps order.
            if d.commands.send(Command::AddTopic(spec)).is_err() {
                return;
            }
            if let Err(e) = subscribe(&node, &d, &topic, &type_name, &offered) {
                skip(&d, &logger, &topic, &type_name, &e);
                continue;
            }
            r2r::log_info!(&logger, "recording {topic} ({type_name})");
            added = true;
        }
        if discoverer.graph_due(added, Instant::now()) {
            d.recording.refresh_graph();
        }
        if let Some(line) = readiness.after_look(undecided, &d.recording) {
            r2r::log_info!(&logger, "{line}");
        }
    }
}

/// Log once and list in the status a topic that cannot be recorded.
fn skip(d: &Discovery, logger: &str, topic: &str, type_name: &str, reason: &str) {
    r2r::log_warn!(logger, "not recording {topic} ({type_name}): {reason}");
    d.recording.note_skipped(topic, type_name, reason);
}

/// Subscribe to `topic` with the type support chosen and QoS matching the `offered`; messages go through a
/// [`TopicRecorder`]. `Err` is the reason for the log and the status.
fn subscribe(
    node: &SharedNode,
    d: &Discovery,
    topic: &str,
    type_name: &str,
    offered: &[lockstep_bag::QosProfile],
) -> Result<(), String> {
    let mut recorder = TopicRecorder::new(
        topic,
        type_name,
        messages::decode,
        d.commands.clone(),
        d.recording.clone(),
    );
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
