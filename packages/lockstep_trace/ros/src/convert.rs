//! Conversions between lockstep_trace's model and the lockstep_interfaces messages.

use lockstep_ros::time::{ns_to_time, time_to_ns};
use lockstep_trace::{Component, InputRecord, SourceRef, Topology, TraceHeader};
use r2r::lockstep_interfaces::msg::{
    ComponentTopology, DependencyHeader, DependencySource, InputHeader, ModuleTopology,
};

fn source_to_msg(source: &SourceRef) -> DependencySource {
    DependencySource {
        module_name: source.module_name.clone(),
        channel_name: source.channel_name.clone(),
        sequence_num: source.sequence_num,
        epoch: source.epoch,
        payload_digest: source.payload_digest,
    }
}

fn input_to_msg(input: &InputRecord) -> InputHeader {
    InputHeader {
        module_name: input.module_name.clone(),
        channel_name: input.channel_name.clone(),
        sequence_num: input.sequence_num,
        epoch: input.epoch,
        payload_digest: input.payload_digest,
        start_stamp: ns_to_time(input.start_time_ns),
        process_time_ns: input.process_time_ns,
        sources: input.sources.iter().map(source_to_msg).collect(),
    }
}

/// The ROS message of a header.
pub fn header_to_msg(header: &TraceHeader) -> DependencyHeader {
    DependencyHeader {
        module_name: header.module_name.clone(),
        channel_name: header.channel_name.clone(),
        sequence_num: header.sequence_num,
        epoch: header.epoch,
        start_stamp: ns_to_time(header.start_time_ns),
        process_time_ns: header.process_time_ns,
        payload_digest: header.payload_digest,
        inputs: header.inputs.iter().map(input_to_msg).collect(),
    }
}

fn source_from_msg(source: &DependencySource) -> SourceRef {
    SourceRef {
        module_name: source.module_name.clone(),
        channel_name: source.channel_name.clone(),
        sequence_num: source.sequence_num,
        epoch: source.epoch,
        payload_digest: source.payload_digest,
    }
}

fn input_from_msg(input: &InputHeader) -> InputRecord {
    InputRecord {
        module_name: input.module_name.clone(),
        channel_name: input.channel_name.clone(),
        sequence_num: input.sequence_num,
        epoch: input.epoch,
        payload_digest: input.payload_digest,
        start_time_ns: time_to_ns(&input.start_stamp),
        process_time_ns: input.process_time_ns,
        sources: input.sources.iter().map(source_from_msg).collect(),
    }
}

/// The model of a received header.
pub fn header_from_msg(msg: &DependencyHeader) -> TraceHeader {
    TraceHeader {
        module_name: msg.module_name.clone(),
        channel_name: msg.channel_name.clone(),
        sequence_num: msg.sequence_num,
        epoch: msg.epoch,
        start_time_ns: time_to_ns(&msg.start_stamp),
        process_time_ns: msg.process_time_ns,
        payload_digest: msg.payload_digest,
        inputs: msg.inputs.iter().map(input_from_msg).collect(),
    }
}

/// The ROS message of one module's wiring (channels sorted).
pub fn component_to_msg(component: &Component) -> ComponentTopology {
    ComponentTopology {
        module_name: component.module_name.clone(),
        reader_channels: component.reader_channels.iter().cloned().collect(),
        writer_channels: component.writer_channels.iter().cloned().collect(),
        inferred: false,
    }
}

/// The model of one module's wiring.
pub fn component_from_msg(msg: &ComponentTopology) -> Component {
    Component::new(
        &msg.module_name,
        msg.reader_channels.iter().cloned(),
        msg.writer_channels.iter().cloned(),
    )
}

/// The ROS message of a topology.
pub fn topology_to_msg(topology: &Topology) -> ModuleTopology {
    ModuleTopology {
        components: topology.components.iter().map(component_to_msg).collect(),
    }
}

/// The components of a received topology (feed them to a `TopologyBuilder` to merge and check them).
pub fn topology_from_msg(msg: &ModuleTopology) -> Vec<Component> {
    msg.components.iter().map(component_from_msg).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use lockstep_trace::testing::{two_level_header, INPUT_START_NS};
    use r2r::builtin_interfaces::msg::Time;

    #[test]
    fn header_round_trips_through_the_ros_message() {
        let c5 = two_level_header();
        let msg = header_to_msg(&c5);
        assert_eq!(msg.inputs[0].sources[0].sequence_num, 4);
        assert_eq!(msg.inputs[0].start_stamp, ns_to_time(INPUT_START_NS));
        assert_eq!(
            msg.start_stamp,
            Time {
                sec: 1_700_000_001,
                nanosec: 200_000_009
            }
        );
        assert_eq!((msg.process_time_ns, msg.inputs[0].process_time_ns), (77, 42));
        assert_eq!(header_from_msg(&msg), c5);
    }

    #[test]
    fn component_round_trips_sorted() {
        let component = Component::new("m2", ["/c6", "/c3", "/c4"], ["/c5"]);
        let msg = component_to_msg(&component);
        assert_eq!(msg.reader_channels, vec!["/c3", "/c4", "/c6"]);
        assert_eq!(component_from_msg(&msg), component);
    }
}
