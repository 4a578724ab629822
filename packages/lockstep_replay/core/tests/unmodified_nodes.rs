//! Lock-step replay of an unmodified node recorded through the rcl interceptor: every recorded output is
//! reproduced by granting the node, one at a time, the callbacks of its event log (the silent ones before
//! it, then the one that published it), with an in-process stand-in for the node (see `unmodified`).
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod unmodified;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use lockstep_bag::BagReader;
use lockstep_replay::lockstep::{
    evaluate, event_kind, replay, FrameSelection, LockstepError, Module, Recording, ReplayOptions,
    ReplayOutcome,
};
use lockstep_replay::report::report_json;
use unmodified::{
    record, record_with, time_of, Callback, FilterLogic, FilterNode, Recorded, Scale, Stimulus, EPOCH,
};

use Stimulus::{Outside, Request, Take, Timer, Unrecorded};

/// Silent takes, a silent timer firing, a callback publishing twice on one channel, an output published
/// outside any callback and a service callback whose request the bag does not hold.
const STIMULI: [Stimulus; 13] = [
    Take(5),   // take 1: silent
    Take(7),   // take 2: /filtered #0
    Timer,     // timer 1: silent
    Take(2),   // take 3: silent
    Timer,     // timer 2: /filtered #1
    Take(9),   // take 4: /filtered #2
    Outside,   // /filtered #3, from a thread of its own
    Take(4),   // take 5: silent
    Take(100), // take 6: /filtered #4 and #5
    Take(1),   // take 7: silent
    Take(3),   // take 8: /filtered #6
    Timer,     // timer 3: silent
    Request,   // /filtered #7
];

fn recorded(stimuli: &[Stimulus], upstream: bool) -> (tempfile::TempDir, PathBuf, Recorded) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    let recorded = record(&dir, stimuli, upstream);
    (tmp, dir, recorded)
}

fn load(dir: &PathBuf) -> Recording {
    Recording::load(&BagReader::open(dir).unwrap()).unwrap()
}

fn run(recording: &Recording, modules: Vec<Box<dyn Module>>, options: &ReplayOptions) -> ReplayOutcome {
    let mut modules = modules;
    replay(recording, &mut modules, options).unwrap()
}

/// The simulated /filtered outputs: (sequence number, text, equal to the recording).
fn filtered(outcome: &ReplayOutcome) -> Vec<(u32, String, bool)> {
    (outcome.outputs.iter())
        .filter(|o| o.header.channel_name == "/filtered")
        .map(|o| (o.header.sequence_num, common::text_of(&o.data), o.exact))
        .collect()
}

/// "12.345678901 s"
fn seconds(ns: i64) -> String {
    format!("{}.{:09} s", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// The callbacks of the recording the replay delivers: those up to the last one whose output is replayed
/// (the output published outside callbacks is not a callback; the request's step is skipped, and so is the
/// silent timer firing before it).
fn delivered(recorded: &Recorded) -> Vec<Callback> {
    recorded.callbacks[..10].to_vec()
}

#[test]
fn a_deterministic_node_reproduces_every_output_exactly() {
    let (_tmp, dir, rec) = recorded(&STIMULI, false);
    let recording = load(&dir);
    assert_eq!(recording.frames.len(), 8);
    assert!(recording.unreadable_event_batches.is_empty());
    assert_eq!(
        recording.unmodified_warnings.keys().collect::<Vec<_>>(),
        ["filter"]
    );
    let node = FilterNode::new(1);
    let seen = node.seen.clone();
    let outcome = run(&recording, vec![Box::new(node)], &ReplayOptions::default());

    let expected: Vec<(u32, String, bool)> = (rec.outputs.iter())
        .filter(|(seq, _)| ![3, 7].contains(seq))
        .map(|(seq, text)| (*seq, text.clone(), true))
        .collect();
    assert_eq!(filtered(&outcome), expected);
    // The callbacks granted, in the recorded order, each once: the silent ones before the output they
    // preceded, the two outputs of one callback from one step.
    assert_eq!(*seen.borrow(), delivered(&rec));
    assert_eq!(
        outcome.events_granted,
        BTreeMap::from([("filter".to_owned(), 10)])
    );
    assert!(outcome.extra_outputs.is_empty() && outcome.missing_outputs.is_empty());
    assert!(outcome.backup_inputs.is_empty(), "{:?}", outcome.backup_inputs);
    assert_eq!(outcome.selected, 8);
    let steps = outcome.outputs.iter().filter(|o| o.first_of_step).count();
    assert_eq!(steps, 5, "the two outputs of the take of 100 are one step");
    let events: Vec<Option<&str>> = outcome.outputs.iter().map(|o| o.event.as_deref()).collect();
    let take_at = |i: usize| format!("the take of /raw at {}", seconds(time_of(i) + 2));
    assert_eq!(events[0], Some(take_at(1).as_str()));
    assert_eq!(
        events[1],
        Some(format!("timer 0 at {}", seconds(time_of(4) + 2)).as_str())
    );
    assert_eq!(events[3], events[4], "one callback");
}

#[test]
fn a_frame_published_outside_callbacks_or_by_an_unrecorded_request_is_skipped_with_the_reason() {
    let (_tmp, dir, _) = recorded(&STIMULI, false);
    let recording = load(&dir);
    let outside = recording
        .frames
        .iter()
        .find(|f| f.header.sequence_num == 3)
        .unwrap();
    assert_eq!(outside.events, Some(Vec::new()));
    let outcome = run(
        &recording,
        vec![Box::new(FilterNode::new(1))],
        &ReplayOptions::default(),
    );
    let skipped: Vec<(Option<u32>, &str)> = (outcome.skipped.iter())
        .map(|s| (s.sequence_num, s.reason.as_str()))
        .collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert_eq!(skipped[0].0, Some(3));
    assert!(
        skipped[0]
            .1
            .contains("`filter` published /filtered #3 outside any callback the interceptor saw"),
        "{}",
        skipped[0].1
    );
    assert_eq!(skipped[1].0, Some(7));
    let request = format!("the request to /filter/reset at {}", seconds(time_of(12) + 2));
    assert!(
        skipped[1].1.starts_with(&request) && skipped[1].1.contains("/filter/reset/lockstep_request"),
        "{}",
        skipped[1].1
    );
    assert_eq!(outcome.selected, outcome.outputs.len() + outcome.skipped.len());

    let strict = ReplayOptions {
        strict: true,
        ..ReplayOptions::default()
    };
    let mut modules: Vec<Box<dyn Module>> = vec![Box::new(FilterNode::new(1))];
    match replay(&recording, &mut modules, &strict) {
        Err(LockstepError::Unreplayable {
            channel,
            sequence_num,
            reason,
            ..
        }) => {
            assert_eq!((channel.as_str(), sequence_num), ("/filtered", 3));
            assert!(reason.contains("outside any callback"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_changed_parameter_changes_the_outputs_and_the_first_difference_names_its_event() {
    let (_tmp, dir, _) = recorded(&STIMULI, false);
    let recording = load(&dir);
    let outcome = run(
        &recording,
        vec![Box::new(FilterNode::new(2))],
        &ReplayOptions::default(),
    );
    assert!(filtered(&outcome).iter().all(|(_, _, exact)| !exact));
    let first = outcome.first_differences()["/filtered"];
    assert_eq!(first.header.sequence_num, 0);
    let event = format!("the take of /raw at {}", seconds(time_of(1) + 2));
    assert_eq!(first.event.as_deref(), Some(event.as_str()));

    let evaluation = evaluate(&recording, &outcome);
    let report = report_json(&outcome, &evaluation, None, &[], Duration::from_secs(1));
    let difference = &report["channels"]["/filtered"]["first_difference"];
    assert_eq!(difference["sequence_num"], 0);
    assert_eq!(difference["event"], event.as_str());
    assert_eq!(report["unmodified_nodes"]["events_granted"]["filter"], 10);
    assert_eq!(report["unmodified_nodes"]["extra_outputs"], serde_json::json!([]));
    assert_eq!(
        report["unmodified_nodes"]["missing_outputs"],
        serde_json::json!([])
    );
}

#[test]
fn silent_takes_reach_the_node_in_the_recorded_order() {
    let (_tmp, dir, rec) = recorded(&STIMULI, false);
    let recording = load(&dir);
    // The first output's events: the silent take of 5, then the take of 7 that published it.
    let first = recording
        .frames
        .iter()
        .find(|f| f.header.sequence_num == 0)
        .unwrap();
    let events = first.events.as_ref().unwrap();
    let starts: Vec<(u8, i64)> = events.iter().map(|e| (e.kind, e.ros_time_ns)).collect();
    assert_eq!(
        starts,
        [
            (event_kind::TAKE, time_of(0) + 2),
            (event_kind::TAKE, time_of(1) + 2)
        ]
    );
    // Timer 2's output: the silent timer firing and the silent take of 2 before it.
    let timer = recording
        .frames
        .iter()
        .find(|f| f.header.sequence_num == 1)
        .unwrap();
    let kinds: Vec<u8> = timer.events.as_ref().unwrap().iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [event_kind::TIMER, event_kind::TAKE, event_kind::TIMER]);

    let node = FilterNode::new(1);
    let seen = node.seen.clone();
    let outcome = run(&recording, vec![Box::new(node)], &ReplayOptions::default());
    let takes = |list: &[Callback]| -> Vec<String> {
        (list.iter())
            .filter(|c| c.0 == event_kind::TAKE)
            .map(|c| c.3.clone())
            .collect()
    };
    assert_eq!(takes(&seen.borrow()), ["5", "7", "2", "9", "4", "100", "1", "3"]);
    assert_eq!(takes(&seen.borrow()), takes(&delivered(&rec)));
    // The node's state folds every take in order: any other order or a lost take gives other outputs.
    let mut logic = FilterLogic::new(1);
    let mut swapped = Vec::new();
    for v in [7, 5, 2, 9, 4, 100, 1, 3] {
        swapped.extend(logic.take(v));
    }
    assert_ne!(swapped[0], rec.outputs[0].1);
    assert!(filtered(&outcome).iter().all(|(_, _, exact)| *exact));
}

#[test]
fn a_callback_publishing_more_or_less_than_recorded_is_counted_and_never_waited_for() {
    let (_tmp, dir, _) = recorded(&STIMULI, false);
    let recording = load(&dir);
    let key = || ("filter".to_owned(), "/filtered".to_owned());

    let mut node = FilterNode::new(1);
    node.extra = true;
    let outcome = run(&recording, vec![Box::new(node)], &ReplayOptions::default());
    assert_eq!(outcome.extra_outputs, BTreeMap::from([(key(), 5)]));
    assert!(outcome.missing_outputs.is_empty());
    assert!(
        filtered(&outcome).iter().all(|(_, _, exact)| *exact),
        "the recorded outputs come first"
    );

    let mut node = FilterNode::new(1);
    node.chatty = true;
    let outcome = run(&recording, vec![Box::new(node)], &ReplayOptions::default());
    assert_eq!(
        outcome.extra_outputs,
        BTreeMap::from([(key(), 5)]),
        "the five silent callbacks"
    );
    assert_eq!(filtered(&outcome).len(), 6);

    let mut node = FilterNode::new(1);
    node.mute = vec![2]; // timer 2 publishes nothing
    let outcome = run(&recording, vec![Box::new(node)], &ReplayOptions::default());
    assert_eq!(outcome.missing_outputs, BTreeMap::from([(key(), 1)]));
    let reason = format!(
        "`filter` published 0 of the 1 recorded output(s) on /filtered for timer 0 at {}",
        seconds(time_of(4) + 2)
    );
    let skipped = outcome
        .skipped
        .iter()
        .find(|s| s.sequence_num == Some(1))
        .unwrap();
    assert_eq!(skipped.reason, reason);
    assert_eq!(
        filtered(&outcome).len(),
        5,
        "the later outputs are still replayed"
    );

    let mut node = FilterNode::new(1);
    node.limit = Some(1); // the take of 100 publishes once
    let outcome = run(&recording, vec![Box::new(node)], &ReplayOptions::default());
    assert_eq!(outcome.missing_outputs, BTreeMap::from([(key(), 1)]));
    let skipped = outcome
        .skipped
        .iter()
        .find(|s| s.sequence_num == Some(5))
        .unwrap();
    assert!(
        skipped
            .reason
            .starts_with("`filter` published 1 of the 2 recorded output(s) on /filtered for the take"),
        "{}",
        skipped.reason
    );
    let seqs: Vec<u32> = filtered(&outcome).iter().map(|o| o.0).collect();
    assert_eq!(seqs, [0, 1, 2, 4, 6]);
    assert_eq!(outcome.selected, outcome.outputs.len() + outcome.skipped.len());
}

#[test]
fn a_take_the_recording_lacks_skips_the_output_it_preceded_naming_it() {
    // Take 3 (the value 4) was not recorded; take 4 published /filtered #1 after it.
    let stimuli = [Take(5), Take(7), Unrecorded(4), Take(6), Take(1), Take(2)];
    let (_tmp, dir, _) = recorded(&stimuli, false);
    let recording = load(&dir);
    let outcome = run(
        &recording,
        vec![Box::new(FilterNode::new(1))],
        &ReplayOptions::default(),
    );
    let skipped: Vec<(Option<u32>, &str)> = (outcome.skipped.iter())
        .map(|s| (s.sequence_num, s.reason.as_str()))
        .collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].0, Some(1));
    let take = format!(
        "the take of /raw at {}: the message it took on /raw",
        seconds(time_of(2) + 2)
    );
    assert!(
        skipped[0].1.starts_with(&take) && skipped[0].1.ends_with("is not in the recording"),
        "{}",
        skipped[0].1
    );
    // Without the takes of that step, the node's state is not the recorded one any more.
    let outputs: Vec<(u32, bool)> = filtered(&outcome).iter().map(|o| (o.0, o.2)).collect();
    assert_eq!(outputs, [(0, true), (2, false)]);
}

const UPSTREAM: [Stimulus; 8] = [
    Take(5),
    Take(7),
    Timer,
    Take(2),
    Timer,
    Take(9),
    Take(50),
    Take(3),
];

#[test]
fn takes_of_a_live_module_output_get_what_it_computed_in_this_replay() {
    let (_tmp, dir, rec) = recorded(&UPSTREAM, true);
    let recording = load(&dir);
    // Ordinary module frames carry no events; every take names the scale output it took, replayed first.
    let position = |id: &(String, u64, u32)| recording.frames.iter().position(|f| f.id() == *id).unwrap();
    for (i, f) in recording.frames.iter().enumerate() {
        match f.header.module_name.as_str() {
            "scale" => assert!(f.events.is_none()),
            _ => {
                let events = f.events.as_ref().unwrap();
                assert!(!events.is_empty());
                for e in events.iter().filter(|e| e.kind == event_kind::TAKE) {
                    let producer = e.producer.as_ref().unwrap();
                    assert_eq!(producer.0, "/raw");
                    assert!(position(producer) < i, "{producer:?} after {:?}", f.id());
                }
            }
        }
    }

    // `scale` not live: its recorded outputs, and the node's outputs as recorded.
    let outcome = run(
        &recording,
        vec![Box::new(FilterNode::new(1))],
        &ReplayOptions::default(),
    );
    assert!(filtered(&outcome).iter().all(|(_, _, exact)| *exact));
    assert_eq!(filtered(&outcome).len(), rec.outputs.len());
    assert!(outcome.backup_inputs.is_empty());

    // `scale` live as recorded: the same, and its own outputs replay as for any module.
    let modules: Vec<Box<dyn Module>> =
        vec![Box::new(Scale(unmodified::FACTOR)), Box::new(FilterNode::new(1))];
    let outcome = run(&recording, modules, &ReplayOptions::default());
    assert!(outcome.outputs.iter().all(|o| o.exact && o.inputs_as_recorded));
    assert_eq!(outcome.exact_by_channel()["/raw"], (6, 6));
    assert_eq!(outcome.exact_by_channel()["/filtered"], (6, 6));
    assert!(outcome.backup_inputs.is_empty() && outcome.skipped.is_empty());

    // `scale` live with another factor: every take, silent or not, gets the new /raw.
    let modules: Vec<Box<dyn Module>> = vec![Box::new(Scale(3)), Box::new(FilterNode::new(1))];
    let outcome = run(&recording, modules, &ReplayOptions::default());
    let mut logic = FilterLogic::new(1);
    let mut expected = Vec::new();
    for s in UPSTREAM {
        expected.extend(match s {
            Take(v) => logic.take(3 * v),
            _ => logic.timer(),
        });
    }
    let texts: Vec<String> = filtered(&outcome).into_iter().map(|o| o.1).collect();
    assert_eq!(texts, expected);
    assert!(filtered(&outcome).iter().all(|(_, _, exact)| !exact));
    assert!(outcome.backup_inputs.is_empty());

    // Only the node's frames and what they depend on.
    let options = ReplayOptions {
        frames: FrameSelection::Module("filter".into()),
        ..ReplayOptions::default()
    };
    let modules: Vec<Box<dyn Module>> =
        vec![Box::new(Scale(unmodified::FACTOR)), Box::new(FilterNode::new(1))];
    let outcome = run(&recording, modules, &options);
    assert_eq!(
        outcome.exact_by_channel(),
        BTreeMap::from([("/raw".to_owned(), (6, 6)), ("/filtered".to_owned(), (6, 6))])
    );
    assert!(
        outcome.backup_inputs.is_empty(),
        "the outputs of `scale` taken silently are replayed too"
    );
    assert_eq!(
        recording
            .frames
            .iter()
            .filter(|f| f.header.epoch == EPOCH)
            .count(),
        6
    );
}

#[test]
fn an_event_log_that_cannot_be_decoded_skips_the_node_outputs_saying_why() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    record_with(&dir, &STIMULI, false, false);
    let recording = load(&dir);
    let (count, reason) = &recording.unreadable_event_batches["filter"];
    assert!(*count > 0);
    assert_eq!(
        reason,
        "the bag stores no definition of lockstep_interfaces/msg/NodeEvents"
    );
    assert!(recording.frames.iter().all(|f| f.events == Some(Vec::new())));
    let outcome = run(
        &recording,
        vec![Box::new(FilterNode::new(1))],
        &ReplayOptions::default(),
    );
    assert!(outcome.outputs.is_empty());
    assert_eq!(outcome.skipped.len(), 8);
    let why = format!("{count} message(s) of its event log could not be decoded ({reason})");
    assert!(
        outcome
            .skipped
            .iter()
            .all(|s| s.reason.ends_with(&format!("; {why}"))),
        "{:?}",
        outcome.skipped
    );
}
