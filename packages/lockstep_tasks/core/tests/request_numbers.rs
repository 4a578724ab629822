#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every number a request or goal of the task manager and the simulated actuators takes, with any value of
//! its type (NaN, infinities, ±1e308, subnormals, -0.0, every integer): refused with a message naming the
//! field, or taken with every number that follows from it finite and in its range; never a panic (the
//! tests run in a debug build, where an arithmetic overflow panics too).
//!
//! - AddAttribute.delay_s (task manager): [`lockstep_tasks::manager::goals::attribute`], then the delay in
//!   a running task.
//! - ExecuteTask.priority (task manager): tasks of any priorities queue, preempt and end.
//! - Occupy.duration_s, Lift.height_m, Roll.direction, Prompt.timeout_s, Navigate.speed_mps and its route
//!   (lockstep_actuator): the checks and clocks in [`lockstep_tasks::sim`] the binary calls.

#[path = "common/world.rs"]
mod world;

use std::time::{Duration, Instant};

use lockstep_ranges::hostile::{any_f64_around, config};
use lockstep_tasks::manager::goals::attribute;
use lockstep_tasks::manager::{AttributeRequest, Command, Event, State};
use lockstep_tasks::sim::busy::Busy;
use lockstep_tasks::sim::follower::{check_goal, Gains, Pose};
use lockstep_tasks::sim::navigation::{Drive, Tick};
use lockstep_tasks::sim::prompt::{check_timeout, PromptWait};
use lockstep_tasks::sim::timed::{check_lift, check_roll, describe_roll};
use lockstep_tasks::Attribute;
use proptest::prelude::*;
use world::World;

/// A route coordinate: often a usable one (the station maps' +-1e7 m), else any f64.
/// Any f64, the hostile ones often (see `lockstep_ranges::hostile`).
fn any_f64() -> BoxedStrategy<f64> {
    any_f64_around(-1e3..1e3f64)
}

fn coordinate() -> impl Strategy<Value = f64> {
    prop_oneof![3 => -1e7..1e7f64, 1 => any_f64()]
}

fn names_field(message: &str, field: &str) -> bool {
    !message.is_empty() && message.contains(field)
}

proptest! {
    #![proptest_config(config(256, 0x5EED_0001))]

    /// AddAttribute.delay_s: a delay is refused naming delay_s, or is finite and >= 0.
    #[test]
    fn add_attribute_delay_s_is_refused_naming_it_or_finite_and_not_negative(delay_s in any_f64()) {
        let request = AttributeRequest { kind: "delay".into(), delay_s, ..AttributeRequest::default() };
        match attribute(&request) {
            Ok(Attribute::Delay { secs }) => {
                prop_assert!(secs.is_finite() && secs >= 0.0, "delay_s {} taken as {}", delay_s, secs);
            }
            Ok(other) => prop_assert!(false, "delay_s {} became {:?}", delay_s, other),
            Err(e) => prop_assert!(names_field(&e, "delay_s"), "{}", e),
        }
    }

    /// AddAttribute.delay_s on a running task's next action: the manager answers, holds the action for the
    /// delay (a huge one for ever) and the task still ends on a cancel.
    #[test]
    fn add_attribute_delay_s_in_a_running_task_never_panics(delay_s in any_f64(), ticks in 0..5usize) {
        let mut w = World::new();
        let task = w.submit("job", 0).unwrap();
        let drive = w.manager.tasks[&task].sched.tree().nodes.iter()
            .find(|n| n.actuator.as_deref() == Some("nav"))
            .map(|n| n.path.clone())
            .unwrap();
        let commands = w.event(Event::AddAttribute {
            request: 99,
            task: task.clone(),
            path: drive,
            attribute: AttributeRequest { kind: "delay".into(), delay_s, ..AttributeRequest::default() },
        });
        let answer = commands.iter().find_map(|&i| match &w.log[i] {
            Command::Reply { request: 99, answer } => Some(answer.clone()),
            _ => None,
        });
        let answer = answer.expect("AddAttribute is answered");
        match &answer {
            Ok(_) => prop_assert!(delay_s.is_finite() && delay_s >= 0.0, "delay_s {} taken", delay_s),
            Err(e) => prop_assert!(names_field(e, "delay_s"), "{}", e),
        }
        w.run("arm", true);
        for _ in 0..ticks {
            w.tick(1.0);
        }
        if answer.is_ok() && delay_s > f64::from(u32::try_from(ticks).unwrap()) {
            prop_assert!(w.out.is_empty(), "the drive was sent before its delay of {} s", delay_s);
        }
        w.event(Event::Cancel { task: task.clone() });
        while let Some(o) = w.out.first().cloned() {
            w.run(&o.actuator, false);
        }
        w.tick(1.0);
        prop_assert!(w.manager.tasks[&task].is_finished(), "{:?}", w.state(&task));
    }

    /// ExecuteTask.priority: tasks of any priorities (INT32_MIN and INT32_MAX included) are accepted, keep
    /// their priority, and the running one is never of lower priority than one waiting.
    #[test]
    fn execute_task_priority_of_any_value_queues_and_preempts(
        priorities in prop::collection::vec(
            prop_oneof![Just(i32::MIN), Just(i32::MAX), Just(i32::MIN + 1), Just(i32::MAX - 1), Just(0), any::<i32>()],
            1..6,
        ),
    ) {
        let mut w = World::new();
        let mut ids = Vec::new();
        for &priority in &priorities {
            let id = w.submit("job", priority).unwrap();
            prop_assert_eq!(w.manager.tasks[&id].priority, priority);
            ids.push(id);
            // Let every goal out end, so a preempted task pauses and the new one runs.
            while let Some(o) = w.out.first().cloned() {
                if o.cancelled {
                    w.run(&o.actuator, false);
                } else {
                    break;
                }
            }
            w.tick(0.1);
        }
        let running: Vec<i32> = ids.iter()
            .filter(|id| w.state(id) == State::Running)
            .map(|id| w.manager.tasks[id].priority)
            .collect();
        let waiting: Vec<i32> = ids.iter()
            .filter(|id| matches!(w.state(id), State::Queued | State::Preempted))
            .map(|id| w.manager.tasks[id].priority)
            .collect();
        for r in &running {
            for q in &waiting {
                prop_assert!(r >= q, "running {} while {} waits", r, q);
            }
        }
        for id in &ids {
            w.event(Event::Cancel { task: id.clone() });
        }
        for _ in 0..20 {
            while let Some(o) = w.out.first().cloned() {
                w.run(&o.actuator, false);
            }
            w.tick(1.0);
        }
        for id in &ids {
            prop_assert!(w.manager.tasks[id].is_finished(), "{} is {:?}", id, w.state(id));
        }
    }

    /// Occupy.duration_s: refused naming duration_s, or busy for exactly that long (finite, >= 0).
    #[test]
    fn occupy_duration_s_is_refused_naming_it_or_a_finite_busy_time(duration_s in any_f64()) {
        let now = Instant::now();
        let mut busy = Busy::default();
        match busy.occupy(now, duration_s) {
            Ok(message) => {
                prop_assert!(duration_s.is_finite() && duration_s >= 0.0, "duration_s {} taken", duration_s);
                prop_assert!(!message.is_empty());
                let (is_busy, remaining_s) = busy.snapshot(now);
                prop_assert!(remaining_s.is_finite() && remaining_s >= 0.0, "{}", remaining_s);
                prop_assert!((remaining_s - duration_s).abs() <= 1e-9 * duration_s.max(1.0), "{} vs {}", remaining_s, duration_s);
                prop_assert_eq!(is_busy, remaining_s > 0.0);
                // A goal is refused while occupied, with the time left.
                let reserved = busy.try_reserve(now, None);
                prop_assert_eq!(reserved.is_err(), busy.occupied_until(now).is_some());
            }
            Err(e) => prop_assert!(names_field(&e, "duration_s"), "{}", e),
        }
    }

    /// Lift.height_m: refused naming height_m unless finite.
    #[test]
    fn lift_height_m_is_refused_naming_it_unless_finite(height_m in any_f64()) {
        match check_lift(height_m) {
            Ok(()) => prop_assert!(height_m.is_finite(), "height_m {} taken", height_m),
            Err(e) => prop_assert!(names_field(&e, "height_m") && !height_m.is_finite(), "{}", e),
        }
    }

    /// Roll.direction: every int8; only -1, 0 and +1 are taken.
    #[test]
    fn roll_direction_of_any_int8_is_refused_naming_it_or_in_range(direction in any::<i8>(), station in "[a-z]{0,3}") {
        match check_roll(direction) {
            Ok(()) => {
                prop_assert!((-1..=1).contains(&direction));
                let described = describe_roll(direction, &station);
                prop_assert!(described.contains(&format!("`{}`", station)), "{}", described);
            }
            Err(e) => prop_assert!(names_field(&e, "direction") && !(-1..=1).contains(&direction), "{}", e),
        }
    }

    /// Prompt.timeout_s: refused naming timeout_s, or a wait whose deadline, feedback and wake-up are
    /// finite times (a timeout beyond what the clock counts never comes, like none).
    #[test]
    fn prompt_timeout_s_is_refused_naming_it_or_a_finite_wait(timeout_s in any_f64()) {
        match check_timeout(timeout_s) {
            Ok(()) => {
                prop_assert!(timeout_s.is_finite() && timeout_s >= 0.0, "timeout_s {} taken", timeout_s);
                let now = Instant::now();
                let mut wait = PromptWait::new(now, timeout_s);
                let waited = wait.feedback(now).unwrap();
                prop_assert!(waited.is_finite() && waited >= 0.0);
                prop_assert!(wait.wake() >= now);
                prop_assert_eq!(wait.deadline().is_some(), wait.deadline().is_some_and(|d| d >= now));
                if timeout_s == 0.0 {
                    prop_assert!(wait.deadline().is_none());
                }
                if let Some(d) = wait.deadline() {
                    let secs = d.duration_since(now).as_secs_f64();
                    prop_assert!((secs - timeout_s).abs() <= 1e-6 * timeout_s.max(1.0), "{} vs {}", secs, timeout_s);
                }
                let later = now.checked_add(Duration::from_secs(1)).unwrap();
                let _ = wait.timed_out(later);
            }
            Err(e) => prop_assert!(names_field(&e, "timeout_s"), "{}", e),
        }
    }

    /// Navigate.speed_mps and route: refused naming the field, or driven with finite commands within the
    /// goal's speed and finite feedback.
    #[test]
    fn navigate_speed_and_route_are_refused_naming_them_or_driven_with_finite_numbers(
        speed_mps in any_f64(),
        route in prop::collection::vec((coordinate(), coordinate(), coordinate()), 0..4),
        pose in (-20.0..20.0f64, -20.0..20.0f64, -4.0..4.0f64),
    ) {
        match check_goal(&route, speed_mps) {
            Ok(points) => {
                prop_assert!(speed_mps.is_finite() && speed_mps > 0.0, "speed_mps {} taken", speed_mps);
                prop_assert_eq!(points.len(), route.len());
                let gains = Gains {
                    k_heading: 2.0,
                    max_angular_radps: 1.5,
                    max_linear_mps: 1.0,
                    tolerance_m: 0.15,
                    approach_decel_mps2: 0.5,
                };
                let mut drive = Drive::new(points, speed_mps, gains, 2.0);
                let fresh = Duration::from_millis(10);
                let at = Pose { x: pose.0, y: pose.1, yaw: pose.2 };
                for k in 0..3u32 {
                    match drive.tick(Some((at, fresh)), f64::from(k), fresh * k, "/pose") {
                        Tick::Drive { step, estimate_s, travelled_m, .. } => {
                            prop_assert!(step.linear.is_finite() && (0.0..=speed_mps.min(1.0)).contains(&step.linear), "{:?}", step);
                            prop_assert!(step.angular.is_finite() && step.angular.abs() <= 1.5, "{:?}", step);
                            prop_assert!(step.remaining_m.is_finite() && step.remaining_m >= 0.0, "remaining_m {:?}", step);
                            prop_assert!(estimate_s.is_finite() && estimate_s >= 0.0, "{}", estimate_s);
                            prop_assert!(Duration::try_from_secs_f64(estimate_s).is_ok());
                            prop_assert!(travelled_m.is_finite());
                        }
                        Tick::Arrived { travelled_m, .. } => prop_assert!(travelled_m.is_finite()),
                        other => prop_assert!(false, "{:?}", other),
                    }
                }
            }
            Err(e) => {
                let named = if speed_mps.is_finite() && speed_mps > 0.0 {
                    names_field(&e, "route")
                } else {
                    names_field(&e, "speed_mps")
                };
                prop_assert!(named, "{}", e);
            }
        }
    }
}
