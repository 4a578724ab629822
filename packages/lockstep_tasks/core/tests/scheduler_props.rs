//! Property test (pure): random trees (some groups parallel), random event sequences against the scheduler.
//! No leaf is sent again once completed or while its goal is out, one group report per completed group,
//! nothing is sent after the end, and a completed task has every subtask completed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::config;
use lockstep_tasks::{Attribute, Outcome, Output, Params, Scheduler, Status, Tree};
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn scheduling_invariants_hold(
        fanouts in prop::collection::vec(1usize..4, 1..4),
        parallel in prop::collection::vec(any::<bool>(), 3),
        events in prop::collection::vec(event(), 0..200),
    ) {
        let tree = Tree::decompose(&config(&fanouts, &parallel), "t0", &Params::new()).unwrap();
        let mut s = Scheduler::new(tree);
        let mut now = 0.0;
        let mut completed: BTreeSet<usize> = BTreeSet::new();
        let mut live: BTreeSet<usize> = BTreeSet::new();
        let mut groups = 0usize;
        let mut finished = false;
        // `q1` holds, `q0` never does.
        let conditions = |q: &str| q == "q1";
        for e in events {
            let out = match e {
                Event::Step(dt) => { now += dt; s.step(now, &conditions) }
                Event::Succeed(i) => {
                    let all: Vec<usize> = s.live().collect();
                    if all.is_empty() { continue }
                    s.leaf_succeeded(all[i.index(all.len())])
                }
                Event::Fail(i) => {
                    let all: Vec<usize> = s.live().collect();
                    if all.is_empty() { continue }
                    s.leaf_failed(all[i.index(all.len())], "broken")
                }
                Event::Pause => s.pause("paused").unwrap_or_default(),
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
                    }
                    Output::CancelGoal { leaf, .. } => { prop_assert!(live.remove(leaf), "cancel of {} not out", leaf); }
                    Output::Status(c) if c.new == Status::Completed && s.tree().nodes[c.id].actuator.is_some() => {
                        prop_assert!(live.remove(&c.id));
                        completed.insert(c.id);
                    }
                    Output::Status(c) if c.new.name() == "ended" => { live.remove(&c.id); }
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
                prop_assert!(tree.nodes.iter().all(|n| n.status == Status::Completed));
            }
        }
    }
}
