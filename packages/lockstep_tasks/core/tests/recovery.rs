//! Retries, timeouts and fallbacks on a small task (two pairs of pick then drive), driven like the node
//! drives it; their configuration errors; and goals paused on a pausable actuator instead of cancelled.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{always, sent, small_text, small_with_drive, SMALL};
use lockstep_tasks::{Conditions, Config, Id, Outcome, Output, Params, Scheduler, Status, Tree};
use serde_json::json;

const PICK: &str = "task/group[0]/action[0]";
const DRIVE: &str = "task/group[0]/action[1]";

fn task(config: &Config) -> Scheduler {
    Scheduler::new(Tree::decompose(config, "job", &Params::new()).unwrap())
}

fn small() -> Config {
    Config::parse("small.yaml", SMALL).unwrap()
}

/// [`SMALL`] with `lines` added to the `pair` template.
fn small_with_pair(lines: &str) -> Config {
    let text = small_text(&[("    level: group\n", &format!("    level: group\n{lines}"))]);
    Config::parse("small.yaml", &text).unwrap()
}

fn id(s: &Scheduler, path: &str) -> Id {
    s.tree().find(path).unwrap_or_else(|| panic!("{path}"))
}

fn status(s: &Scheduler, path: &str) -> String {
    s.tree().nodes[id(s, path)].status.to_string()
}

/// Step at `now` and succeed every goal out, until nothing more is sent; all outputs.
fn finish(s: &mut Scheduler, now: f64) -> Vec<Output> {
    let mut all = Vec::new();
    loop {
        all.extend(s.step(now, &always));
        let live: Vec<Id> = s.live().collect();
        if live.is_empty() {
            return all;
        }
        for leaf in live {
            all.extend(s.leaf_succeeded(leaf));
        }
    }
}

/// Run the pick of the first pair, then send its drive (at `now`).
fn up_to_the_first_drive(s: &mut Scheduler, now: f64) {
    assert_eq!(sent(&s.step(0.0, &always)), [PICK]);
    s.leaf_succeeded(id(s, PICK));
    assert_eq!(sent(&s.step(now, &always)), [DRIVE]);
}

/// The status changes of `path` in `out`, as text.
fn changes(out: &[Output], path: &str) -> Vec<String> {
    out.iter()
        .filter_map(|o| match o {
            Output::Status(c) if c.path == path => Some(c.new.to_string()),
            _ => None,
        })
        .collect()
}

fn position(out: &[Output], what: impl Fn(&Output) -> bool) -> usize {
    out.iter()
        .position(what)
        .unwrap_or_else(|| panic!("not in {out:#?}"))
}

#[test]
fn a_leaf_that_fails_once_succeeds_on_its_retry_after_the_backoff() {
    let mut s = task(&small_with_drive(
        "        retry: {attempts: 2, backoff_s: 1.5}\n",
    ));
    up_to_the_first_drive(&mut s, 0.0);
    let out = s.leaf_failed(id(&s, DRIVE), "wheel stuck");
    assert_eq!(
        out[0],
        Output::Retry {
            path: DRIVE.into(),
            level: 2,
            attempt: 1,
            attempts: 2,
            after_s: 1.5,
            reason: "wheel stuck".into()
        }
    );
    assert_eq!(
        changes(&out, DRIVE),
        ["interrupted (retry 1/2: wheel stuck)", "sendable", "delayed"]
    );
    assert_eq!(s.outcome(), None);
    // The wait starts at the first step after the failure.
    assert!(sent(&s.step(0.5, &always)).is_empty());
    assert!(sent(&s.step(1.99, &always)).is_empty());
    assert_eq!(sent(&s.step(2.0, &always)), [DRIVE]);
    let out = finish(&mut s, 3.0);
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
    assert!(!sent(&out).contains(&PICK.to_owned()));
    let picks = s.sent.iter().filter(|&&l| l == id(&s, PICK)).count();
    assert_eq!(picks, 1, "the completed pick is not tried again");
}

const DRIVE_WITH_FALLBACK: &str =
    "        retry: {attempts: 1}\n        fallback: {type: detour, parameters: {route: around}}\n";
const DETOUR: &str = "task/group[0]/action[1]~fallback";

#[test]
fn once_the_retries_are_used_the_fallback_runs_in_its_place_and_the_task_completes() {
    let mut s = task(&small_with_drive(DRIVE_WITH_FALLBACK));
    let detour = id(&s, DETOUR);
    assert!(s.tree().nodes[detour].standby);
    assert_eq!(s.tree().leaves().count(), 4, "standby fallbacks are not counted");
    assert_eq!(s.tree().levels[2].len(), 4);
    up_to_the_first_drive(&mut s, 0.0);
    let out = s.leaf_failed(id(&s, DRIVE), "wheel stuck");
    assert!(matches!(
        &out[0],
        Output::Retry {
            attempt: 1,
            attempts: 1,
            ..
        }
    ));
    assert_eq!(sent(&s.step(0.1, &always)), [DRIVE]);
    let out = s.leaf_failed(id(&s, DRIVE), "wheel stuck");
    assert_eq!(
        out[0],
        Output::Fallback {
            path: DRIVE.into(),
            level: 2,
            fallback_path: DETOUR.into(),
            reason: "wheel stuck (after 2 attempts)".into()
        }
    );
    assert_eq!(status(&s, DRIVE), "ended (failed)");
    assert_eq!(status(&s, "task/group[0]"), "running");
    assert!(!s.tree().nodes[detour].standby);
    let leaves: Vec<&str> = s
        .tree()
        .leaves()
        .map(|l| s.tree().nodes[l].path.as_str())
        .collect();
    assert_eq!(
        leaves,
        [
            PICK,
            DRIVE,
            DETOUR,
            "task/group[1]/action[0]",
            "task/group[1]/action[1]"
        ]
    );
    let out = s.step(0.2, &always);
    let params = out.iter().find_map(|o| match o {
        Output::SendGoal { path, params, .. } if path == DETOUR => Some(params["route"].clone()),
        _ => None,
    });
    assert_eq!(params, Some(json!("around")));
    let out = s.leaf_succeeded(detour);
    assert!(out.contains(&Output::GroupCompleted {
        path: "task/group[0]".into(),
        level: 1
    }));
    finish(&mut s, 1.0);
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
    // The second pair's fallback never ran: still standby, sendable, and reported nowhere.
    let unused = id(&s, "task/group[1]/action[1]~fallback");
    assert!(s.tree().nodes[unused].standby);
    assert_eq!(s.tree().nodes[unused].status, Status::Sendable);
}

#[test]
fn a_fallback_that_fails_fails_the_task_with_its_path_and_what_was_tried() {
    let mut s = task(&small_with_drive(DRIVE_WITH_FALLBACK));
    up_to_the_first_drive(&mut s, 0.0);
    s.leaf_failed(id(&s, DRIVE), "wheel stuck");
    s.step(0.1, &always);
    s.leaf_failed(id(&s, DRIVE), "wheel stuck");
    assert_eq!(sent(&s.step(0.2, &always)), [DETOUR]);
    let out = s.leaf_failed(id(&s, DETOUR), "no way around");
    assert_eq!(
        out.last(),
        Some(&Output::Finished(Outcome::Failed {
            path: DETOUR.into(),
            reason: format!("wheel stuck (after 2 attempts); fallback {DETOUR} failed: no way around")
        }))
    );
    assert_eq!(status(&s, "task/group[0]"), "ended (failed)");
    assert_eq!(status(&s, "task/group[1]/action[0]"), "ended (forced)");
    let unused = id(&s, "task/group[1]/action[1]~fallback");
    assert!(!out
        .iter()
        .any(|o| matches!(o, Output::Status(c) if c.id == unused)));
}

#[test]
fn a_fallback_has_its_own_retry_and_fallback() {
    let lines = "        fallback:\n          type: detour\n          retry: {attempts: 1}\n          \
                 fallback: {type: drive, parameters: {route: last}}\n";
    let mut s = task(&small_with_drive(lines));
    up_to_the_first_drive(&mut s, 0.0);
    let out = s.leaf_failed(id(&s, DRIVE), "wheel stuck");
    assert!(matches!(&out[0], Output::Fallback { fallback_path, .. } if fallback_path == DETOUR));
    assert_eq!(sent(&s.step(1.0, &always)), [DETOUR]);
    let out = s.leaf_failed(id(&s, DETOUR), "blocked");
    assert!(matches!(&out[0], Output::Retry { path, .. } if path == DETOUR));
    assert_eq!(sent(&s.step(2.0, &always)), [DETOUR]);
    let out = s.leaf_failed(id(&s, DETOUR), "blocked");
    let last = format!("{DETOUR}~fallback");
    assert_eq!(
        out[0],
        Output::Fallback {
            path: DETOUR.into(),
            level: 2,
            fallback_path: last.clone(),
            reason: "blocked (after 2 attempts)".into()
        }
    );
    assert_eq!(sent(&s.step(3.0, &always)), [last]);
    finish(&mut s, 4.0);
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
}

#[test]
fn a_timeout_fires_at_its_time_cancels_the_goal_and_retries() {
    let mut s = task(&small_with_drive(
        "        timeout_s: 5\n        retry: {attempts: 1}\n",
    ));
    up_to_the_first_drive(&mut s, 1.0);
    let drive = id(&s, DRIVE);
    assert!(s.step(5.99, &always).is_empty());
    let out = s.step(6.0, &always);
    let timed_out = position(&out, |o| {
        *o == Output::TimedOut {
            path: DRIVE.into(),
            level: 2,
            after_s: 5.0,
        }
    });
    let cancel = position(
        &out,
        |o| matches!(o, Output::CancelGoal { leaf, .. } if *leaf == drive),
    );
    let retry = position(
        &out,
        |o| matches!(o, Output::Retry { reason, attempt: 1, .. } if reason == "timed out after 5 s"),
    );
    let send = position(
        &out,
        |o| matches!(o, Output::SendGoal { leaf, .. } if *leaf == drive),
    );
    assert!(timed_out < cancel && cancel < retry && retry < send, "{out:#?}");
    // The new attempt has a new clock.
    assert!(s.step(10.99, &always).is_empty());
    let out = s.step(11.0, &always);
    assert_eq!(
        out.last(),
        Some(&Output::Finished(Outcome::Failed {
            path: DRIVE.into(),
            reason: "timed out after 5 s (after 2 attempts)".into()
        }))
    );
    assert!(out.contains(&Output::CancelGoal {
        leaf: drive,
        path: DRIVE.into()
    }));
}

#[test]
fn the_timeout_clock_stops_while_paused() {
    let mut s = task(&small_with_drive("        timeout_s: 5\n"));
    up_to_the_first_drive(&mut s, 0.0);
    assert!(s.step(3.0, &always).is_empty());
    s.pause("paused").unwrap();
    assert!(s.step(20.0, &always).is_empty());
    s.resume().unwrap();
    // Sent again at 20 with 3 s used: 2 s left.
    assert_eq!(sent(&s.step(20.0, &always)), [DRIVE]);
    assert!(s.step(21.99, &always).is_empty());
    let out = s.step(22.0, &always);
    assert!(matches!(&out[0], Output::TimedOut { path, .. } if path == DRIVE));
    assert!(matches!(
        out.last(),
        Some(Output::Finished(Outcome::Failed { .. }))
    ));
}

#[test]
fn a_group_timeout_cancels_the_goal_under_it_and_its_fallback_runs() {
    let text = small_text(&[
        ("      - {type: pair}\n      - {type: pair}\n", "      - type: pair\n        timeout_s: 4\n        fallback: {type: pair, parameters: {route: spare}}\n      - {type: pair}\n"),
    ]);
    let mut s = task(&Config::parse("small.yaml", &text).unwrap());
    up_to_the_first_drive(&mut s, 1.0);
    let out = s.step(4.0, &always);
    assert!(matches!(&out[0], Output::TimedOut { path, level: 1, .. } if path == "task/group[0]"));
    assert!(out.contains(&Output::CancelGoal {
        leaf: id(&s, DRIVE),
        path: DRIVE.into()
    }));
    assert!(out
        .iter()
        .any(|o| matches!(o, Output::Fallback { reason, .. } if reason == "timed out after 4 s")));
    assert_eq!(status(&s, "task/group[0]"), "ended (failed)");
    assert_eq!(status(&s, PICK), "completed");
    assert_eq!(status(&s, DRIVE), "ended (forced)");
    // The spare pair runs in the first one's slot, before the second pair, from the same step.
    assert_eq!(sent(&out), ["task/group[0]~fallback/action[0]"]);
    finish(&mut s, 5.0);
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
}

#[test]
fn a_group_retry_sends_only_the_failed_leaf_again() {
    let mut s = task(&small_with_pair("    retry: {attempts: 1, backoff_s: 2}\n"));
    up_to_the_first_drive(&mut s, 0.0);
    let out = s.leaf_failed(id(&s, DRIVE), "wheel stuck");
    assert_eq!(
        out[0],
        Output::Retry {
            path: "task/group[0]".into(),
            level: 1,
            attempt: 1,
            attempts: 1,
            after_s: 2.0,
            reason: format!("{DRIVE}: wheel stuck")
        }
    );
    let why = format!("interrupted (retry 1/1: {DRIVE}: wheel stuck)");
    assert_eq!(changes(&out, DRIVE), [why.as_str(), "sendable"]);
    assert_eq!(
        changes(&out, "task/group[0]"),
        [why.as_str(), "sendable", "delayed"]
    );
    assert_eq!(status(&s, PICK), "completed");
    assert!(sent(&s.step(1.0, &always)).is_empty());
    assert_eq!(sent(&s.step(3.0, &always)), [DRIVE], "the pick is not sent again");
    finish(&mut s, 4.0);
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
}

#[test]
fn a_parallel_group_retry_cancels_and_sends_again_the_other_live_leaf() {
    let mut s = task(&small_with_pair("    parallel: true\n    retry: {attempts: 1}\n"));
    assert_eq!(sent(&s.step(0.0, &always)), [PICK, DRIVE]);
    let pick = id(&s, PICK);
    let out = s.leaf_failed(id(&s, DRIVE), "wheel stuck");
    assert!(out.contains(&Output::CancelGoal {
        leaf: pick,
        path: PICK.into()
    }));
    assert!(matches!(&out[0], Output::Retry { path, .. } if path == "task/group[0]"));
    assert_eq!(
        changes(&out, PICK),
        [
            format!("interrupted (retry 1/1: {DRIVE}: wheel stuck)").as_str(),
            "sendable"
        ]
    );
    assert!(
        s.leaf_succeeded(pick).is_empty(),
        "the cancelled goal's late answer changes nothing"
    );
    assert_eq!(sent(&s.step(0.1, &always)), [PICK, DRIVE]);
    finish(&mut s, 1.0);
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
}

#[test]
fn each_bad_recovery_key_is_named_with_its_line() {
    let entry = "        parameters: {route: direct}\n";
    let drive = |line: &str| (entry, format!("{entry}{line}"));
    let cases = [
        (drive("        retry: {attempts: 0}\n"), "small.yaml:17: templates.pair.children[1].retry.attempts: 0: must be from 1 to 1000 (the tries after the first failure)"),
        (drive("        retry: {attempts: 1001}\n"), "small.yaml:17: templates.pair.children[1].retry.attempts: 1001: must be from 1 to 1000 (the tries after the first failure)"),
        (drive("        retry: {attempts: 1.5}\n"), "small.yaml:17: templates.pair.children[1].retry.attempts: invalid type: floating point `1.5`, expected u32"),
        (drive("        retry: {attempts: 1, backoff_s: -2}\n"), "small.yaml:17: templates.pair.children[1].retry.backoff_s: -2: must be a finite number >= 0"),
        (drive("        retry: {attempts: 1, backoff_s: .nan}\n"), "small.yaml:17: templates.pair.children[1].retry.backoff_s: NaN: must be a finite number >= 0"),
        (drive("        retry: {attempts: 1, backof_s: 2}\n"), "small.yaml:17: templates.pair.children[1].retry.backof_s: unknown field `backof_s`, expected `attempts` or `backoff_s`"),
        (drive("        timeout_s: 0\n"), "small.yaml:17: templates.pair.children[1].timeout_s: 0: must be a finite number > 0"),
        (drive("        timeout_s: .inf\n"), "small.yaml:17: templates.pair.children[1].timeout_s: inf: must be a finite number > 0"),
        (drive("        fallback: {type: detor}\n"), "small.yaml:17: templates.pair.children[1].fallback.type: `detor` is not a template"),
        (drive("        fallback: {type: pair}\n"), "small.yaml:17: templates.pair.children[1].fallback.type: `pair` is at level `group`; a fallback runs in place of a `action` and must be at that level"),
        (drive("        fallback: {type: detour, timeout_s: -1}\n"), "small.yaml:17: templates.pair.children[1].fallback.timeout_s: -1: must be a finite number > 0"),
        (("    actuator: arm\n", "    actuator: arm\n    timeout_s: 0\n".into()), "small.yaml:20: templates.pick.timeout_s: 0: must be a finite number > 0"),
        (("    level: task\n", "    level: task\n    fallback: {type: job}\n".into()), "small.yaml:8: templates.job.fallback: a task type has no parent to run a fallback in: put it on its children"),
        // A template that is its own fallback: an endless chain.
        (("  detour:\n    level: action\n    actuator: nav\n", "  detour:\n    level: action\n    actuator: nav\n    fallback: {type: detour}\n".into()), "small.yaml:26: templates.detour.fallback: the chain of fallbacks is longer than 8 (through the templates' own): detour -> detour -> detour -> detour -> detour -> detour -> detour -> detour -> detour"),
    ];
    for ((from, to), expected) in cases {
        let text = small_text(&[(from, &to)]);
        let error = Config::parse("small.yaml", &text).unwrap_err().to_string();
        assert_eq!(error, expected, "{to}");
    }
    let nested = format!(
        "{}{}",
        "{type: detour, fallback: ".repeat(9),
        "{type: detour}".to_owned() + &"}".repeat(9)
    );
    let text = small_text(&[(entry, &format!("{entry}        fallback: {nested}\n"))]);
    let error = Config::parse("small.yaml", &text).unwrap_err().to_string();
    let key = format!("templates.pair.children[1]{}", ".fallback".repeat(9));
    assert_eq!(
        error,
        format!("small.yaml:17: {key}: fallbacks nested deeper than 8")
    );
}

#[test]
fn a_fallback_that_cannot_decompose_rejects_the_task_with_its_key_path() {
    let rejected = |config: &Config| {
        Tree::decompose(config, "job", &Params::new())
            .unwrap_err()
            .to_string()
    };
    let config = small_with_drive("        fallback: {type: detour, parameters: {route: \"{nope}\"}}\n");
    assert_eq!(
        rejected(&config),
        "templates.pair.children[1].fallback.parameters.route: `{nope}` is not a parameter of the parent (it \
         has: )"
    );
    // The template's own fallback: its key.
    let own = "    actuator: arm\n";
    let fallback = "    fallback: {type: detour, parameters: {route: \"{nope}\"}}\n";
    let text = small_text(&[(own, &format!("{own}{fallback}"))]);
    let config = Config::parse("small.yaml", &text).unwrap();
    assert!(rejected(&config).starts_with("templates.pick.fallback.parameters.route: `{nope}`"));
}

#[test]
fn a_task_that_would_decompose_into_too_many_subtasks_with_its_fallbacks_is_refused() {
    let big = |fallback: &str| {
        let pairs = vec!["{type: pair}"; 100].join(", ");
        let picks = vec![format!("{{type: pick{fallback}}}"); 500].join(", ");
        let text = small_text(&[
            ("    children:\n      - {type: pair}\n      - {type: pair}\n", &format!("    children: [{pairs}]\n")),
            (
                "    children:\n      - {type: pick}\n      - type: drive\n        parameters: {route: direct}\n",
                &format!("    children: [{picks}]\n"),
            ),
        ]);
        Config::parse("big.yaml", &text)
    };
    // 1 + 100 x (1 + 500) subtasks: loads; with a fallback for every pick, 1 + 100 x (1 + 500 x 2): refused.
    assert!(big("").is_ok());
    assert_eq!(
        big(", fallback: {type: pick}").unwrap_err().to_string(),
        "big.yaml:6: templates.job: decomposes into more than 100000 subtasks (fallbacks included)"
    );
}

/// The arm pauses along its path; the other actuators do not.
struct ArmPauses;

impl Conditions for ArmPauses {
    fn holds(&self, _: &str) -> bool {
        true
    }

    fn pausable(&self, actuator: &str) -> bool {
        actuator == "arm"
    }
}

#[test]
fn a_pausable_goal_is_paused_and_resumed_not_cancelled_and_sent_again() {
    let mut s = task(&small());
    assert_eq!(sent(&s.step(0.0, &always)), [PICK]);
    let pick = id(&s, PICK);
    let out = s.pause_with("paused", &ArmPauses).unwrap();
    assert!(out.contains(&Output::PauseGoal {
        leaf: pick,
        path: PICK.into()
    }));
    assert!(!out.iter().any(|o| matches!(o, Output::CancelGoal { .. })));
    assert_eq!(status(&s, PICK), "interrupted (paused)");
    assert_eq!(status(&s, "task"), "interrupted (paused)");
    assert_eq!(s.live().collect::<Vec<_>>(), [pick], "its goal is still out");
    assert!(s.step(1.0, &always).is_empty());
    let out = s.resume().unwrap();
    assert!(out.contains(&Output::ResumeGoal {
        leaf: pick,
        path: PICK.into()
    }));
    assert!(sent(&out).is_empty());
    assert_eq!(changes(&out, PICK), ["sendable", "running"]);
    assert_eq!(status(&s, "task/group[0]"), "running");
    assert!(sent(&s.step(2.0, &always)).is_empty(), "not sent again");
    s.leaf_succeeded(pick);
    assert_eq!(sent(&s.step(3.0, &always)), [DRIVE]);
    finish(&mut s, 4.0);
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
    assert_eq!(s.sent.iter().filter(|&&l| l == pick).count(), 1);
}

#[test]
fn pause_without_pausable_actuators_still_cancels() {
    let mut s = task(&small());
    s.step(0.0, &always);
    let pick = id(&s, PICK);
    let out = s.pause("paused").unwrap();
    assert!(out.contains(&Output::CancelGoal {
        leaf: pick,
        path: PICK.into()
    }));
    assert!(!out.iter().any(|o| matches!(o, Output::PauseGoal { .. })));
}

#[test]
fn in_a_parallel_group_the_pausable_goal_pauses_and_the_other_is_cancelled_and_sent_again() {
    let mut s = task(&small_with_pair("    parallel: true\n"));
    assert_eq!(sent(&s.step(0.0, &always)), [PICK, DRIVE]);
    let (pick, drive) = (id(&s, PICK), id(&s, DRIVE));
    let out = s.pause_with("paused", &ArmPauses).unwrap();
    assert!(out.contains(&Output::PauseGoal {
        leaf: pick,
        path: PICK.into()
    }));
    assert!(out.contains(&Output::CancelGoal {
        leaf: drive,
        path: DRIVE.into()
    }));
    assert_eq!(status(&s, DRIVE), "interrupted (paused)");
    let out = s.resume().unwrap();
    assert!(out.contains(&Output::ResumeGoal {
        leaf: pick,
        path: PICK.into()
    }));
    assert_eq!(sent(&s.step(1.0, &always)), [DRIVE]);
    finish(&mut s, 2.0);
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
}

#[test]
fn a_paused_goal_that_succeeds_meanwhile_completes_on_resume() {
    let mut s = task(&small());
    s.step(0.0, &always);
    let pick = id(&s, PICK);
    s.pause_with("paused", &ArmPauses).unwrap();
    assert!(s.leaf_succeeded(pick).is_empty(), "applied on resume");
    assert_eq!(status(&s, PICK), "interrupted (paused)");
    let out = s.resume().unwrap();
    assert!(!out.iter().any(|o| matches!(o, Output::ResumeGoal { .. })));
    assert_eq!(changes(&out, PICK), ["sendable", "running", "completed"]);
    assert_eq!(sent(&s.step(1.0, &always)), [DRIVE]);
}
