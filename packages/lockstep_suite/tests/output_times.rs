//! An output's time in a case's findings is the log time of its data message (what the bag tools show for the
//! message), not that of its dependency header, which the recorder logs a little later on
//! `<channel>/lockstep_header`: the time `T` of the assertion facts and the first difference's time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_bag::cdr::{Schema, Value};
use lockstep_bag::{BagReader, BagWriter, MessageDefinition, TopicSpec, WriterOptions};
use lockstep_replay::lockstep::{header_to_value, Frame, Recording};
use lockstep_suite::suite::ChannelExpect;

const FLOAT: &str = "std_msgs/msg/Float64";
const HEADER: &str = "lockstep_interfaces/msg/DependencyHeader";
/// How long after its data message the recorder logs a header in these recordings.
const HEADER_LAG_NS: u64 = 40_000;

/// The dependency header's definition, as the recorder stores it (with its nested types).
fn header_definition() -> String {
    let msg = |name: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../msg/msg/{name}.msg"));
        std::fs::read_to_string(path).unwrap()
    };
    let sep = "=".repeat(80);
    format!(
        "{}\n{sep}\nMSG: lockstep_interfaces/InputHeader\n{}\n{sep}\nMSG: lockstep_interfaces/DependencySource\n{}",
        msg("DependencyHeader"),
        msg("InputHeader"),
        msg("DependencySource")
    )
}

/// Log time of output `k`'s data message.
fn data_time(k: usize) -> u64 {
    1_000_000_000 + k as u64 * 100_000_000
}

/// A recording of module `ctrl` writing `values` on /cmd (std_msgs/Float64), each data message followed
/// `HEADER_LAG_NS` later by its header; `digests` gives each message's payload digest (see [`digests`]),
/// empty: no headers.
fn write(dir: &Path, values: &[f64], digests: &[u64]) {
    let float = MessageDefinition {
        encoding: "ros2msg".into(),
        text: "float64 data\n".into(),
    };
    let header = MessageDefinition {
        encoding: "ros2msg".into(),
        text: header_definition(),
    };
    let header_schema = Schema::parse(HEADER, &header.text).unwrap();
    let data_schema = Schema::parse(FLOAT, &float.text).unwrap();
    let mut w = BagWriter::create(dir, WriterOptions::default()).unwrap();
    w.add_topic(TopicSpec::new("/cmd", FLOAT).with_definition(float))
        .unwrap();
    w.add_topic(TopicSpec::new("/cmd/lockstep_header", HEADER).with_definition(header))
        .unwrap();
    for (k, value) in values.iter().enumerate() {
        let data = data_schema
            .encode(&Value::Message(vec![("data".into(), Value::Float(*value))]))
            .unwrap();
        w.write("/cmd", data_time(k), &data).unwrap();
        let Some(&digest) = digests.get(k) else { continue };
        // The header type comes from the replay library (a Frame's), filled in as the module's tracer would.
        let mut frame = Frame {
            header: Default::default(),
            header_log_time_ns: 0,
            events: None,
        };
        frame.header.module_name = "ctrl".into();
        frame.header.channel_name = "/cmd".into();
        frame.header.sequence_num = k as u32;
        frame.header.epoch = 7;
        frame.header.start_time_ns = data_time(k) as i64 - 1000;
        frame.header.payload_digest = digest;
        let bytes = header_schema
            .encode(&header_to_value(&frame.header, &header_schema))
            .unwrap();
        w.write("/cmd/lockstep_header", data_time(k) + HEADER_LAG_NS, &bytes)
            .unwrap();
    }
    let topology: BTreeMap<String, String> = [("ctrl".to_owned(), "reads=;writes=/cmd".to_owned())].into();
    w.write_metadata_record("lockstep_topology", &topology).unwrap();
    w.finish().unwrap();
}

/// The payload digest of each of `values` as the recording indexes it (a recording of the data alone).
fn digests(dir: &Path, values: &[f64]) -> Vec<u64> {
    write(dir, values, &[]);
    let recording = Recording::load(&BagReader::open(dir).unwrap()).unwrap();
    recording.channels["/cmd"]
        .by_time
        .iter()
        .map(|&(_, d)| d)
        .collect()
}

/// The recording of `values` with headers, in `root/<name>`.
fn recording(root: &Path, name: &str, values: &[f64]) -> Recording {
    let digests = digests(&root.join(format!("{name}_data")), values);
    let dir = root.join(name);
    write(&dir, values, &digests);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    assert_eq!(
        recording.frames.len(),
        values.len(),
        "every output has its header"
    );
    recording
}

#[test]
fn assertion_facts_are_timed_by_the_output_s_data_message() {
    let root = tempfile::tempdir().unwrap();
    let new = recording(root.path(), "new", &[0.5, 1.0, 2.5, 0.25]);
    let rules = vec![(
        "violation(T, V) :- cmd(T, \"data\", V), V > 2.0.\n".to_owned(),
        "test".to_owned(),
    )];
    let rows = lockstep_suite::asserts::violations(&rules, &new).unwrap();
    assert_eq!(rows, [format!("violation({}, 2.5)", data_time(2))]);
}

#[test]
fn the_first_difference_is_timed_by_the_output_s_data_message() {
    let root = tempfile::tempdir().unwrap();
    let baseline = recording(root.path(), "baseline", &[0.5, 1.0, 2.5, 0.25]);
    let new = recording(root.path(), "new", &[0.5, 1.0, 2.75, 0.25]);
    let comparison =
        lockstep_suite::compare::compare(&baseline, &new, &BTreeMap::<String, ChannelExpect>::new());
    let cmd = &comparison["/cmd"];
    assert_eq!((cmd.compared, cmd.differing), (4, 1));
    let first = cmd.first_difference.as_ref().unwrap();
    assert_eq!((first.sequence_num, first.log_time_ns), (2, data_time(2)));
    let times: Vec<u64> = cmd.over_time.iter().map(|&(t, _)| t).collect();
    assert_eq!(times, (0..4).map(data_time).collect::<Vec<_>>());
}
