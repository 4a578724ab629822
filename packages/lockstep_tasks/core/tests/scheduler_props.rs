//! Property test (pure): random trees (some groups parallel), random event sequences against the scheduler.
//! No leaf is sent again once completed or while its goal is out, one group report per completed group,
//! nothing is sent after the end, and a completed task has every subtask completed (or replaced by a
//! fallback). Some trees retry their groups, time out and retry their leaves, have fallbacks for them, or
//! pause goals instead of cancelling them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::config;
use lockstep_tasks::config::Child;
use lockstep_tasks::{
    Attribute, Conditions, Config, Outcome, Output, Params, Retry, Scheduler, Status, Tree,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Event {
    Step(f64),
    Succeed(prop::sample::Index),
    Fail(prop::sample::Index),
    Pause,
    Resume,
    Attribute(prop::sample::Index, u8),
    Cancel,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        6 => (0.0..3.0f64).prop_map(Event::Step),
        6 => any::<prop::sample::Index>().prop_map(Event::Succeed),
        1 => any::<prop::sample::Index>().prop_map(Event::Fail),
        1 => Just(Event::Pause),
        2 => Just(Event::Resume),
        2 => (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, k)| Event::Attribute(i, k)),
        1 => Just(Event::Cancel),
    ]
}

fn attribute(k: u8) -> Attribute {
    match k % 3 {
        0 => Attribute::Delay {
            secs: f64::from(k % 5),
        },
        1 => Attribute::Interrupt {
            reason: "obstacle".into(),
        },
        _ => Attribute::Condition {
            query: format!("q{}", k % 2),
        },
    }
}

/// `q1` holds, `q0` never does; the actuator pauses goals if `pausable`.
struct Env {
    pausable: bool,
}

impl Conditions for Env {
    fn holds(&self, query: &str) -> bool {
        query == "q1"
    }

    fn pausable(&self, _: &str) -> bool {
        self.pausable
    }
}

/// Retries on every group, a timeout and retries on the leaves, a fallback for every leaf.
fn with_recovery(
    mut config: Config,
    levels: usize,
    (groups, leaves, fallbacks): (bool, bool, bool),
) -> Config {
    let last = format!("t{levels}");
    for (name, t) in &mut config.templates {
        if groups && *name != last {
            t.retry = Some(Retry {
                attempts: 1,
                backoff_s: 0.5,
            });
        }
        if leaves && *name == last {
            t.retry = Some(Retry {
                attempts: 1,
                backoff_s: 0.0,
            });
            t.timeout_s = Some(2.0);
        }
        if fallbacks && *name == format!("t{}", levels - 1) {
            for child in &mut t.children {
                child.fallback = Some(Box::new(Child {
                    template: last.clone(),
                    ..Child::default()
                }));
            }
        }
    }
    config
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    #[test]
    fn scheduling_invariants_hold(
        fanouts in prop::collection::vec(1usize..4, 1..4),
        parallel in prop::collection::vec(any::<bool>(), 3),
        events in prop::collection::vec(event(), 0..200),
        recovery in any::<(bool, bool, bool)>(),
        pausable in any::<bool>(),
    ) {
        let config = with_recovery(config(&fanouts, &parallel), fanouts.len(), recovery);
        let tree = Tree::decompose(&config, "t0", &Params::new()).unwrap();
        let mut s = Scheduler::new(tree);
        let mut now = 0.0;
        let mut completed: BTreeSet<usize> = BTreeSet::new();
        let mut live: BTreeSet<usize> = BTreeSet::new();
        // Paused goals that succeeded: completed on resume.
        let mut deferred: BTreeSet<usize> = BTreeSet::new();
        let mut groups = 0usize;
        let mut finished = false;
        let conditions = Env { pausable };
        for e in events {
            let out = match e {
                Event::Step(dt) => { now += dt; s.step(now, &conditions) }
                Event::Succeed(i) => {
                    let all: Vec<usize> = s.live().collect();
                    if all.is_empty() { continue }
                    let leaf = all[i.index(all.len())];
                    let out = s.leaf_succeeded(leaf);
                    if out.is_empty() {
                        prop_assert!(live.remove(&leaf) && deferred.insert(leaf));
                    }
                    out
                }
                Event::Fail(i) => {
                    let all: Vec<usize> = s.live().collect();
                    if all.is_empty() { continue }
                    let leaf = all[i.index(all.len())];
                    live.remove(&leaf);
                    s.leaf_failed(leaf, "broken")
                }
                Event::Pause => s.pause_with("paused", &conditions).unwrap_or_default(),
                Event::Resume => s.resume().unwrap_or_default(),
                Event::Attribute(i, k) => {
                    let path = s.tree().nodes[i.index(s.tree().nodes.len())].path.clone();
                    s.add_attribute(&path, attribute(k)).unwrap_or_default()
                }
                Event::Cancel => s.cancel().unwrap_or_default(),
            };
            for o in &out {
                match o {
                    Output::SendGoal { leaf, .. } => {
                        prop_assert!(!finished, "a goal after the end");
                        prop_assert!(!completed.contains(leaf), "leaf {} sent again after completing", leaf);
                        prop_assert!(live.insert(*leaf), "leaf {} sent while its goal is out", leaf);
                        prop_assert!(!s.tree().nodes[*leaf].standby, "a standby leaf sent");
                    }
                    Output::PauseGoal { leaf, .. } | Output::ResumeGoal { leaf, .. } => {
                        prop_assert!(live.contains(leaf), "pause or resume of {} not out", leaf);
                    }
                    Output::Retry { attempt, attempts, .. } => prop_assert!(attempt <= attempts),
                    Output::CancelGoal { leaf, .. } => { prop_assert!(live.remove(leaf), "cancel of {} not out", leaf); }
                    Output::Status(c) if c.new == Status::Completed && s.tree().nodes[c.id].actuator.is_some() => {
                        prop_assert!(live.remove(&c.id) || deferred.remove(&c.id));
                        completed.insert(c.id);
                    }
                    Output::Status(c) if c.new.name() == "ended" => { live.remove(&c.id); deferred.remove(&c.id); }
                    Output::GroupCompleted { .. } => groups += 1,
                    Output::Finished(_) => finished = true,
                    _ => {}
                }
            }
            let tree = s.tree();
            let done_groups = tree.nodes.iter().filter(|n| n.actuator.is_none() && n.status == Status::Completed).count();
            prop_assert_eq!(groups, done_groups);
            prop_assert_eq!(live.iter().copied().collect::<Vec<_>>(), s.live().collect::<Vec<_>>());
            for n in &tree.nodes {
                if n.status == Status::Completed {
                    prop_assert!(n.children.iter().all(|&c| tree.nodes[c].status == Status::Completed), "{}", n.path);
                }
            }
            if s.outcome() == Some(&Outcome::Completed) {
                // Every subtask of the task completed, or failed and was replaced by a fallback.
                let replaced = |n: &lockstep_tasks::Subtask| n.fallback.is_some_and(|f| !tree.nodes[f].standby);
                for &id in tree.levels.iter().flatten() {
                    let n = &tree.nodes[id];
                    prop_assert!(n.status == Status::Completed || replaced(n), "{} {}", n.path, n.status);
                }
            }
        }
    }
}
