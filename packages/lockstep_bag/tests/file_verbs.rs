#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `lockstep bag filter / merge / du` through their command lines (the verbs' and options' names are a
//! contract): what they keep and in which order, Lockstep's own data kept whatever the selection, one-line
//! errors before any output is created, inputs left as they were, and memory that does not grow with the bag.
#![cfg(feature = "cli")]

mod common;
#[path = "file_verbs/du.rs"]
mod du;
#[path = "file_verbs/memory.rs"]
mod memory;
#[path = "file_verbs/merge.rs"]
mod merge;

use clap::Parser;
use lockstep_bag::cli::{run_with, BagCommand};
use lockstep_bag::{
    BagReader, BagWriter, ChunkCompression, MessageDefinition, QosProfile, TopicSpec, WriterOptions,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The first message's time: 1700000000 s since the epoch.
const T0: u64 = 1_700_000_000_000_000_000;
const MS: u64 = 1_000_000;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: BagCommand,
}

/// Runs `lockstep bag <args>`; its output, or its error as `lockstep` prints it (one line).
fn bag(args: &[&str]) -> Result<String, String> {
    let cli =
        Cli::try_parse_from(std::iter::once("bag").chain(args.iter().copied())).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    run_with(cli.command, &mut out, &mut std::io::sink())
        .map_err(|e| lockstep_bag::error_chain(e.as_ref()))?;
    Ok(String::from_utf8(out).unwrap())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// (topic, log time, publish time, data) of every message, in the reader's order.
type Msgs = Vec<(String, u64, u64, Vec<u8>)>;

fn read(path: &Path) -> Msgs {
    let reader = BagReader::open(path).unwrap();
    let all = reader.messages().map(|m| m.unwrap());
    all.map(|m| (m.topic.to_string(), m.log_time_ns, m.publish_time_ns, m.data))
        .collect()
}

/// A topic with its own QoS depth, type hash and definition, to see that they are copied.
fn spec(name: &str, type_name: &str) -> TopicSpec {
    let qos = QosProfile {
        depth: name.len() as u64,
        ..QosProfile::default()
    };
    TopicSpec::new(name, type_name)
        .with_qos(vec![qos])
        .with_type_hash(format!("RIHS01_{}", name.len()))
        .with_definition(MessageDefinition {
            encoding: "ros2msg".into(),
            text: format!("string data  # {type_name}\n"),
        })
}

/// A small recording: data topics, a dependency-header sidecar, Lockstep's topology and events topics,
/// a latched /tf_static, an empty topic; every topic at the same times (ties), in 4 KiB chunks; an
/// attachment, metadata records and custom_data.
fn recording(dir: &Path) {
    recording_with(dir, ChunkCompression::None);
}

/// [`recording`] with chunks compressed by `compression`.
fn recording_with(dir: &Path, compression: ChunkCompression) {
    let opts = WriterOptions {
        chunk_size_bytes: 4096,
        compression,
        ..WriterOptions::default()
    };
    let mut w = BagWriter::create(dir, opts).unwrap();
    w.set_custom_data("lockstep.topology", "{\"m1\": 1}");
    let topics = [
        ("/a", "std_msgs/msg/String"),
        ("/a/lockstep_header", "lockstep_interfaces/msg/DependencyHeader"),
        ("/b", "std_msgs/msg/String"),
        ("/b/lockstep_header", "lockstep_interfaces/msg/DependencyHeader"),
        ("/camera", "sensor_msgs/msg/CompressedImage"),
        ("/tf_static", "tf2_msgs/msg/TFMessage"),
        ("/lockstep/topology/m1", "lockstep_interfaces/msg/Topology"),
        ("/lockstep/events/n1", "lockstep_interfaces/msg/NodeEvents"),
        ("/empty", "std_msgs/msg/String"),
    ];
    for (name, ty) in topics {
        w.add_topic(spec(name, ty)).unwrap();
    }
    for i in 0..100u64 {
        let t = T0 + i * 10 * MS;
        let mut write = |topic: &str, len: usize| {
            let data = common::bytes(i * 31 + topic.len() as u64, len);
            w.write_id(w.topic_id(topic).unwrap(), t, t - i, &data).unwrap();
        };
        if i == 0 {
            write("/lockstep/topology/m1", 40);
        }
        if i == 0 || i == 20 {
            write("/tf_static", 30);
        }
        write("/a", 16);
        write("/a/lockstep_header", 24);
        if i % 2 == 0 {
            write("/b", 16);
            write("/b/lockstep_header", 24);
        }
        write("/camera", 200);
        if i % 10 == 0 {
            write("/lockstep/events/n1", 50);
        }
    }
    let mut record = BTreeMap::new();
    record.insert("m1".to_string(), "reads=/a;writes=/b".to_string());
    w.write_metadata_record("lockstep_topology", &record).unwrap();
    w.attach(
        "lockstep/topology.pb",
        "application/x-protobuf",
        T0,
        T0,
        b"\x0a\x02m1",
    )
    .unwrap();
    w.finish().unwrap();
}

/// Every file of a bag directory with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let files = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path());
    files
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

fn topic_names(path: &Path) -> BTreeSet<String> {
    let reader = BagReader::open(path).unwrap();
    reader.topics().iter().map(|t| t.metadata.name.clone()).collect()
}

/// The attachments, metadata records (rosbag2's left out) and custom_data of a bag, for equality.
type Extras = (
    Vec<(String, Vec<u8>)>,
    Vec<(String, BTreeMap<String, String>)>,
    BTreeMap<String, String>,
);

fn extras(path: &Path) -> Extras {
    let reader = BagReader::open(path).unwrap();
    let attachments = reader
        .attachments()
        .unwrap()
        .into_iter()
        .map(|a| (a.name, a.data));
    let records = reader.metadata_records().unwrap().into_iter();
    let records = records
        .filter(|r| r.name != "rosbag2")
        .map(|r| (r.name, r.entries));
    let custom = reader.metadata().custom_data.clone();
    (attachments.collect(), records.collect(), custom)
}

#[test]
fn filter_keeps_the_topics_the_range_the_latched_and_the_lockstep_data() {
    let tmp = tempfile::tempdir().unwrap();
    let (input, output) = (tmp.path().join("in"), tmp.path().join("out"));
    recording(&input);
    let before = snapshot(&input);
    let args = [
        "filter",
        s(&input),
        s(&output),
        "--topics",
        "/a",
        "/tf_static",
        "--start-offset",
        "0.3",
        "--end-offset",
        "0.7",
        "--last-per-channel-topic-regex",
        "/tf_static",
    ];
    let text = bag(&args).unwrap();

    let kept = [
        "/a",
        "/a/lockstep_header",
        "/tf_static",
        "/lockstep/topology/m1",
        "/lockstep/events/n1",
    ];
    let (start, end) = (T0 + 300 * MS, T0 + 700 * MS);
    let all = read(&input);
    let mut expected: Msgs = Vec::new();
    for latched in ["/lockstep/topology/m1", "/tf_static"] {
        let last = all.iter().rfind(|m| m.0 == latched && m.1 < start);
        expected.push(last.unwrap().clone());
    }
    expected.sort_by_key(|m| m.1);
    assert_eq!(
        expected[1].1,
        T0 + 200 * MS,
        "the second /tf_static, not the first"
    );
    expected.extend(
        all.iter()
            .filter(|m| kept.contains(&m.0.as_str()) && (start..end).contains(&m.1))
            .cloned(),
    );
    assert_eq!(read(&output), expected);
    assert!(
        text.starts_with(&format!(
            "kept {} of {} messages (2 from before the start) on 5 topics",
            expected.len(),
            all.len()
        )),
        "{text}"
    );
    // Topics keep their QoS, type hash and definition; the extra data comes along.
    let (a, b) = (
        BagReader::open(&input).unwrap(),
        BagReader::open(&output).unwrap(),
    );
    for topic in b.topics() {
        let original = a
            .topics()
            .iter()
            .find(|t| t.metadata.name == topic.metadata.name)
            .unwrap();
        assert_eq!(
            (&topic.metadata, &topic.definition),
            (&original.metadata, &original.definition)
        );
    }
    assert_eq!(topic_names(&output), kept.iter().map(|t| t.to_string()).collect());
    assert_eq!(extras(&output), extras(&input));
    assert_eq!(snapshot(&input), before, "the input changed");
}

#[test]
fn lockstep_data_goes_only_when_an_exclusion_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    recording(&input);
    let cases: [(&[&str], &[&str]); 4] = [
        (&["-e", "^/(a|b)$", "-x", "^/b"], &["/a", "/a/lockstep_header"]),
        (&["-x", ".*"], &[]),
        (
            &["--regex", "cam", "--exclude-regex", "^/lockstep/events/"],
            &["/camera"],
        ),
        (
            &["-x", "lockstep"],
            &["/a", "/b", "/camera", "/tf_static", "/empty"],
        ),
    ];
    for (i, (options, data)) in cases.iter().enumerate() {
        let output = tmp.path().join(format!("out{i}"));
        let mut args = vec!["filter", s(&input), s(&output)];
        args.extend_from_slice(options);
        bag(&args).unwrap();
        let mut want: BTreeSet<String> = data.iter().map(|t| t.to_string()).collect();
        if !options.contains(&"lockstep") {
            want.insert("/lockstep/topology/m1".into());
            if !options.contains(&"^/lockstep/events/") {
                want.insert("/lockstep/events/n1".into());
            }
        }
        assert_eq!(topic_names(&output), want, "{options:?}");
        let got = read(&output);
        let expected: Msgs = read(&input).into_iter().filter(|m| want.contains(&m.0)).collect();
        assert_eq!(got, expected, "{options:?}");
    }
}

#[test]
fn epoch_times_are_exact_to_the_nanosecond() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    recording(&input);
    let times = |start: &str, end: &str, name: &str| -> BTreeSet<u64> {
        let output = tmp.path().join(name);
        let args = [
            "filter",
            s(&input),
            s(&output),
            "--start-time",
            start,
            "--end-time",
            end,
            "-x",
            "^/lockstep",
        ];
        bag(&args).unwrap();
        read(&output).into_iter().map(|m| m.1).collect()
    };
    assert_eq!(
        times("1700000000.3", "1700000000.31", "a"),
        [T0 + 300 * MS].into()
    );
    assert_eq!(
        times("1700000000.300000001", "1700000000.310000001", "b"),
        [T0 + 310 * MS].into()
    );
    assert_eq!(
        times("1700000000.98", "1800000000", "c"),
        [T0 + 980 * MS, T0 + 990 * MS].into()
    );
}

#[test]
fn a_sqlite3_bag_filters_like_any_other() {
    let tmp = tempfile::tempdir().unwrap();
    let input = common::rosbag2_bags().join("sqlite3/talker");
    let output = tmp.path().join("out");
    let before = snapshot(&input);
    bag(&[
        "filter",
        s(&input),
        s(&output),
        "--topics",
        "/topic",
        "--start-offset",
        "0.000001",
    ])
    .unwrap();
    let all = read(&input);
    let first = all[0].1;
    let expected: Msgs = all
        .into_iter()
        .filter(|m| m.0 == "/topic" && m.1 >= first + 1000)
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(read(&output), expected);
    assert_eq!(snapshot(&input), before);
}

#[test]
fn errors_are_one_line_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    recording(&input);
    let before = snapshot(&input);
    let out = tmp.path().join("out");
    let (i, o) = (s(&input), s(&out));
    let inside = input.join("sub");
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["filter", i, o, "--topics", "/nope"],
            vec!["`/nope`", "/camera", i],
        ),
        (vec!["filter", i, o, "-e", "("], vec!["--regex", "`(`"]),
        (
            vec!["filter", i, o, "--last-per-channel-topic-regex", "a)"],
            vec!["--last-per-channel-topic-regex"],
        ),
        (
            vec!["filter", i, o, "--start-offset", "0.5", "--end-offset", "0.5"],
            vec!["time range is empty", i],
        ),
        (vec!["filter", i, o, "--start-time=-3"], vec!["-3", "seconds"]),
        (
            vec!["filter", i, o, "--start-time", "1", "--start-offset", "1"],
            vec!["--start-offset"],
        ),
        (vec!["filter", i, s(&inside)], vec!["inside the input bag"]),
        (vec!["filter", "/nonexistent", o], vec!["/nonexistent"]),
        (vec!["merge", o, i], vec!["2"]),
        (vec!["merge", o, i, "/nonexistent"], vec!["/nonexistent"]),
        (vec!["du", "/nonexistent"], vec!["/nonexistent"]),
    ];
    for (args, expected) in cases {
        let err = bag(&args).expect_err(&format!("{args:?} succeeded"));
        let first = err.lines().next().unwrap_or_default();
        assert!(
            !first.is_empty() && err.lines().filter(|l| !l.trim().is_empty()).count() <= 3,
            "{err}"
        );
        for part in expected {
            assert!(err.contains(part), "{args:?}: `{part}` missing from: {err}");
        }
        assert!(!out.exists() && !inside.exists(), "{args:?} created its output");
    }
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("x"), b"").unwrap();
    let err = bag(&["filter", i, o]).unwrap_err();
    assert!(err.contains("output exists") && err.contains(o), "{err}");
    assert_eq!(snapshot(&input), before, "the input changed");
}
