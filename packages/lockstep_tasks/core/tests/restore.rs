//! A task rebuilt after the manager restarted, from the paths of its completed leaves: it waits for resume,
//! then sends only what had not completed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{always, sent, small_with_drive, SMALL};
use lockstep_tasks::{
    Config, EndReason, Id, Outcome, Output, Params, Refused, RestoreError, Scheduler, Status, Tree,
};

/// Two pairs of pick then drive.
fn small_tree() -> Tree {
    Tree::decompose(
        &Config::parse("small.yaml", SMALL).unwrap(),
        "job",
        &Params::new(),
    )
    .unwrap()
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

fn status(s: &Scheduler, path: &str) -> Status {
    s.tree().nodes[s.tree().find(path).unwrap()].status.clone()
}

const PICK: &str = "task/group[0]/action[0]";
const DRIVE: &str = "task/group[0]/action[1]";

#[test]
fn completed_leaves_are_never_sent_again_after_a_restart() {
    let mut before = Scheduler::new(small_tree());
    for now in [0.0, 1.0] {
        before.step(now, &always);
        let leaf = before.live().next().unwrap();
        before.leaf_succeeded(leaf);
    }
    before.step(2.0, &always); // the second pick is running when the manager stops
    assert_eq!(before.completed_leaves(), [PICK, DRIVE]);
    assert_eq!(before.last_completed_leaf().as_deref(), Some(DRIVE));

    let mut after = Scheduler::restore(small_tree(), &before.completed_leaves()).unwrap();
    assert!(after.is_paused());
    assert_eq!(status(&after, "task/group[0]"), Status::Completed);
    assert_eq!(status(&after, PICK), Status::Completed);
    assert_eq!(status(&after, "task/group[1]"), Status::Sendable);
    assert_eq!(status(&after, "task"), Status::Sendable);
    assert_eq!(after.last_completed_leaf().as_deref(), Some(DRIVE));
    assert!(after.step(3.0, &always).is_empty(), "nothing runs until resume");
    after.resume().unwrap();
    let out = finish(&mut after, 4.0);
    assert_eq!(sent(&out), ["task/group[1]/action[0]", "task/group[1]/action[1]"]);
    assert_eq!(after.outcome(), Some(&Outcome::Completed));
    assert_eq!(after.completed_leaves().len(), 4);
}

#[test]
fn a_leaf_completed_out_of_order_is_skipped() {
    let mut s = Scheduler::restore(small_tree(), &[DRIVE.to_owned()]).unwrap();
    s.resume().unwrap();
    let out = finish(&mut s, 0.0);
    assert_eq!(
        sent(&out),
        [PICK, "task/group[1]/action[0]", "task/group[1]/action[1]"]
    );
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
}

#[test]
fn unknown_paths_and_groups_are_refused_naming_the_path() {
    let unknown = Scheduler::restore(small_tree(), &["task/group[7]/action[0]".to_owned()]);
    assert_eq!(
        unknown.unwrap_err().to_string(),
        "no subtask `task/group[7]/action[0]` in this task"
    );
    let group = Scheduler::restore(small_tree(), &["task/group[0]".to_owned()]);
    assert_eq!(group.unwrap_err(), RestoreError::NotALeaf("task/group[0]".into()));
}

#[test]
fn a_task_whose_leaves_had_all_completed_is_over() {
    let all: Vec<String> = (small_tree().leaves())
        .map(|l| small_tree().nodes[l].path.clone())
        .collect();
    let mut s = Scheduler::restore(small_tree(), &all).unwrap();
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
    assert!(s.tree().nodes.iter().all(|n| n.status == Status::Completed));
    assert_eq!(s.resume(), Err(Refused::Over));
}

#[test]
fn a_fallback_that_had_run_takes_over_again() {
    let config = small_with_drive("        fallback: {type: detour}\n");
    let tree = || Tree::decompose(&config, "job", &Params::new()).unwrap();
    let detour = "task/group[0]/action[1]~fallback";
    let done = ["task/group[0]/action[0]".to_owned(), detour.to_owned()];
    let mut s = Scheduler::restore(tree(), &done).unwrap();
    assert_eq!(
        status(&s, "task/group[0]/action[1]"),
        Status::Ended(EndReason::Failed)
    );
    assert_eq!(status(&s, detour), Status::Completed);
    assert_eq!(status(&s, "task/group[0]"), Status::Completed);
    let leaves: Vec<String> = s
        .tree()
        .leaves()
        .map(|l| s.tree().nodes[l].path.clone())
        .collect();
    assert_eq!(
        leaves[..3],
        ["task/group[0]/action[0]", "task/group[0]/action[1]", detour]
    );
    assert_eq!(s.completed_leaves(), done);
    s.resume().unwrap();
    let out = finish(&mut s, 0.0);
    assert_eq!(sent(&out), ["task/group[1]/action[0]", "task/group[1]/action[1]"]);
    assert_eq!(s.outcome(), Some(&Outcome::Completed));
}
