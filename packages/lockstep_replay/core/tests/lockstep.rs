//! Lock-step replay in-process on the recording of `common` (/in -> double -> /mid -> count -> /out).
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod common;

use common::{cdr_string, count, modules, record, text_of, Count, Cut};
use lockstep_bag::BagReader;
use lockstep_replay::lockstep::{
    replay, write_bag, FrameSelection, LockstepError, MissingUpstream, Module, Recording, ReplayOptions,
    StepInput,
};
use lockstep_trace::{digest, TraceHeader};

const N: u64 = 6;

fn recorded(cut: Cut) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    record(&dir, N, cut, None);
    (tmp, dir)
}

/// File name -> (size, digest of the bytes) of every file in `dir`.
fn files(dir: &Path) -> BTreeMap<String, (usize, u64)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                (bytes.len(), digest(&bytes)),
            )
        })
        .collect()
}

#[test]
fn every_frame_replays_exactly_in_dag_order_and_the_output_bag_is_byte_identical() {
    let (tmp, dir) = recorded(Cut::None);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    assert_eq!(recording.frames.len() as u64, 2 * N);
    let mut runs = Vec::new();
    for run in 0..3 {
        let outcome = replay(&recording, &mut modules(0), &ReplayOptions::default()).unwrap();
        assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
        assert_eq!(
            outcome.exact_by_channel(),
            BTreeMap::from([("/mid".to_owned(), (N, N)), ("/out".to_owned(), (N, N))])
        );
        // Every count frame consumed the simulated /mid, never the recorded one.
        let order: Vec<&str> = outcome
            .outputs
            .iter()
            .map(|o| o.header.channel_name.as_str())
            .collect();
        assert_eq!(&order[..4], ["/mid", "/out", "/mid", "/out"]);
        // Same bag name each run (file names derive from it), in a directory of its own.
        let out = tmp.path().join(format!("run{run}")).join("simulated");
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        write_bag(&recording, &outcome, &out).unwrap();
        runs.push(files(&out));
    }
    assert!(runs[0].keys().any(|k| k.ends_with(".mcap")));
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[1], runs[2]);
    // The simulated bag is itself a recording: it loads, and replays exactly again.
    let again = Recording::load(&BagReader::open(tmp.path().join("run0/simulated")).unwrap()).unwrap();
    assert_eq!(again.frames.len() as u64, 2 * N);
    let only_count = replay(
        &again,
        &mut [Box::new(Count { extra: 0 }) as Box<dyn Module>],
        &ReplayOptions::default(),
    )
    .unwrap();
    assert_eq!(only_count.exact_by_channel()["/out"], (N, N));
    assert_eq!(only_count.not_live, vec!["double".to_owned()]);
}

#[test]
fn a_changed_module_is_found_at_its_first_differing_frame() {
    let (_tmp, dir) = recorded(Cut::None);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    let outcome = replay(&recording, &mut modules(1), &ReplayOptions::default()).unwrap();
    let exact = outcome.exact_by_channel();
    assert_eq!(exact["/mid"], (N, N));
    assert_eq!(exact["/out"], (N, 0));
    let first = outcome.first_differences();
    assert_eq!(first.keys().collect::<Vec<_>>(), ["/out"]);
    assert_eq!(
        (
            first["/out"].header.module_name.as_str(),
            first["/out"].header.sequence_num
        ),
        ("count", 0)
    );
}

#[test]
fn one_module_s_frames_bring_the_frames_they_depend_on() {
    let (_tmp, dir) = recorded(Cut::None);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    let options = ReplayOptions {
        frames: FrameSelection::Module("double".into()),
        ..ReplayOptions::default()
    };
    let outcome = replay(&recording, &mut modules(0), &options).unwrap();
    assert_eq!(outcome.selected as u64, N);
    let options = ReplayOptions {
        frames: FrameSelection::Module("count".into()),
        ..ReplayOptions::default()
    };
    assert_eq!(
        replay(&recording, &mut modules(0), &options).unwrap().selected as u64,
        2 * N
    );
}

#[test]
fn an_output_recorded_without_its_header_is_reported_as_skipped() {
    let (_tmp, dir) = recorded(Cut::LastHeader);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    assert_eq!(recording.frames.len() as u64, 2 * N - 1);
    assert_eq!(recording.headerless.len(), 1, "{:?}", recording.headerless);
    let outcome = replay(&recording, &mut modules(0), &ReplayOptions::default()).unwrap();
    let exact = outcome.exact_by_channel();
    assert_eq!(exact["/out"], (N - 1, N - 1));
    // Every recorded /out message is either replayed or reported as skipped, with the reason.
    let skipped: Vec<(&str, &str, Option<u32>)> = outcome
        .skipped
        .iter()
        .map(|s| (s.module.as_str(), s.channel.as_str(), s.sequence_num))
        .collect();
    assert_eq!(skipped, vec![("count", "/out", None)]);
    // The headerless output is one of the selected frames: replayed + skipped = selected.
    assert_eq!(
        outcome.selected,
        outcome.outputs.len() + outcome.skipped.len(),
        "{outcome:?}"
    );
    assert!(
        outcome.skipped[0].reason.contains("no dependency header"),
        "{}",
        outcome.skipped[0].reason
    );
    // Replaying only the other module does not report it.
    let only_double = ReplayOptions {
        frames: FrameSelection::Module("double".into()),
        ..ReplayOptions::default()
    };
    assert!(replay(&recording, &mut modules(0), &only_double)
        .unwrap()
        .skipped
        .is_empty());
}

#[test]
fn a_recording_cut_in_the_middle_skips_or_refuses_frames() {
    let (_tmp, dir) = recorded(Cut::FirstInput);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    // Without backup inputs (by default the recorded /mid #0 would feed count #0).
    let skip = ReplayOptions {
        missing_upstream: MissingUpstream::Skip,
        ..ReplayOptions::default()
    };
    let outcome = replay(&recording, &mut modules(0), &skip).unwrap();
    let skipped: Vec<(&str, Option<u32>)> = outcome
        .skipped
        .iter()
        .map(|s| (s.module.as_str(), s.sequence_num))
        .collect();
    assert_eq!(skipped, vec![("double", Some(0)), ("count", Some(0))]);
    assert!(
        outcome.skipped[0].reason.contains("/in"),
        "{}",
        outcome.skipped[0].reason
    );
    assert_eq!(outcome.outputs.len() as u64, 2 * (N - 1));
    let strict = ReplayOptions { strict: true, ..skip };
    let err = replay(&recording, &mut modules(0), &strict).unwrap_err();
    assert!(
        matches!(err, LockstepError::Unreplayable { ref module, sequence_num: 0, .. } if module == "double"),
        "{err}"
    );
}

#[test]
fn bad_recordings_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let cyclic = tmp.path().join("cyclic");
    let wiring: BTreeMap<String, String> = [
        ("count".to_owned(), "reads=/mid;writes=/out".to_owned()),
        ("double".to_owned(), "reads=/in,/out;writes=/mid".to_owned()),
    ]
    .into();
    record(&cyclic, N, Cut::None, Some(wiring));
    let err = Recording::load(&BagReader::open(&cyclic).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cycle") && err.contains("count") && err.contains("double"),
        "{err}"
    );

    let (_tmp, dir) = recorded(Cut::None);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    struct Stranger;
    impl Module for Stranger {
        fn name(&self) -> &str {
            "stranger"
        }
        fn step(&mut self, _: &TraceHeader, _: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
            Err("never".into())
        }
    }
    let err = replay(
        &recording,
        &mut [Box::new(Stranger) as Box<dyn Module>],
        &ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("`stranger` is not in the recorded topology"),
        "{err}"
    );
    struct Failing;
    impl Module for Failing {
        fn name(&self) -> &str {
            "double"
        }
        fn step(&mut self, _: &TraceHeader, _: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
            Err("out of cheese".into())
        }
    }
    let err = replay(
        &recording,
        &mut [Box::new(Failing) as Box<dyn Module>],
        &ReplayOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("`double` failed on frame /mid #0: out of cheese"),
        "{err}"
    );
}

#[test]
fn downstream_modules_consume_the_simulated_output_never_the_recorded_one() {
    struct Triple;
    impl Module for Triple {
        fn name(&self) -> &str {
            "double"
        }
        fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
            assert!(!inputs[0].simulated, "/in is external: recorded");
            let text = text_of(inputs[0].data);
            Ok(cdr_string(&format!("{text}{text}{text}")))
        }
    }
    struct CheckedCount;
    impl Module for CheckedCount {
        fn name(&self) -> &str {
            "count"
        }
        fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
            assert!(inputs[0].simulated, "/mid has a live producer: simulated");
            Ok(cdr_string(&count(&text_of(inputs[0].data), 0)))
        }
    }
    let (_tmp, dir) = recorded(Cut::None);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    let mut live: Vec<Box<dyn Module>> = vec![Box::new(Triple), Box::new(CheckedCount)];
    let outcome = replay(&recording, &mut live, &ReplayOptions::default()).unwrap();
    // Both channels differ: count saw the tripled text, so its lengths changed too.
    assert_eq!(outcome.exact_by_channel()["/mid"], (N, 0));
    assert_eq!(outcome.exact_by_channel()["/out"], (N, 0));
    // The simulated /out headers name the simulated /mid by its new digest.
    let mids: Vec<u64> = outcome
        .outputs
        .iter()
        .filter(|o| o.header.channel_name == "/mid")
        .map(|o| o.header.payload_digest)
        .collect();
    let named: Vec<u64> = outcome
        .outputs
        .iter()
        .filter(|o| o.header.channel_name == "/out")
        .map(|o| o.header.inputs[0].payload_digest)
        .collect();
    assert_eq!(mids, named);
}
