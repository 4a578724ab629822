//! A recording cut short (the recorder killed) holds only the topology records the recorder stored while
//! recording (`lockstep_topology_update`, each the topology learnt so far); repaired by reindex, it loads and
//! replays with their union.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::{record, Cut};
use lockstep_bag::{reindex_with, BagReader, BagWriter, ReindexTarget, TopicSpec, WriterOptions};
use lockstep_replay::lockstep::{Recording, TopologySource};

/// A copy of the recording at `src` as a killed recorder leaves it: no `lockstep_topology` record, the
/// given updates instead, no summary.
fn killed_copy(src: &std::path::Path, dst: &std::path::Path, updates: &[BTreeMap<String, String>]) {
    let reader = BagReader::open(src).unwrap();
    let mut w = BagWriter::create(dst, WriterOptions::default()).unwrap();
    for t in reader.topics() {
        let spec = TopicSpec::new(&t.metadata.name, &t.metadata.type_name)
            .with_definition(t.definition.clone().unwrap());
        w.add_topic(spec).unwrap();
    }
    for (k, m) in reader.messages().enumerate() {
        let m = m.unwrap();
        w.write(&m.topic, m.log_time_ns, &m.data).unwrap();
        if let Some(update) = updates.get(k) {
            w.write_metadata_record("lockstep_topology_update", update)
                .unwrap();
        }
    }
    w.flush().unwrap();
    // Killed: nothing in Drop runs, no summary or footer is written.
    std::mem::forget(w);
}

#[test]
fn a_killed_recording_repaired_by_reindex_loads_the_union_of_its_topology_updates() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    record(&src, 4, Cut::None, None);
    let double: BTreeMap<String, String> = [("double".to_owned(), "reads=/in;writes=/mid".to_owned())].into();
    let mut both = double.clone();
    both.insert("count".to_owned(), "reads=/mid;writes=/out".to_owned());
    let killed = tmp.path().join("killed");
    killed_copy(&src, &killed, &[double.clone(), both]);
    let repaired = tmp.path().join("repaired");
    reindex_with(&killed, &ReindexTarget::NewOutput(repaired.clone())).unwrap();

    let recording = Recording::load(&BagReader::open(&repaired).unwrap()).unwrap();
    let full = Recording::load(&BagReader::open(&src).unwrap()).unwrap();
    assert_eq!(recording.topology, full.topology);
    assert_eq!(recording.frames.len(), full.frames.len());
    assert_eq!(recording.frames.len(), 8);

    // Only the first update: the topology known then.
    let early = tmp.path().join("early");
    killed_copy(&src, &early, &[double]);
    let repaired = tmp.path().join("early_repaired");
    reindex_with(&early, &ReindexTarget::NewOutput(repaired.clone())).unwrap();
    let recording = Recording::load(&BagReader::open(&repaired).unwrap()).unwrap();
    assert_eq!(recording.topology.components.len(), 1);

    // No topology record at all: once repaired, the dependency headers the recording holds give the full
    // topology.
    let none = tmp.path().join("none");
    killed_copy(&src, &none, &[]);
    let repaired = tmp.path().join("none_repaired");
    reindex_with(&none, &ReindexTarget::NewOutput(repaired.clone())).unwrap();
    let recording = Recording::load(&BagReader::open(&repaired).unwrap()).unwrap();
    assert_eq!(recording.topology_source, TopologySource::Headers { sidecars: 2 });
    assert_eq!(recording.topology, full.topology);
    assert_eq!(recording.frames.len(), full.frames.len());
}
