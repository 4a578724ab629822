//! The output bag of a replay is itself a recording: it holds the recorded inputs the replayed frames
//! consumed (external inputs, outputs of modules that were not live, with their headers), so replaying it
//! with the same modules gives the same outputs again. Recording of `common`: /in -> double -> /mid -> count
//! -> /out.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod common;

use common::{modules, record, Count, Cut};
use lockstep_bag::qos::{History, Reliability};
use lockstep_bag::{BagReader, BagWriter, QosProfile, TopicSpec, WriterOptions};
use lockstep_replay::lockstep::{
    replay, write_bag, Module, Recording, ReplayOptions, ReplayOutcome, HEADER_SUFFIX,
};
use lockstep_trace::digest;

const N: u64 = 6;

fn load(dir: &Path) -> Recording {
    Recording::load(&BagReader::open(dir).unwrap()).unwrap()
}

/// Replays `recording` with `live` and writes the output bag to `<parent>/simulated` (same bag name, so
/// same file names, for every parent).
fn replay_into(
    recording: &Recording,
    live: &mut [Box<dyn Module>],
    parent: &Path,
) -> (ReplayOutcome, PathBuf) {
    let outcome = replay(recording, live, &ReplayOptions::default()).unwrap();
    let out = parent.join("simulated");
    std::fs::create_dir_all(parent).unwrap();
    write_bag(recording, &outcome, &out).unwrap();
    (outcome, out)
}

/// (channel, sequence number, data) of every output, in replay order.
fn outputs(outcome: &ReplayOutcome) -> Vec<(String, u32, Vec<u8>)> {
    outcome
        .outputs
        .iter()
        .map(|o| {
            (
                o.header.channel_name.clone(),
                o.header.sequence_num,
                o.data.clone(),
            )
        })
        .collect()
}

/// Topic -> (log time, digest of the bytes) of every message of the bag at `dir`, in log order.
fn messages(dir: &Path) -> BTreeMap<String, Vec<(u64, u64)>> {
    let reader = BagReader::open(dir).unwrap();
    let mut out: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for m in reader.messages() {
        let m = m.unwrap();
        out.entry(m.topic.to_string())
            .or_default()
            .push((m.log_time_ns, digest(&m.data)));
    }
    out
}

/// File name -> digest of the bytes of every file in `dir`.
fn files(dir: &Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                digest(&std::fs::read(&p).unwrap()),
            )
        })
        .collect()
}

fn assert_every_frame_exact(outcome: &ReplayOutcome, frames: usize) {
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    assert_eq!(outcome.outputs.len(), frames);
    for o in &outcome.outputs {
        assert!(
            o.exact && o.inputs_as_recorded,
            "{} #{}",
            o.header.channel_name,
            o.header.sequence_num
        );
    }
}

#[test]
fn the_output_bag_holds_the_external_inputs_and_replays_to_the_same_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    record(&dir, N, Cut::None, None);
    let recording = load(&dir);
    let (first, out) = replay_into(&recording, &mut modules(0), &tmp.path().join("first"));

    // The recorded /in messages, at their recorded log times, beside the outputs and their headers.
    let recorded = messages(&dir);
    let written = messages(&out);
    assert_eq!(written["/in"], recorded["/in"]);
    assert_eq!(
        written.keys().collect::<Vec<_>>(),
        [
            "/in",
            "/mid",
            "/mid/lockstep_header",
            "/out",
            "/out/lockstep_header"
        ]
    );

    // Replayed with the same modules: the same outputs, every frame exact, nothing skipped.
    let again = load(&out);
    assert_eq!(again.frames.len() as u64, 2 * N);
    let (second, out2) = replay_into(&again, &mut modules(0), &tmp.path().join("second"));
    assert_every_frame_exact(&second, first.outputs.len());
    assert_eq!(outputs(&second), outputs(&first));
    // And its own output bag is byte for byte the one it was replayed from.
    assert_eq!(files(&out2), files(&out));
}

#[test]
fn outputs_of_modules_not_live_are_kept_with_their_headers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    record(&dir, N, Cut::None, None);
    let recording = load(&dir);
    let only_count = || vec![Box::new(Count { extra: 0 }) as Box<dyn Module>];
    let (first, out) = replay_into(&recording, &mut only_count(), &tmp.path().join("first"));

    // double was not live: the recorded /mid it produced, with its headers; /in was consumed by no replayed
    // frame, so it is not there.
    let recorded = messages(&dir);
    let written = messages(&out);
    assert_eq!(written["/mid"], recorded["/mid"]);
    assert_eq!(written["/mid/lockstep_header"], recorded["/mid/lockstep_header"]);
    assert!(!written.contains_key("/in"), "{:?}", written.keys());

    let again = load(&out);
    let (second, _) = replay_into(&again, &mut only_count(), &tmp.path().join("second"));
    assert_every_frame_exact(&second, N as usize);
    assert_eq!(outputs(&second), outputs(&first));
    assert_eq!(second.not_live, vec!["double".to_owned()]);
}

#[test]
fn a_changed_module_s_output_bag_replays_to_its_own_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    record(&dir, N, Cut::FirstInput, None);
    let recording = load(&dir);
    // count now adds one: its outputs differ from the recording. The first /in was not recorded: double's
    // first frame is skipped, and count's first frame gets the recorded /mid as a backup input.
    let (first, out) = replay_into(&recording, &mut modules(1), &tmp.path().join("first"));
    assert_eq!(first.exact_by_channel()["/out"], (N, 0));
    assert_eq!(first.exact_by_channel()["/mid"], (N - 1, N - 1));
    assert_eq!(first.backup_inputs, BTreeMap::from([("/mid".to_owned(), 1)]));
    assert_eq!(first.skipped.len(), 1, "{:?}", first.skipped);

    // The output bag is the changed run's recording: replayed with the changed modules, every frame is exact,
    // the same frame is skipped for the same reason and the same backup input stands in.
    let again = load(&out);
    let (second, _) = replay_into(&again, &mut modules(1), &tmp.path().join("second"));
    assert_eq!(second.skipped, first.skipped);
    assert_eq!(second.backup_inputs, first.backup_inputs);
    assert_eq!(outputs(&second), outputs(&first));
    assert!(second.outputs.iter().all(|o| o.exact));
}

#[test]
fn recorded_inputs_keep_their_type_definition_and_qos() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    record(&plain, N, Cut::None, None);
    // The same recording with /in offered best effort, depth 5 (as a sensor driver offers it).
    let sensor_qos = QosProfile {
        history: History::KeepLast,
        depth: 5,
        reliability: Reliability::BestEffort,
        ..QosProfile::default()
    };
    let dir = tmp.path().join("recorded");
    {
        let reader = BagReader::open(&plain).unwrap();
        let mut w = BagWriter::create(&dir, WriterOptions::default()).unwrap();
        for t in reader.topics() {
            let qos = if t.metadata.name == "/in" {
                vec![sensor_qos.clone()]
            } else {
                t.metadata.offered_qos_profiles.clone()
            };
            w.add_topic(
                TopicSpec::new(&t.metadata.name, &t.metadata.type_name)
                    .with_definition(t.definition.clone().unwrap())
                    .with_qos(qos),
            )
            .unwrap();
        }
        for m in reader.messages() {
            let m = m.unwrap();
            w.write(&m.topic, m.log_time_ns, &m.data).unwrap();
        }
        for r in reader
            .metadata_records()
            .unwrap()
            .into_iter()
            .filter(|r| r.name.starts_with("lockstep_"))
        {
            w.write_metadata_record(&r.name, &r.entries).unwrap();
        }
        w.finish().unwrap();
    }
    let recording = load(&dir);
    let (_, out) = replay_into(&recording, &mut modules(0), &tmp.path().join("first"));
    let written = BagReader::open(&out).unwrap();
    let topic = |name: &str| {
        written
            .topics()
            .iter()
            .find(|t| t.metadata.name == name)
            .unwrap_or_else(|| panic!("{name} is not in the output bag"))
            .clone()
    };
    let input = topic("/in");
    assert_eq!(input.metadata.offered_qos_profiles, vec![sensor_qos]);
    assert_eq!(input.metadata.type_name, "std_msgs/msg/String");
    assert_eq!(input.definition, recording.channels["/in"].definition);
    assert_eq!(
        topic(&format!("/out{HEADER_SUFFIX}")).metadata.type_name,
        recording.header_type.as_ref().unwrap().0
    );
    // The topology record is the recorded one.
    let records = written.metadata_records().unwrap();
    let topology = records.iter().find(|r| r.name == "lockstep_topology").unwrap();
    assert_eq!(
        topology.entries,
        BTreeMap::from([
            ("count".to_owned(), "reads=/mid;writes=/out".to_owned()),
            ("double".to_owned(), "reads=/in;writes=/mid".to_owned()),
        ])
    );
}

#[test]
fn an_input_a_live_module_reads_now_is_kept_and_named_in_the_topology() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    record(&dir, N, Cut::None, None);
    let recording = load(&dir);
    // Only count is live, and it now reads /in too (recorded: it did not): each step gets the latest /in.
    let options = ReplayOptions {
        live_reads: BTreeMap::from([("count".to_owned(), ["/in".to_owned(), "/mid".to_owned()].into())]),
        ..ReplayOptions::default()
    };
    let mut live = vec![Box::new(Count { extra: 0 }) as Box<dyn Module>];
    let first = replay(&recording, &mut live, &options).unwrap();
    assert_eq!(
        first.added_inputs,
        BTreeMap::from([(("count".to_owned(), "/in".to_owned()), N)])
    );
    let out = tmp.path().join("first").join("simulated");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    write_bag(&recording, &first, &out).unwrap();

    // The /in messages served and the recorded /mid are in the output bag, and its topology says count reads
    // /in: replayed with the same module, its headers name /in, so nothing needs adding any more.
    let written = messages(&out);
    assert_eq!(written["/in"], messages(&dir)["/in"]);
    let again = load(&out);
    assert_eq!(
        again.topology.component("count").unwrap().reader_channels,
        ["/in".to_owned(), "/mid".to_owned()].into()
    );
    let mut live = vec![Box::new(Count { extra: 0 }) as Box<dyn Module>];
    let second = replay(&again, &mut live, &options).unwrap();
    assert!(second.added_inputs.is_empty(), "{:?}", second.added_inputs);
    assert_every_frame_exact(&second, N as usize);
    assert_eq!(outputs(&second), outputs(&first));
}
