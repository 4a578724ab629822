//! The CDR the interceptor writes, read back by the bag library's schema-driven decoder from the real
//! message definitions in msg/ (what `rosbags` and rclpy read too), and its own header reader.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use lockstep_bag::cdr::{Schema, Value};
use lockstep_intercept::cdr::{
    decode_events, decode_header, encode_events, encode_header, encode_topology, CdrError,
};
use lockstep_intercept::events::{Batch, Event, EventKind};
use lockstep_trace::{Component, InputRecord, SourceRef, TraceHeader};

const TIME: &str = "int32 sec\nuint32 nanosec\n";

fn msg(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../msg/msg")
        .join(format!("{name}.msg"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A ros2msg schema text: the root type, then each dependency after a separator line.
fn schema(root: &str, deps: &[(&str, String)]) -> Schema {
    let mut text = msg(root);
    for (name, body) in deps {
        text.push_str(&format!("\n================================================================================\nMSG: {name}\n{body}"));
    }
    Schema::parse(&format!("lockstep_interfaces/msg/{root}"), &text).expect("schema parses")
}

fn field<'a>(value: &'a Value, path: &str) -> &'a Value {
    path.split('.')
        .fold(value, |v, name| match name.parse::<usize>() {
            Ok(i) => match v {
                Value::Array(items) => &items[i],
                other => panic!("{other:?} is not an array"),
            },
            Err(_) => v
                .field(name)
                .unwrap_or_else(|| panic!("no field {name} in {v:?}")),
        })
}

fn sample_header() -> TraceHeader {
    TraceHeader {
        module_name: "robot1/fusion".into(),
        channel_name: "/fused".into(),
        sequence_num: 41,
        epoch: 1_700_000_000_123_456_789,
        start_time_ns: 1_700_000_000_987_654_321,
        process_time_ns: 1234,
        payload_digest: 0xfeed_beef_0000_0001,
        inputs: vec![InputRecord {
            module_name: "filter".into(),
            channel_name: "/filtered".into(),
            sequence_num: 7,
            epoch: 99,
            payload_digest: 5,
            start_time_ns: -1_500_000_000,
            process_time_ns: 3,
            sources: vec![SourceRef {
                module_name: String::new(),
                channel_name: "/scan".into(),
                sequence_num: 2,
                epoch: 0,
                payload_digest: 11,
            }],
        }],
    }
}

#[test]
fn dependency_headers_read_back_by_the_schema_decoder_and_our_reader() {
    let header = sample_header();
    let bytes = encode_header(&header);
    let s = schema(
        "DependencyHeader",
        &[
            ("builtin_interfaces/Time", TIME.to_owned()),
            ("lockstep_interfaces/InputHeader", msg("InputHeader")),
            ("lockstep_interfaces/DependencySource", msg("DependencySource")),
        ],
    );
    let value = s.decode(&bytes).expect("decodes");
    assert_eq!(
        field(&value, "module_name"),
        &Value::String("robot1/fusion".into())
    );
    assert_eq!(field(&value, "epoch"), &Value::UInt(header.epoch));
    assert_eq!(field(&value, "start_stamp.nanosec"), &Value::UInt(987_654_321));
    assert_eq!(field(&value, "inputs.0.start_stamp.sec"), &Value::Int(-2));
    assert_eq!(
        field(&value, "inputs.0.sources.0.payload_digest"),
        &Value::UInt(11)
    );
    assert_eq!(
        s.canonical(&bytes).expect("canonical"),
        bytes,
        "written canonical: zero padding, no tail"
    );
    assert_eq!(decode_header(&bytes).expect("reads"), header);
}

#[test]
fn topologies_are_marked_inferred() {
    let component = Component::new("filter", ["/scan"], ["/filtered", "/debug"]);
    let s = schema(
        "ModuleTopology",
        &[("lockstep_interfaces/ComponentTopology", msg("ComponentTopology"))],
    );
    let value = s.decode(&encode_topology(&component)).expect("decodes");
    assert_eq!(
        field(&value, "components.0.module_name"),
        &Value::String("filter".into())
    );
    assert_eq!(
        field(&value, "components.0.writer_channels.1"),
        &Value::String("/filtered".into())
    );
    assert_eq!(field(&value, "components.0.inferred"), &Value::Bool(true));
}

#[test]
fn event_batches_read_back_by_the_schema_decoder() {
    let batch = Batch {
        node_name: "filter".into(),
        epoch: 3,
        first_index: 512,
        events: vec![Event {
            kind: EventKind::Take,
            ros_time_ns: 5_000_000_001,
            thread: 4242,
            name: "/scan".into(),
            infrastructure: false,
            gid: vec![1, 2, 3],
            sequence_number: -1,
            payload_digest: 77,
        }],
        warnings: vec!["w1".into()],
    };
    let s = schema(
        "NodeEvents",
        &[
            ("lockstep_interfaces/NodeEvent", msg("NodeEvent")),
            ("builtin_interfaces/Time", TIME.to_owned()),
        ],
    );
    let value = s.decode(&encode_events(&batch)).expect("decodes");
    assert_eq!(field(&value, "first_index"), &Value::UInt(512));
    assert_eq!(field(&value, "events.0.kind"), &Value::UInt(0));
    assert_eq!(field(&value, "events.0.stamp.sec"), &Value::Int(5));
    assert_eq!(field(&value, "events.0.gid.2"), &Value::UInt(3));
    assert_eq!(field(&value, "events.0.sequence_number"), &Value::Int(-1));
    assert_eq!(field(&value, "events.0.payload_digest"), &Value::UInt(77));
    assert_eq!(field(&value, "warnings.0"), &Value::String("w1".into()));
    let bytes = encode_events(&batch);
    assert_eq!(decode_events(&bytes), Ok(batch), "read back as written");
    for cut in 0..bytes.len() {
        assert!(decode_events(&bytes[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn hostile_headers_are_refused_never_a_panic() {
    let bytes = encode_header(&sample_header());
    for cut in 0..bytes.len() {
        assert!(decode_header(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    // A count of 2^32-1 inputs in a short message.
    let mut huge = encode_header(&TraceHeader::external("/c", 0, 0, 0));
    let n = huge.len();
    huge[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(decode_header(&huge), Err(CdrError::TooMany { .. })));
    assert!(matches!(
        decode_header(&[0, 0, 0, 0, 1]),
        Err(CdrError::Encapsulation(_))
    ));
}
