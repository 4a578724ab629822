//! A bag without the recorder's topology record (a copy written by another tool, `ros2 bag record`, a cut
//! recording) loads with the topology its dependency headers describe, and replays exactly as the
//! original; a bag with neither record nor headers is refused naming the bag.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{modules, record, Cut};
use lockstep_bag::{BagReader, BagWriter, TopicSpec, WriterOptions};
use lockstep_replay::lockstep::{
    replay, LockstepError, Recording, ReplayOptions, TopologySource, HEADER_SUFFIX,
};

const N: u64 = 5;

/// A complete copy of the bag at `src` (every topic, message and definition, closed properly) without any
/// metadata record, keeping the messages of the topics `keep` accepts.
fn copy_without_records(src: &Path, dst: &Path, keep: impl Fn(&str) -> bool) {
    let reader = BagReader::open(src).unwrap();
    let mut w = BagWriter::create(dst, WriterOptions::default()).unwrap();
    for t in reader.topics() {
        let spec = TopicSpec::new(&t.metadata.name, &t.metadata.type_name)
            .with_qos(t.metadata.offered_qos_profiles.clone())
            .with_definition(t.definition.clone().unwrap());
        w.add_topic(spec).unwrap();
    }
    for m in reader.messages() {
        let m = m.unwrap();
        if keep(&m.topic) {
            w.write(&m.topic, m.log_time_ns, &m.data).unwrap();
        }
    }
    w.finish().unwrap();
    let copy = BagReader::open(dst).unwrap();
    assert!(
        copy.metadata_records()
            .unwrap()
            .iter()
            .all(|r| !r.name.starts_with("lockstep_topology")),
        "the copy still holds a topology record"
    );
}

fn load(dir: &Path) -> Result<Recording, LockstepError> {
    Recording::load(&BagReader::open(dir).unwrap())
}

#[test]
fn a_bag_without_the_topology_record_replays_with_the_topology_of_its_headers() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    record(&src, N, Cut::None, None);
    let copy = tmp.path().join("copy");
    copy_without_records(&src, &copy, |_| true);

    let original = load(&src).unwrap();
    assert_eq!(original.topology_source, TopologySource::Record);
    let rebuilt = load(&copy).unwrap();
    assert_eq!(rebuilt.topology_source, TopologySource::Headers { sidecars: 2 });
    assert_eq!(
        rebuilt.topology_source.to_string(),
        "rebuilt from 2 dependency header topics (no topology record in the bag)"
    );
    assert_eq!(rebuilt.topology, original.topology);
    assert_eq!(rebuilt.topology.external_channels(), vec!["/in".to_owned()]);
    let ids = |r: &Recording| r.frames.iter().map(|f| f.id()).collect::<Vec<_>>();
    assert_eq!(ids(&rebuilt), ids(&original));
    assert_eq!(rebuilt.frames.len() as u64, 2 * N);

    // The same outputs, frame for frame, byte for byte.
    let a = replay(&original, &mut modules(0), &ReplayOptions::default()).unwrap();
    let b = replay(&rebuilt, &mut modules(0), &ReplayOptions::default()).unwrap();
    assert!(b.skipped.is_empty(), "{:?}", b.skipped);
    assert_eq!(b.exact_by_channel(), a.exact_by_channel());
    assert_eq!(b.exact_by_channel()["/out"], (N, N));
    let outputs = |o: &lockstep_replay::lockstep::ReplayOutcome| {
        o.outputs
            .iter()
            .map(|s| {
                (
                    s.header.channel_name.clone(),
                    s.header.sequence_num,
                    s.data.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(outputs(&b), outputs(&a));
}

#[test]
fn headers_of_only_one_module_give_that_module_and_the_producers_its_inputs_name() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    record(&src, N, Cut::None, None);
    // Only /out's headers kept (a bag recorded with a topic list that left out /mid/lockstep_header): the
    // headers of `count` still name `double` as the producer of /mid.
    let copy = tmp.path().join("copy");
    copy_without_records(&src, &copy, |t| t != "/mid/lockstep_header");
    let rebuilt = load(&copy).unwrap();
    assert_eq!(rebuilt.topology_source, TopologySource::Headers { sidecars: 1 });
    let modules: Vec<&str> = rebuilt
        .topology
        .components
        .iter()
        .map(|c| c.module_name.as_str())
        .collect();
    assert_eq!(modules, ["count", "double"]);
    assert_eq!(rebuilt.producer("/mid"), Some("double"));
    assert_eq!(rebuilt.producer("/out"), Some("count"));
    // Only count's frames are in the bag.
    assert!(rebuilt.frames.iter().all(|f| f.header.module_name == "count"));
    assert_eq!(rebuilt.frames.len() as u64, N);
}

#[test]
fn a_bag_with_neither_record_nor_headers_is_refused_naming_the_bag() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    record(&src, N, Cut::None, None);
    // Header topics declared but empty, and no header topic at all: both refused.
    let empty = tmp.path().join("empty_headers");
    copy_without_records(&src, &empty, |t| !t.ends_with(HEADER_SUFFIX));
    let err = load(&empty).unwrap_err();
    assert!(matches!(err, LockstepError::NoTopology { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("empty_headers"), "{text}");
    assert!(
        text.contains("lockstep_topology") && text.contains("/lockstep_header"),
        "{text}"
    );

    let plain = tmp.path().join("plain");
    let reader = BagReader::open(&src).unwrap();
    let mut w = BagWriter::create(&plain, WriterOptions::default()).unwrap();
    for t in reader
        .topics()
        .iter()
        .filter(|t| !t.metadata.name.ends_with(HEADER_SUFFIX))
    {
        w.add_topic(
            TopicSpec::new(&t.metadata.name, &t.metadata.type_name)
                .with_definition(t.definition.clone().unwrap()),
        )
        .unwrap();
    }
    for m in reader.messages() {
        let m = m.unwrap();
        if !m.topic.ends_with(HEADER_SUFFIX) {
            w.write(&m.topic, m.log_time_ns, &m.data).unwrap();
        }
    }
    w.finish().unwrap();
    let err = load(&plain).unwrap_err();
    assert!(matches!(err, LockstepError::NoTopology { .. }), "{err}");
    assert!(err.to_string().starts_with(&plain.display().to_string()), "{err}");
}

#[test]
fn headers_that_describe_a_cycle_are_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    record(&src, N, Cut::None, None);
    let copy = tmp.path().join("copy");
    copy_without_records(&src, &copy, |_| true);
    // A header of `double` that says it read /out (written by count, which reads /mid from double).
    let reader = BagReader::open(&copy).unwrap();
    let recording = Recording::load(&reader).unwrap();
    let (type_name, definition, schema) = recording.header_type.clone().unwrap();
    let mut looped = recording
        .frames
        .iter()
        .find(|f| f.header.module_name == "double")
        .unwrap()
        .header
        .clone();
    let mut input = recording
        .frames
        .iter()
        .find(|f| f.header.module_name == "count")
        .unwrap()
        .header
        .clone()
        .inputs[0]
        .clone();
    input.module_name = "count".into();
    input.channel_name = "/out".into();
    looped.inputs.push(input);
    let cyclic = tmp.path().join("cyclic");
    let mut w = BagWriter::create(&cyclic, WriterOptions::default()).unwrap();
    for t in reader.topics() {
        w.add_topic(
            TopicSpec::new(&t.metadata.name, &t.metadata.type_name)
                .with_definition(t.definition.clone().unwrap()),
        )
        .unwrap();
    }
    for m in reader.messages() {
        let m = m.unwrap();
        w.write(&m.topic, m.log_time_ns, &m.data).unwrap();
    }
    let bytes = schema
        .encode(&lockstep_replay::lockstep::header_to_value(&looped, &schema))
        .unwrap();
    w.write("/mid/lockstep_header", 9_000_000_000, &bytes).unwrap();
    w.finish().unwrap();
    assert_eq!(type_name, "lockstep_interfaces/msg/DependencyHeader");
    assert!(!definition.text.is_empty());
    let err = load(&cyclic).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, LockstepError::Topology(_)), "{text}");
    assert!(
        text.contains("cycle") && text.contains("double") && text.contains("count"),
        "{text}"
    );
}
