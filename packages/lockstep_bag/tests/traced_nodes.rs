//! The section of `lockstep bag info` about nodes traced by interception: a bag written by this crate with two
//! nodes' `lockstep_interfaces/msg/NodeEvents` topics (encoded by the crate's CDR encoder from the repository's
//! .msg files, stored as rosbag2 stores a definition), a gap, events before the recording, warnings and an
//! undecodable message.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use lockstep_bag::cdr::{Schema, Value};
use lockstep_bag::traced::{node_event_logs, traced_nodes, TracedNodes, NODE_EVENTS_TYPE};
use lockstep_bag::{BagReader, BagWriter, MessageDefinition, MessageDefinitions, TopicSpec, WriterOptions};
use std::path::{Path, PathBuf};

const SEPARATOR: &str = "================================================================================";
const TIME_MSG: &str = "int32 sec\nuint32 nanosec\n";

// NodeEvent.kind
const TAKE: u64 = 0;
const PUBLISH: u64 = 1;
const TIMER: u64 = 2;
const REQUEST_TAKEN: u64 = 3;
const RESPONSE_SENT: u64 = 4;
const REQUEST_SENT: u64 = 5;
const RESPONSE_TAKEN: u64 = 6;

const EXECUTOR: &str = "multi-threaded executor: callbacks may overlap, their order is not recorded";
const OUTSIDE: &str = "published /cmd_vel outside any callback seen";

fn msg_file(name: &str) -> String {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../msg/msg")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The ros2msg schema text of NodeEvents as rosbag2 stores it: the type's text, then each dependency after a
/// line of 80 `=` and `MSG: pkg/Type`, depth first.
fn node_events_definition() -> String {
    format!(
        "{}\n{SEPARATOR}\nMSG: lockstep_interfaces/NodeEvent\n{}\n{SEPARATOR}\nMSG: builtin_interfaces/Time\n{TIME_MSG}",
        msg_file("NodeEvents.msg"),
        msg_file("NodeEvent.msg"),
    )
}

fn event(kind: u64, i: u64) -> Value {
    let topic = if kind == TIMER { "" } else { "/scan" };
    Value::Message(vec![
        ("kind".into(), Value::UInt(kind)),
        (
            "stamp".into(),
            Value::Message(vec![
                ("sec".into(), Value::Int(100 + i as i64)),
                ("nanosec".into(), Value::UInt(5)),
            ]),
        ),
        ("thread".into(), Value::UInt(4242)),
        ("name".into(), Value::String(topic.into())),
        ("infrastructure".into(), Value::Bool(false)),
        ("gid".into(), Value::Array(vec![Value::UInt(1); 16])),
        ("sequence_number".into(), Value::Int(i as i64)),
        ("payload_digest".into(), Value::UInt(0x0123_4567_89ab_cdef)),
    ])
}

fn batch(schema: &Schema, node: &str, first_index: u64, kinds: &[u64], warnings: &[&str]) -> Vec<u8> {
    batch_of_epoch(
        schema,
        node,
        1_700_000_000_000_000_000,
        first_index,
        kinds,
        warnings,
    )
}

fn batch_of_epoch(
    schema: &Schema,
    node: &str,
    epoch: u64,
    first_index: u64,
    kinds: &[u64],
    warnings: &[&str],
) -> Vec<u8> {
    let events = (kinds.iter().enumerate())
        .map(|(i, k)| event(*k, first_index + i as u64))
        .collect();
    let value = Value::Message(vec![
        ("node_name".into(), Value::String(node.into())),
        ("epoch".into(), Value::UInt(epoch)),
        ("first_index".into(), Value::UInt(first_index)),
        ("events".into(), Value::Array(events)),
        (
            "warnings".into(),
            Value::Array(warnings.iter().map(|w| Value::String((*w).into())).collect()),
        ),
    ]);
    schema.encode(&value).unwrap()
}

/// `/filter`: indexes 3..12 then 12..15 after a gap of 3 (9..12), 3 events before the recording, two warnings
/// over its batches. `/robot1/planner`: 0..3 without a gap, no warnings, one message that does not decode.
/// Plus `/chatter`, which is not an events topic.
fn write_bag(dir: &Path) {
    let definition = MessageDefinition {
        encoding: "ros2msg".into(),
        text: node_events_definition(),
    };
    let schema = Schema::parse(NODE_EVENTS_TYPE, &definition.text).unwrap();
    let mut w = BagWriter::create(dir, WriterOptions::default()).unwrap();
    for topic in ["/lockstep/events/filter", "/lockstep/events/robot1/planner"] {
        w.add_topic(TopicSpec::new(topic, NODE_EVENTS_TYPE).with_definition(definition.clone()))
            .unwrap();
    }
    w.add_topic(
        TopicSpec::new("/chatter", "std_msgs/msg/String").with_definition(MessageDefinition {
            encoding: "ros2msg".into(),
            text: "string data\n".into(),
        }),
    )
    .unwrap();
    let (filter, planner) = ("/lockstep/events/filter", "/lockstep/events/robot1/planner");
    let messages: Vec<(&str, Vec<u8>)> = vec![
        (
            filter,
            batch(&schema, "filter", 3, &[TAKE, PUBLISH, TIMER, TAKE], &[OUTSIDE]),
        ),
        (
            planner,
            batch(&schema, "robot1/planner", 0, &[TIMER, PUBLISH], &[]),
        ),
        ("/chatter", common::cdr_string("hello")),
        (
            filter,
            batch(
                &schema,
                "filter",
                7,
                &[REQUEST_TAKEN, RESPONSE_SENT],
                &[OUTSIDE, EXECUTOR],
            ),
        ),
        (planner, vec![0, 1, 0, 0, 9]),
        (
            filter,
            batch(
                &schema,
                "filter",
                12,
                &[REQUEST_SENT, RESPONSE_TAKEN, PUBLISH],
                &[EXECUTOR],
            ),
        ),
        (planner, batch(&schema, "robot1/planner", 2, &[TAKE], &[])),
    ];
    for (i, (topic, data)) in messages.into_iter().enumerate() {
        w.write(topic, 1_000_000_000 + i as u64 * 1_000_000, &data)
            .unwrap();
    }
    w.finish().unwrap();
}

fn traced(dir: &Path) -> TracedNodes {
    traced_nodes(&BagReader::open(dir).unwrap())
}

fn section_text(nodes: &TracedNodes) -> String {
    let mut out = Vec::new();
    nodes.write_text(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

const EXPECTED_SECTION: &str = "  Nodes traced by interception (lockstep trace): 2
    /filter (topic /lockstep/events/filter): 9 events in 3 batches
      taken 2, published 2, timers 1, requests taken 1, responses sent 1, requests sent 1, responses taken 1, clock reads 0
      lost: 3 events (1 gap between batches)
      before the recording: 3 events (the first batch recorded starts at index 3)
      warnings:
        multi-threaded executor: callbacks may overlap, their order is not recorded
        published /cmd_vel outside any callback seen
    /robot1/planner (topic /lockstep/events/robot1/planner): 3 events in 2 batches
      taken 1, published 1, timers 1, requests taken 0, responses sent 0, requests sent 0, responses taken 0, clock reads 0
      lost: none
      before the recording: none
      undecodable: 1 message on /lockstep/events/robot1/planner (first: at byte 4, field `node_name`: the message ends (5 bytes) inside a 4-byte value)
      warnings: none
";

#[test]
fn the_definition_is_laid_out_as_rosbag2_stores_it() {
    let prefix = tempfile::tempdir().unwrap();
    for (package, name, text) in [
        ("lockstep_interfaces", "NodeEvents", msg_file("NodeEvents.msg")),
        ("lockstep_interfaces", "NodeEvent", msg_file("NodeEvent.msg")),
        ("builtin_interfaces", "Time", TIME_MSG.to_owned()),
    ] {
        let dir = prefix.path().join("share").join(package).join("msg");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.msg")), text).unwrap();
    }
    let resolved = MessageDefinitions::new([prefix.path()])
        .resolve(NODE_EVENTS_TYPE)
        .unwrap();
    assert_eq!(resolved.text, node_events_definition());
}

#[test]
fn counts_events_losses_and_warnings_per_node() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    write_bag(&dir);
    let nodes = traced(&dir);
    assert_eq!(nodes.read_error, None);
    let names: Vec<&str> = nodes.nodes.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(names, ["/filter", "/robot1/planner"]);
    let (filter, planner) = (&nodes.nodes[0], &nodes.nodes[1]);
    assert_eq!(filter.events, [2, 2, 1, 1, 1, 1, 1, 0]);
    assert_eq!(
        (filter.batches, filter.lost, filter.gaps, filter.before_recording),
        (3, 3, 1, 3)
    );
    let warnings: Vec<&str> = filter.warnings.iter().map(String::as_str).collect();
    assert_eq!(warnings, [EXECUTOR, OUTSIDE]);
    assert_eq!(
        (filter.undecodable, filter.restarts, filter.out_of_order_batches),
        (0, 0, 0)
    );
    assert_eq!(planner.events, [1, 1, 1, 0, 0, 0, 0, 0]);
    assert_eq!(
        (planner.batches, planner.lost, planner.before_recording),
        (2, 0, 0)
    );
    assert!(planner.warnings.is_empty());
    assert_eq!(planner.undecodable, 1);
    assert_eq!(section_text(&nodes), EXPECTED_SECTION);
}

#[test]
fn a_topic_without_a_definition_is_undecodable_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    let mut w = BagWriter::create(&dir, WriterOptions::default()).unwrap();
    w.add_topic(TopicSpec::new("/lockstep/events/talker", NODE_EVENTS_TYPE))
        .unwrap();
    w.write("/lockstep/events/talker", 1, &[0, 1, 0, 0]).unwrap();
    w.write("/lockstep/events/talker", 2, &[0, 1, 0, 0]).unwrap();
    w.finish().unwrap();
    let text = section_text(&traced(&dir));
    assert!(
        text.contains("      undecodable: 2 messages on /lockstep/events/talker (the bag stores no definition of lockstep_interfaces/msg/NodeEvents)\n"),
        "{text}"
    );
}

#[test]
fn a_bag_without_events_topics_has_no_section() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    let mut w = BagWriter::create(&dir, WriterOptions::default()).unwrap();
    w.add_topic(TopicSpec::new("/chatter", "std_msgs/msg/String"))
        .unwrap();
    w.write("/chatter", 1, &common::cdr_string("hi")).unwrap();
    w.finish().unwrap();
    let nodes = traced(&dir);
    assert_eq!(nodes, TracedNodes::default());
    assert_eq!(section_text(&nodes), "");
}

#[cfg(feature = "cli")]
#[test]
fn bag_info_prints_the_section() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    write_bag(&dir);
    let mut out = Vec::new();
    lockstep_bag::cli::info(&dir, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(EXPECTED_SECTION), "{text}");
    let section = text.find("  Nodes traced by interception").unwrap();
    assert!(section > text.find("  Topology source:").unwrap(), "{text}");
    assert!(section < text.find("  Metadata records:").unwrap(), "{text}");
}

#[test]
fn node_event_logs_decode_every_event_in_log_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    write_bag(&dir);
    let logs = node_event_logs(&BagReader::open(&dir).unwrap()).unwrap();
    let modules: Vec<&str> = logs.keys().map(String::as_str).collect();
    assert_eq!(
        modules,
        ["filter", "robot1/planner"],
        "module names without the leading slash"
    );
    let filter = &logs["filter"];
    assert_eq!(filter.topic, "/lockstep/events/filter");
    let indexes: Vec<u64> = filter.events.iter().map(|e| e.index).collect();
    assert_eq!(indexes, [3, 4, 5, 6, 7, 8, 12, 13, 14]);
    let kinds: Vec<u8> = filter.events.iter().map(|e| e.event.kind).collect();
    assert_eq!(kinds, [0, 1, 2, 0, 3, 4, 5, 6, 1]);
    let take = &filter.events[0];
    assert_eq!(take.epoch, 1_700_000_000_000_000_000);
    assert_eq!(take.event.ros_time_ns, 103_000_000_005);
    assert_eq!(
        (
            take.event.thread,
            take.event.name.as_str(),
            take.event.infrastructure
        ),
        (4242, "/scan", false)
    );
    assert_eq!(take.event.gid, [1; 16]);
    assert_eq!(
        (take.event.sequence_number, take.event.payload_digest),
        (3, 0x0123_4567_89ab_cdef)
    );
    assert_eq!(filter.events[2].event.name, "", "a timer has no name");
    assert_eq!((filter.batches, filter.undecodable, filter.duplicates), (3, 0, 0));
    assert_eq!(filter.warnings.len(), 2);
    let planner = &logs["robot1/planner"];
    assert_eq!(planner.events.len(), 3);
    assert_eq!((planner.batches, planner.undecodable), (2, 1));
    assert!(
        (planner.undecodable_reason.as_deref().unwrap()).contains("field `node_name`"),
        "{planner:?}"
    );
}

#[test]
fn node_event_logs_sort_batches_drop_repeats_and_skip_hostile_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    let definition = MessageDefinition {
        encoding: "ros2msg".into(),
        text: node_events_definition(),
    };
    let schema = Schema::parse(NODE_EVENTS_TYPE, &definition.text).unwrap();
    let topic = "/lockstep/events/talker";
    let mut w = BagWriter::create(&dir, WriterOptions::default()).unwrap();
    w.add_topic(TopicSpec::new(topic, NODE_EVENTS_TYPE).with_definition(definition))
        .unwrap();
    // A batch claiming 2^32-1 events in a few bytes, and one cut short.
    let mut huge = batch_of_epoch(&schema, "talker", 9, 0, &[], &[]);
    let count_at = huge.len() - 8;
    huge[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let whole = batch_of_epoch(&schema, "talker", 9, 9, &[TAKE], &[]);
    let messages = [
        batch_of_epoch(&schema, "talker", 9, 2, &[TAKE, PUBLISH], &[]),
        batch_of_epoch(&schema, "talker", 5, 7, &[TIMER], &[]), // the process before a restart
        batch_of_epoch(&schema, "talker", 9, 0, &[TIMER, TAKE], &[]),
        batch_of_epoch(&schema, "talker", 9, 1, &[REQUEST_TAKEN, RESPONSE_SENT], &[]), // index 1 again
        huge,
        whole[..whole.len() - 9].to_vec(),
    ];
    for (i, data) in messages.iter().enumerate() {
        w.write(topic, 1 + i as u64, data).unwrap();
    }
    w.finish().unwrap();
    let logs = node_event_logs(&BagReader::open(&dir).unwrap()).unwrap();
    let talker = &logs["talker"];
    let order: Vec<(u64, u64, u8)> = (talker.events.iter())
        .map(|e| (e.epoch, e.index, e.event.kind))
        .collect();
    assert_eq!(
        order,
        [(5, 7, 2), (9, 0, 2), (9, 1, 0), (9, 2, 0), (9, 3, 1)],
        "by epoch and index; index 1 kept as first read, index 2 once"
    );
    assert_eq!((talker.batches, talker.duplicates, talker.undecodable), (4, 2, 2));
}

#[test]
fn node_event_logs_of_bags_without_events_or_definitions() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    let mut w = BagWriter::create(&dir, WriterOptions::default()).unwrap();
    w.add_topic(TopicSpec::new("/chatter", "std_msgs/msg/String"))
        .unwrap();
    w.write("/chatter", 1, &common::cdr_string("hi")).unwrap();
    w.finish().unwrap();
    assert!(node_event_logs(&BagReader::open(&dir).unwrap())
        .unwrap()
        .is_empty());

    let dir = tmp.path().join("undefined");
    let mut w = BagWriter::create(&dir, WriterOptions::default()).unwrap();
    w.add_topic(TopicSpec::new("/lockstep/events/talker", NODE_EVENTS_TYPE))
        .unwrap();
    w.write("/lockstep/events/talker", 1, &[0, 1, 0, 0]).unwrap();
    w.write("/lockstep/events/talker", 2, &[0, 1, 0, 0]).unwrap();
    w.finish().unwrap();
    let logs = node_event_logs(&BagReader::open(&dir).unwrap()).unwrap();
    let talker = &logs["talker"];
    assert!(talker.events.is_empty());
    assert_eq!(talker.undecodable, 2);
    assert_eq!(
        talker.undecodable_reason.as_deref(),
        Some("the bag stores no definition of lockstep_interfaces/msg/NodeEvents")
    );
}
