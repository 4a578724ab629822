//! Random sequences of events: the manager never sends a goal to an actuator that still runs one, and every
//! accepted task ends exactly once.

#[path = "common/world.rs"]
mod world;

use lockstep_tasks::manager::{Command, Event, EventKind};
use proptest::prelude::*;
use world::World;

#[derive(Debug, Clone)]
enum Op {
    Submit { flaky: bool, priority: i32 },
    Cancel(usize),
    Pause(usize),
    Resume(usize),
    Accept(usize),
    End { goal: usize, success: bool },
    Busy { arm: bool, secs: f64 },
    Tick(f64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            any::<bool>(),
            prop_oneof![0..3i32, Just(i32::MIN), Just(i32::MAX)]
        )
            .prop_map(|(flaky, priority)| Op::Submit { flaky, priority }),
        (0..8usize).prop_map(Op::Cancel),
        (0..8usize).prop_map(Op::Pause),
        (0..8usize).prop_map(Op::Resume),
        (0..4usize).prop_map(Op::Accept),
        (0..4usize, any::<bool>()).prop_map(|(goal, success)| Op::End { goal, success }),
        (any::<bool>(), 0.0..3.0f64).prop_map(|(arm, secs)| Op::Busy { arm, secs }),
        (0.0..2.0f64).prop_map(Op::Tick),
    ]
}

fn task(w: &World, i: usize) -> Option<String> {
    let ids: Vec<&String> = w.accepted.values().collect();
    (!ids.is_empty()).then(|| ids[i % ids.len()].clone())
}

fn apply(w: &mut World, op: Op) {
    match op {
        Op::Submit { flaky, priority } => {
            w.submit(if flaky { "flaky" } else { "job" }, priority);
        }
        Op::Cancel(i) => {
            if let Some(task) = task(w, i) {
                w.event(Event::Cancel { task });
            }
        }
        Op::Pause(i) => {
            if let Some(task) = task(w, i) {
                let reason = String::new();
                w.event(Event::Pause {
                    request: 0,
                    task,
                    reason,
                });
            }
        }
        Op::Resume(i) => {
            if let Some(task) = task(w, i) {
                w.event(Event::Resume { request: 0, task });
            }
        }
        Op::Accept(i) if !w.out.is_empty() => {
            let i = i % w.out.len();
            if !w.out[i].accepted {
                w.accept(i);
            }
        }
        Op::End { goal, success } if !w.out.is_empty() => w.end(goal % w.out.len(), success),
        Op::Busy { arm, secs } => {
            let server = if arm { "/arm" } else { "/nav" }.to_owned();
            w.event(Event::ActuatorState {
                server,
                busy: secs > 0.5,
                remaining_s: secs,
            });
        }
        Op::Tick(dt) => w.tick(dt),
        _ => {}
    }
}

/// Cancel everything and let every goal end, until every task is over.
fn wind_down(w: &mut World) {
    for _ in 0..50 {
        let ids: Vec<String> = w.accepted.values().cloned().collect();
        for task in ids {
            w.event(Event::Cancel { task });
        }
        while !w.out.is_empty() {
            if !w.out[0].accepted {
                w.accept(0);
            }
            w.end(0, false);
        }
        w.tick(1.0);
        if w.manager.tasks.values().all(|t| t.is_finished()) {
            return;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn no_goal_goes_to_a_busy_actuator_and_every_task_ends_once(ops in prop::collection::vec(op(), 1..60)) {
        let mut w = World::new();
        for op in ops {
            apply(&mut w, op);
            prop_assert!(w.doubled.is_empty(), "{:?}", w.doubled);
        }
        wind_down(&mut w);
        prop_assert!(w.doubled.is_empty(), "{:?}", w.doubled);
        for task in w.accepted.values() {
            let results = w.finished().iter().filter(|(t, _)| t == task).count();
            let ends = (w.log.iter())
                .filter(|c| matches!(c, Command::Publish(e) if e.kind == EventKind::Finished && &e.task_id == task))
                .count();
            prop_assert_eq!((results, ends), (1, 1), "{} ended {} times", task, results);
        }
    }
}
