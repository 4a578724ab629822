//! Mapping between the recorder's plain data (`lockstep_recorder`) and ROS: the status message, decoded
//! headers and declared topologies, parameter events, the log and the graph.

use std::sync::Arc;

use lockstep_recorder::{
    Command, GraphQuery, Level, Log, ParameterEvent, Pending, RecordFormat, Status, TopicKind,
};
use lockstep_ros::generic::GenericNode;
use lockstep_ros::graph::Endpoint;
use lockstep_ros::parameter_text::{self, records};
use lockstep_trace_ros::{component_from_msg, header_from_msg};
use r2r::lockstep_interfaces::msg::{
    DependencyHeader, ModuleTopology, RecorderStatus, SkippedTopic, TopicStatistics,
};
use r2r::WrappedTypesupport;

/// `~/status` for `status`, stamped now.
pub fn status_msg(status: &Status) -> RecorderStatus {
    let s = status.clone();
    RecorderStatus {
        stamp: lockstep_ros::time::ns_to_time(lockstep_trace::now_ns()),
        bag_path: s.bag_path,
        paused: s.paused,
        recording: s.recording,
        error: s.error,
        topology_error: s.topology_error,
        file_index: s.file_index,
        total_messages: s.total_messages,
        total_bytes: s.total_bytes,
        queue_bytes: s.queue_bytes,
        max_queue_bytes: s.max_queue_bytes,
        topics: (s.topics.into_iter())
            .map(|t| TopicStatistics {
                topic: t.topic,
                type_: t.type_name,
                received: t.received,
                messages: t.messages,
                bytes: t.bytes,
                dropped: t.dropped,
                dropped_queue_full: t.dropped_queue_full,
                dropped_after_error: t.dropped_after_error,
            })
            .collect(),
        skipped: (s.skipped.into_iter())
            .map(|t| SkippedTopic {
                topic: t.topic,
                type_: t.type_name,
                reason: t.reason,
            })
            .collect(),
    }
}

/// A dependency header or declared topology (CDR) as what it teaches the bag thread.
pub fn decode(kind: TopicKind, data: &[u8]) -> Option<Command> {
    match kind {
        TopicKind::Header => DependencyHeader::from_serialized_bytes(data)
            .ok()
            .map(|h| Command::Header(Box::new(header_from_msg(&h)))),
        TopicKind::Topology => ModuleTopology::from_serialized_bytes(data)
            .ok()
            .map(|t| Command::Declared(t.components.iter().map(component_from_msg).collect())),
        TopicKind::Data => None,
    }
}

/// The recorder's log lines on the ROS logger `logger`.
pub fn log(logger: String) -> Log {
    Arc::new(move |level, line| match level {
        Level::Info => r2r::log_info!(&logger, "{line}"),
        Level::Warn => r2r::log_warn!(&logger, "{line}"),
        Level::Error => r2r::log_error!(&logger, "{line}"),
    })
}

/// Who publishes and subscribes a topic, through `generic`'s graph probe, `own_names` left out.
pub fn graph_query(generic: &GenericNode, own_names: Vec<String>) -> GraphQuery {
    let probe = generic.graph_probe();
    Box::new(move |topic| {
        let nodes = |endpoints: Result<Vec<Endpoint>, _>| -> Vec<String> {
            (endpoints.unwrap_or_default().into_iter())
                .map(|e| e.node)
                .filter(|n| !own_names.contains(n))
                .collect()
        };
        (nodes(probe.publishers(topic)), nodes(probe.subscriptions(topic)))
    })
}

/// Pending parameters, stored under the record names the replay reads.
pub fn pending_parameters() -> Pending {
    Pending::new(RecordFormat {
        values: records::VALUES,
        nodes: records::NODES,
        changes: records::CHANGES,
        dropped: records::DROPPED,
        deleted: records::DELETED,
        unrecorded: records::UNRECORDED,
        change_key: records::change_key,
    })
}

/// A `/parameter_events` message as plain text (values bounded by `pending`).
pub fn parameter_event(
    event: &r2r::rcl_interfaces::msg::ParameterEvent,
    pending: &Pending,
) -> ParameterEvent {
    let set = (event.new_parameters.iter()).chain(&event.changed_parameters);
    ParameterEvent {
        node: event.node.clone(),
        set: set
            .map(|p| {
                (
                    p.name.clone(),
                    pending.bounded_text(parameter_text::format(&p.value)),
                )
            })
            .collect(),
        deleted: event.deleted_parameters.iter().map(|p| p.name.clone()).collect(),
    }
}
