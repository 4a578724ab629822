//! The scheduler on the shipped warehouse task, driven like the node drives it: steps in time, actuator
//! outcomes, pause / resume / cancel and attributes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{goal, warehouse};
use lockstep_tasks::{Attribute, Outcome, Output, Refused, Scheduler, Status, Tree};
use serde_json::json;

fn task() -> Scheduler {
    let tree = Tree::decompose(
        &warehouse(),
        "move_material",
        &goal(json!({"from": "A", "to": "B", "speed": 1.0})),
    )
    .unwrap();
    Scheduler::new(tree)
}

/// Every condition holds.
fn always(_: &str) -> bool {
    true
}

/// Goals sent in `out`, by path.
fn sent(out: &[Output]) -> Vec<String> {
    out.iter()
        .filter_map(|o| match o {
            Output::SendGoal { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect()
}

/// Step at `now` and succeed every goal sent, until nothing more is sent; all outputs.
fn run(s: &mut Scheduler, now: f64) -> Vec<Output> {
    let mut all = Vec::new();
    loop {
        let out = s.step(now, &always);
        let live: Vec<_> = s.live().collect();
        all.extend(out);
        if live.is_empty() {
            return all;
        }
        for leaf in live {
            all.extend(s.leaf_succeeded(leaf));
        }
    }
}

#[test]
fn a_to_b_runs_in_decomposition_order_with_one_report_per_group() {
    let mut s = task();
    let out = run(&mut s, 0.0);
    assert_eq!(
        sent(&out),
        [
            "task/duty[0]/message[0]/action[0]",
            "task/duty[0]/message[0]/action[1]",
            "task/duty[0]/message[1]/action[0]",
            "task/duty[0]/message[1]/action[1]",
        ]
    );
    let groups: Vec<&str> = out
        .iter()
        .filter_map(|o| match o {
            Output::GroupCompleted { path, .. } => Some(path.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        groups,
        [
            "task/duty[0]/message[0]",
            "task/duty[0]/message[1]",
            "task/duty[0]",
            "task"
        ]
    );
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
    assert_eq!(out.last(), Some(&Output::Finished(Outcome::Completed)));
    // The drive goal carries speed min(1.0, 0.8).
    let drive = out.iter().find_map(|o| match o {
        Output::SendGoal { actuator, params, .. } if actuator == "navigation" => {
            Some(params["speed"].clone())
        }
        _ => None,
    });
    assert_eq!(drive, Some(json!(0.8)));
}

#[test]
fn a_delay_holds_the_subtask_delayed_then_it_goes() {
    let mut s = task();
    s.add_attribute("task/duty[0]/message[1]", Attribute::Delay { secs: 2.0 })
        .unwrap();
    let out = run(&mut s, 10.0);
    assert_eq!(sent(&out).len(), 2, "only message 0's actions before the delay");
    let message = s.tree().find("task/duty[0]/message[1]").unwrap();
    assert_eq!(s.tree().nodes[message].status, Status::Delayed);
    assert!(run(&mut s, 11.9).is_empty());
    let out = run(&mut s, 12.0);
    assert_eq!(sent(&out).len(), 2);
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
}

/// The loader is busy for 3 s when asked at t = 0, then free.
struct LoaderBusy;

impl lockstep_tasks::Conditions for LoaderBusy {
    fn holds(&self, _: &str) -> bool {
        true
    }

    fn busy_secs(&self, actuator: &str) -> Option<f64> {
        (actuator == "loader").then_some(3.0)
    }
}

#[test]
fn a_busy_actuator_turns_into_a_delay_of_its_busy_time() {
    let mut s = task();
    assert!(sent(&s.step(0.0, &LoaderBusy)).is_empty());
    let load = s.tree().find("task/duty[0]/message[0]/action[0]").unwrap();
    assert_eq!(s.tree().nodes[load].status, Status::Delayed);
    assert_eq!(
        s.tree().nodes[load].attributes.last(),
        Some(&Attribute::Delay { secs: 3.0 })
    );
    assert!(sent(&s.step(2.9, &always)).is_empty(), "not before the busy time");
    assert_eq!(sent(&s.step(3.0, &always)), ["task/duty[0]/message[0]/action[0]"]);
}

/// The loader is still ending a cancelled goal.
struct LoaderDraining;

impl lockstep_tasks::Conditions for LoaderDraining {
    fn holds(&self, _: &str) -> bool {
        true
    }

    fn available(&self, actuator: &str) -> bool {
        actuator != "loader"
    }
}

#[test]
fn an_unavailable_actuator_holds_its_action_sendable() {
    let mut s = task();
    assert!(sent(&s.step(0.0, &LoaderDraining)).is_empty());
    let load = s.tree().find("task/duty[0]/message[0]/action[0]").unwrap();
    assert_eq!(s.tree().nodes[load].status, Status::Sendable);
    assert_eq!(sent(&s.step(0.1, &always)), ["task/duty[0]/message[0]/action[0]"]);
}

#[test]
fn a_condition_waits_until_its_query_holds() {
    let mut s = task();
    s.add_attribute(
        "task/duty[0]/message[0]/action[0]",
        Attribute::Condition {
            query: "dock_free(a)".into(),
        },
    )
    .unwrap();
    let not_yet = |q: &str| q != "dock_free(a)";
    assert!(sent(&s.step(0.0, &not_yet)).is_empty());
    let leaf = s.tree().find("task/duty[0]/message[0]/action[0]").unwrap();
    assert_eq!(s.tree().nodes[leaf].status, Status::Sendable);
    assert_eq!(sent(&s.step(1.0, &always)), ["task/duty[0]/message[0]/action[0]"]);
}

#[test]
fn an_interrupt_is_reported_at_every_level_and_the_task_resumes() {
    let mut s = task();
    s.add_attribute(
        "task/duty[0]/message[1]/action[0]",
        Attribute::Interrupt {
            reason: "obstacle".into(),
        },
    )
    .unwrap();
    let out = run(&mut s, 0.0);
    let reports: Vec<(usize, &str)> = out
        .iter()
        .filter_map(|o| match o {
            Output::Interrupted { path, level, reason } if reason == "obstacle" => {
                Some((*level, path.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        reports,
        [
            (3, "task/duty[0]/message[1]/action[0]"),
            (2, "task/duty[0]/message[1]"),
            (1, "task/duty[0]"),
            (0, "task"),
        ]
    );
    assert_eq!(s.outcome(), None);
    s.resume().unwrap();
    run(&mut s, 1.0);
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
    // Each leaf was sent exactly once.
    let mut leaves = s.sent.clone();
    leaves.sort_unstable();
    leaves.dedup();
    assert_eq!((s.sent.len(), leaves.len()), (4, 4));
}

#[test]
fn pause_cancels_the_live_goal_and_resume_sends_only_what_did_not_complete() {
    let mut s = task();
    let load = s.step(0.0, &always);
    assert_eq!(sent(&load).len(), 1);
    let first = s.live().next().unwrap();
    s.leaf_succeeded(first);
    s.step(1.0, &always); // the first drive
    let drive = s.live().next().unwrap();
    let out = s.pause("paused").unwrap();
    assert!(out.contains(&Output::CancelGoal {
        leaf: drive,
        path: "task/duty[0]/message[0]/action[1]".into()
    }));
    assert!(
        s.step(2.0, &always).is_empty(),
        "nothing is dispatched while paused"
    );
    let resumed = s.resume().unwrap();
    assert!(resumed
        .iter()
        .any(|o| matches!(o, Output::Status(c) if c.path == "task" && c.new == Status::Sendable)));
    assert_eq!(s.resume(), Err(Refused::NotPaused));
    let out = run(&mut s, 3.0);
    assert_eq!(
        sent(&out)[0],
        "task/duty[0]/message[0]/action[1]",
        "the interrupted drive goes again"
    );
    assert!(
        !sent(&out).contains(&"task/duty[0]/message[0]/action[0]".to_owned()),
        "the load never again"
    );
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
}

#[test]
fn cancel_cancels_a_goal_not_yet_accepted_and_ends_everything() {
    let mut s = task();
    s.step(0.0, &always); // the load goal is sent; the actuator has not answered
    let load = s.live().next().unwrap();
    let out = s.cancel().unwrap();
    assert!(out.contains(&Output::CancelGoal {
        leaf: load,
        path: "task/duty[0]/message[0]/action[0]".into()
    }));
    assert!(s
        .tree()
        .nodes
        .iter()
        .all(|n| n.status.name() == "ended" && n.status.reason() == "cancelled"));
    assert_eq!(s.outcome(), Some(&Outcome::Cancelled));
    assert_eq!(s.cancel(), Err(Refused::Over));
    // The actuator's late answer changes nothing.
    assert!(s.leaf_succeeded(load).is_empty());
}

#[test]
fn a_failed_action_ends_the_task_with_its_path() {
    let mut s = task();
    s.step(0.0, &always);
    let first = s.live().next().unwrap();
    s.leaf_succeeded(first);
    s.step(1.0, &always);
    let drive = s.live().next().unwrap();
    let out = s.leaf_failed(drive, "route blocked");
    assert_eq!(
        out.last(),
        Some(&Output::Finished(Outcome::Failed {
            path: "task/duty[0]/message[0]/action[1]".into(),
            reason: "route blocked".into()
        }))
    );
    let status = |path: &str| s.tree().nodes[s.tree().find(path).unwrap()].status.to_string();
    assert_eq!(status("task"), "ended (failed)");
    assert_eq!(status("task/duty[0]/message[0]/action[0]"), "completed");
    assert_eq!(status("task/duty[0]/message[1]/action[0]"), "ended (forced)");
}

#[test]
fn attributes_at_run_time_are_refused_with_a_reason_where_they_cannot_apply() {
    let mut s = task();
    s.step(0.0, &always);
    let load = s.live().next().unwrap();
    let delay = || Attribute::Delay { secs: 1.0 };
    assert_eq!(
        s.add_attribute("task/duty[3]", delay()).unwrap_err().to_string(),
        "no subtask `task/duty[3]` in this task"
    );
    assert!(matches!(
        s.add_attribute("task/duty[0]/message[0]/action[0]", delay()),
        Err(Refused::RunningLeaf(_))
    ));
    s.leaf_succeeded(load);
    assert_eq!(
        s.add_attribute("task/duty[0]/message[0]/action[0]", delay()).unwrap_err().to_string(),
        "`task/duty[0]/message[0]/action[0]` is completed: attributes apply to subtasks that have not finished"
    );
    // On a running group, a delay holds its next child: the drive waits.
    s.add_attribute("task/duty[0]/message[0]", delay()).unwrap();
    assert!(sent(&s.step(5.0, &always)).is_empty());
    assert_eq!(sent(&s.step(6.0, &always)), ["task/duty[0]/message[0]/action[1]"]);
}
