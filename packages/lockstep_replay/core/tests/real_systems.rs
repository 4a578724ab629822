//! Lock-step replay of recordings from real systems, in-process on the recording of `common`
//! (/in -> double -> /mid -> count -> /out): skewed host clocks, backup inputs, modules that read more than
//! when recorded, modules the recording does not have, and computations with two outputs.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

mod common;

use common::{cdr_string, modules, record, record_with_offset, text_of, Cut};
use lockstep_bag::BagReader;
use lockstep_replay::lockstep::{
    replay, LockstepError, MissingUpstream, Module, NewModule, Recording, ReplayOptions, StepInput,
};
use lockstep_trace::TraceHeader;

const N: u64 = 6;

fn load(cut: Cut, count_offset_ns: i64) -> (tempfile::TempDir, Recording) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    record_with_offset(&dir, N, cut, None, count_offset_ns);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    (tmp, recording)
}

#[test]
fn a_module_on_a_host_whose_clock_is_500_ms_behind_still_replays_every_frame_exactly() {
    let (_tmp, recording) = load(Cut::None, -500_000_000);
    // Every count frame is stamped before the double frame it consumed: stamps alone would order it first.
    let stamps: BTreeMap<&str, Vec<i64>> = recording.frames.iter().fold(BTreeMap::new(), |mut m, f| {
        m.entry(f.header.module_name.as_str())
            .or_insert_with(Vec::new)
            .push(f.header.start_time_ns);
        m
    });
    assert!(stamps["count"][0] < stamps["double"][0]);
    let outcome = replay(&recording, &mut modules(0), &ReplayOptions::default()).unwrap();
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    assert!(outcome.backup_inputs.is_empty(), "{:?}", outcome.backup_inputs);
    assert_eq!(outcome.exact_by_channel()["/out"], (N, N));
    assert!(outcome.outputs.iter().all(|o| o.inputs_as_recorded));
    let order: Vec<&str> = outcome
        .outputs
        .iter()
        .map(|o| o.header.channel_name.as_str())
        .collect();
    assert_eq!(&order[..4], ["/mid", "/out", "/mid", "/out"]);
}

#[test]
fn a_frame_whose_upstream_precedes_the_recording_gets_the_recorded_message_as_backup() {
    let (_tmp, recording) = load(Cut::FirstInput, 0);
    let outcome = replay(&recording, &mut modules(0), &ReplayOptions::default()).unwrap();
    // double #0 lacks /in (not recorded at all): skipped. count #0's /mid #0 was not simulated, but it was
    // recorded: count #0 computes from it.
    let skipped: Vec<(&str, Option<u32>)> = outcome
        .skipped
        .iter()
        .map(|s| (s.module.as_str(), s.sequence_num))
        .collect();
    assert_eq!(skipped, vec![("double", Some(0))]);
    assert_eq!(outcome.backup_inputs, BTreeMap::from([("/mid".to_owned(), 1)]));
    assert_eq!(outcome.exact_by_channel()["/out"], (N, N));
    assert_eq!(outcome.exact_by_channel()["/mid"], (N - 1, N - 1));

    let skip = ReplayOptions {
        missing_upstream: MissingUpstream::Skip,
        ..ReplayOptions::default()
    };
    let outcome = replay(&recording, &mut modules(0), &skip).unwrap();
    assert_eq!(outcome.skipped.len(), 2, "{:?}", outcome.skipped);
    assert!(outcome.backup_inputs.is_empty());
    assert_eq!(outcome.exact_by_channel()["/out"], (N - 1, N - 1));

    // `error` stops at the first frame that would need a backup input (double #0 is simply skipped: its
    // input is external and missing).
    let error = ReplayOptions {
        missing_upstream: MissingUpstream::Error,
        ..ReplayOptions::default()
    };
    let err = replay(&recording, &mut modules(0), &error).unwrap_err();
    assert!(
        matches!(err, LockstepError::Unreplayable { ref module, sequence_num: 0, .. } if module == "count"),
        "{err}"
    );
}

/// `count` now also reads /in and checks it is the /in its /mid came from.
struct CountReadingIn;
impl Module for CountReadingIn {
    fn name(&self) -> &str {
        "count"
    }
    fn step(&mut self, frame: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        let [mid, input] = inputs else {
            return Err(format!("{} inputs", inputs.len()));
        };
        if (mid.channel, input.channel) != ("/mid", "/in") || frame.inputs.len() != 2 {
            return Err(format!("inputs {} and {}", mid.channel, input.channel));
        }
        let (mid, input) = (text_of(mid.data), text_of(input.data));
        if mid != format!("{input}{input}") {
            return Err(format!("/in {input} is not the input of /mid {mid}"));
        }
        Ok(cdr_string(&mid.len().to_string()))
    }
}

#[test]
fn a_module_reading_a_channel_it_did_not_read_when_recorded_gets_the_latest_message() {
    let (_tmp, recording) = load(Cut::None, 0);
    let options = ReplayOptions {
        live_reads: BTreeMap::from([(
            "count".to_owned(),
            BTreeSet::from(["/mid".to_owned(), "/in".to_owned()]),
        )]),
        ..ReplayOptions::default()
    };
    let mut live: Vec<Box<dyn Module>> = vec![Box::new(common::Double), Box::new(CountReadingIn)];
    let outcome = replay(&recording, &mut live, &options).unwrap();
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    assert_eq!(outcome.exact_by_channel()["/out"], (N, N));
    assert_eq!(
        outcome.added_inputs,
        BTreeMap::from([(("count".to_owned(), "/in".to_owned()), N)])
    );
    // The simulated headers name the input served.
    let out = outcome
        .outputs
        .iter()
        .find(|o| o.header.channel_name == "/out")
        .unwrap();
    assert_eq!(out.header.inputs[1].channel_name, "/in");
}

/// A module the recording does not have: /mid -> /echo.
struct Echo;
impl Module for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        if !inputs[0].simulated {
            return Err("/mid has a live producer: it must be the simulated one".into());
        }
        Ok(cdr_string(&format!("echo {}", text_of(inputs[0].data))))
    }
}

#[test]
fn a_module_absent_from_the_recording_is_stepped_once_per_arrival_of_its_trigger() {
    let (_tmp, recording) = load(Cut::None, 0);
    let options = ReplayOptions {
        new_modules: vec![NewModule {
            name: "echo".into(),
            trigger: "/mid".into(),
            writes: vec!["/echo".into()],
            types: BTreeMap::from([("/echo".into(), "std_msgs/msg/String".into())]),
        }],
        ..ReplayOptions::default()
    };
    let mut live = modules(0);
    live.push(Box::new(Echo));
    let outcome = replay(&recording, &mut live, &options).unwrap();
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    assert_eq!(outcome.new_module_steps, BTreeMap::from([("echo".to_owned(), N)]));
    let echoes: Vec<String> = outcome
        .outputs
        .iter()
        .filter(|o| o.header.channel_name == "/echo")
        .map(|o| text_of(&o.data))
        .collect();
    assert_eq!(echoes.len() as u64, N);
    assert_eq!(echoes[1], "echo in1in1");
    // Each echo comes right after the /mid it consumed; the recorded modules stay exact.
    let order: Vec<&str> = outcome
        .outputs
        .iter()
        .map(|o| o.header.channel_name.as_str())
        .collect();
    assert_eq!(&order[..3], ["/mid", "/echo", "/out"]);
    assert_eq!(outcome.exact_by_channel()["/out"], (N, N));
    assert_eq!(outcome.exact_by_channel()["/echo"], (N, 0));

    // Without the declaration it is refused by name.
    let mut live = modules(0);
    live.push(Box::new(Echo));
    let err = replay(&recording, &mut live, &ReplayOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("`echo` is not in the recorded topology"),
        "{err}"
    );
}

/// `double` answering each computation on /mid and on a second channel /mid2 (one step, two outputs).
struct Split {
    steps: usize,
}
impl Module for Split {
    fn name(&self) -> &str {
        "double"
    }
    fn step(&mut self, _: &TraceHeader, _: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        Err("a computation of two outputs must be one step".into())
    }
    fn step_group(
        &mut self,
        frames: &[&TraceHeader],
        inputs: &[StepInput<'_>],
    ) -> Result<Vec<Vec<u8>>, String> {
        self.steps += 1;
        let text = text_of(inputs[0].data);
        Ok(frames
            .iter()
            .map(|f| match f.channel_name.as_str() {
                "/mid" => cdr_string(&format!("{text}{text}")),
                _ => cdr_string(&text.len().to_string()),
            })
            .collect())
    }
}

#[test]
fn one_computation_with_two_outputs_is_one_step() {
    let (_tmp, mut recording) = load(Cut::None, 0);
    // Give each double computation a second output, /mid2, as a module publishing twice per
    // computation records it: same module, start stamp and inputs.
    let mut extra = Vec::new();
    for f in recording
        .frames
        .iter()
        .filter(|f| f.header.module_name == "double")
    {
        let mut second = f.clone();
        second.header.channel_name = "/mid2".into();
        let text = text_of(
            &recording
                .payload("/in", f.header.inputs[0].payload_digest)
                .unwrap(),
        );
        let data = cdr_string(&text.len().to_string());
        second.header.payload_digest = lockstep_trace::digest(&data);
        extra.push(second);
    }
    recording.frames.extend(extra);
    let mut live: Vec<Box<dyn Module>> = vec![Box::new(Split { steps: 0 })];
    let outcome = replay(&recording, &mut live, &ReplayOptions::default()).unwrap();
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    assert_eq!(outcome.exact_by_channel()["/mid"], (N, N));
    assert_eq!(outcome.exact_by_channel()["/mid2"], (N, N));
    assert_eq!(outcome.selected as u64, 2 * N);
}

#[test]
fn a_module_answering_fewer_outputs_than_its_computation_had_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    record(&dir, N, Cut::None, None);
    let mut recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    let mut second = recording.frames[0].clone();
    second.header.channel_name = "/mid2".into();
    recording.frames.insert(1, second);
    let err = replay(&recording, &mut modules(0), &ReplayOptions::default()).unwrap_err();
    assert!(err.to_string().contains("computes one output per step"), "{err}");
}

#[test]
fn a_recording_indexed_with_no_payload_in_memory_replays_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    record(&dir, N, Cut::None, None);
    let in_memory = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    let indexed = Recording::open_indexed(BagReader::open(&dir).unwrap(), 0).unwrap();
    assert!(indexed
        .channels
        .values()
        .flat_map(|c| c.by_digest.values())
        .all(|m| m.data.is_none()));
    let a = replay(&in_memory, &mut modules(0), &ReplayOptions::default()).unwrap();
    let b = replay(&indexed, &mut modules(0), &ReplayOptions::default()).unwrap();
    let bytes = |o: &lockstep_replay::lockstep::ReplayOutcome| -> Vec<Vec<u8>> {
        o.outputs.iter().map(|s| s.data.clone()).collect()
    };
    assert_eq!(bytes(&a), bytes(&b));
    assert_eq!(b.exact_by_channel()["/out"], (N, N));
    // A digest the recording does not hold is named in the error.
    let err = indexed.payload("/in", 42).unwrap_err().to_string();
    assert!(
        err.contains("/in") && err.contains("not in the recording"),
        "{err}"
    );
}
