#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every number the interpolation player's services and actions take, with any value of its type (NaN,
//! infinities, ±1e308, subnormals, -0.0, every integer): refused with a message saying which value is
//! wrong, or a plan / motion whose numbers are finite and in range; never a panic (debug build: an
//! arithmetic overflow panics too). Each request goes through what the node calls:
//!
//! - PauseMotion.stop_time_secs, ResumeMotion.start_time_secs / speed_factor, SetSpeed.speed_factor:
//!   `Request::pause` / `Request::resume` / `Request::SetSpeed`, planned a few ticks ahead
//!   (`Session::prepare`, then `Session::install`) or at once (`Session::apply`).
//! - MovePlay goal start_index / end_index (int64) / speed_factor: `goal_factor`, `Session::new`.
//! - FollowJointTrajectory goal (header stamp, points' time_from_start, positions, velocities,
//!   accelerations, path / goal tolerances, goal_time_tolerance): `trajectory::check`,
//!   `Tolerances::with_goal`, `Session::follow`.

mod common;

use std::sync::Arc;

use common::{limits_for, quintic_file, WAYPOINTS};
use lockstep_interpolation::session::{Options, Request, Session, State};
use lockstep_interpolation::tolerance::{JointTolerance, Tolerances};
use lockstep_interpolation::trajectory::{check, JointTrajectory, TrajectoryPoint};
use lockstep_interpolation::{goal_factor, Interpolation, Plan};
use lockstep_ranges::hostile::{any_f64_around, any_nanosec, any_time_sec, config};
use proptest::prelude::*;

const PERIOD: f64 = 0.002;

/// Any f64, the hostile ones often (see `lockstep_ranges::hostile`).
fn any_f64() -> BoxedStrategy<f64> {
    any_f64_around(-5.0..5.0f64)
}

fn options(factor: f64) -> Options {
    Options {
        period_secs: PERIOD,
        factor,
        align: false,
        tolerance: 1e-4,
        settle_timeout_secs: 1.0,
        interpolation: Interpolation::Linear,
    }
}

/// A session `ticks` into the section (it moves from about tick 25 on).
fn playing(ticks: u64) -> Session {
    let file = Arc::new(quintic_file(PERIOD, &WAYPOINTS, 0.5, 0.05));
    let mut s = Session::new(file, limits_for(0.5, 0.9, false), -1, -1, None, options(1.0)).unwrap();
    for _ in 0..ticks {
        s.tick(None).unwrap();
    }
    s
}

/// A session stopped along its path.
fn paused() -> Session {
    let mut s = playing(150);
    s.apply(Request::pause(0.0)).unwrap();
    for _ in 0..5000 {
        if s.state_name() == "paused" {
            return s;
        }
        s.tick(None).unwrap();
    }
    panic!("never paused: {}", s.state_name());
}

fn plan_is_finite(plan: &Plan) -> bool {
    [
        plan.delay_secs,
        plan.ramp_secs,
        plan.from,
        plan.to,
        plan.t_min_secs,
        plan.t_feasible_secs,
    ]
    .iter()
    .all(|x| x.is_finite() && *x >= 0.0)
}

/// `ticks` output ticks: every command finite (the session may end or fail with an error, never panic).
fn commands_stay_finite(session: &mut Session, ticks: usize) -> Result<(), String> {
    for _ in 0..ticks {
        match session.tick(None) {
            Ok(command) => {
                if let Some(x) = command.iter().find(|x| !x.is_finite()) {
                    return Err(format!("command {x} in {command:?}"));
                }
            }
            Err(_) => return Ok(()),
        }
        if session.finished() {
            return Ok(());
        }
    }
    Ok(())
}

/// Plan `request` as the node does (a few ticks ahead, then installed at that tick), and at once on a
/// copy: each is a plan with finite numbers, or a refusal whose message contains one of `words`.
fn planned(session: &Session, request: Request, words: &[&str]) -> Result<Option<Plan>, TestCaseError> {
    let mut now = session.clone();
    match now.apply(request.clone()) {
        Ok(plan) => prop_assert!(plan_is_finite(&plan), "{:?} planned {:?}", request, plan),
        Err(refusal) => {
            let m = refusal.to_string();
            prop_assert!(words.iter().any(|w| m.contains(w)), "{:?}: {}", request, m);
        }
    }
    let mut live = session.clone();
    match live.prepare(request.clone(), 3) {
        Ok(prepared) => {
            let at = prepared.at_tick;
            while live.ticks() < at {
                live.tick(None).unwrap();
            }
            let plan = live.install(prepared).unwrap();
            prop_assert!(plan_is_finite(&plan), "{:?} planned {:?}", request, plan);
            commands_stay_finite(&mut live, 200).map_err(TestCaseError::fail)?;
            Ok(Some(plan))
        }
        Err(refusal) => {
            let m = refusal.to_string();
            prop_assert!(
                !m.is_empty() && words.iter().any(|w| m.contains(w)),
                "{:?}: {}",
                request,
                m
            );
            Ok(None)
        }
    }
}

proptest! {
    #![proptest_config(config(256, 0x5EED_0003))]

    /// PauseMotion.stop_time_secs (0 or less: the shortest feasible stop).
    #[test]
    fn pause_stop_time_secs_is_refused_or_planned_finite(stop_time_secs in any_f64()) {
        let session = playing(150);
        let plan = planned(&session, Request::pause(stop_time_secs), &["stop time", "time"])?;
        prop_assert!(plan.is_none() || !stop_time_secs.is_nan(), "a NaN stop time was taken: {:?}", plan);
        if let Some(plan) = plan {
            prop_assert_eq!(plan.to, 0.0);
            if stop_time_secs > 0.0 {
                prop_assert!((plan.total_secs() - stop_time_secs).abs() <= 1e-9 * stop_time_secs.max(1.0),
                    "asked {} s, planned {:?}", stop_time_secs, plan);
            }
        }
    }

    /// ResumeMotion.start_time_secs and speed_factor (0 or less: the shortest ramp, the factor before).
    #[test]
    fn resume_start_time_and_speed_factor_are_refused_or_planned_finite(
        start_time_secs in any_f64(),
        speed_factor in any_f64(),
    ) {
        let session = paused();
        let s_max = session.s_max();
        let plan = planned(
            &session,
            Request::resume(start_time_secs, speed_factor),
            &["time", "speed factor"],
        )?;
        prop_assert!(
            plan.is_none() || !(start_time_secs.is_nan() || speed_factor.is_nan()),
            "NaN taken: {:?}", plan
        );
        if let Some(plan) = plan {
            prop_assert!(plan.to > 0.0 && plan.to <= s_max, "{:?} (s_max {})", plan, s_max);
            if speed_factor > 0.0 {
                prop_assert_eq!(plan.to, speed_factor);
            }
            if start_time_secs > 0.0 {
                prop_assert!((plan.total_secs() - start_time_secs).abs() <= 1e-9 * start_time_secs.max(1.0),
                    "asked {} s, planned {:?}", start_time_secs, plan);
            }
        }
    }

    /// SetSpeed.speed_factor.
    #[test]
    fn set_speed_factor_is_refused_or_planned_finite(speed_factor in any_f64(), pause_first in any::<bool>()) {
        let session = if pause_first { paused() } else { playing(150) };
        let s_max = session.s_max();
        let request = Request::SetSpeed { factor: speed_factor };
        if let Some(plan) = planned(&session, request, &["speed factor"])? {
            prop_assert!(speed_factor.is_finite() && speed_factor > 0.0 && speed_factor <= s_max,
                "speed_factor {} taken (s_max {})", speed_factor, s_max);
            prop_assert!(plan == Plan::NOTHING || plan.to == speed_factor, "{:?}", plan);
        }
    }

    /// MovePlay goal: start_index / end_index over all of int64 (-1: first / last), speed_factor any f64
    /// (0 or less: 1).
    #[test]
    fn move_play_indices_and_speed_factor_are_refused_or_played_finite(
        start_index in prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(-1i64), Just(0i64), -2..700i64, any::<i64>()],
        end_index in prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(-1i64), Just(0i64), 500..700i64, any::<i64>()],
        speed_factor in any_f64(),
        align in any::<bool>(),
    ) {
        let file = Arc::new(quintic_file(PERIOD, &WAYPOINTS, 0.5, 0.05));
        let points = file.points.len() as i64;
        let factor = goal_factor(speed_factor);
        prop_assert!(factor.is_finite() || !speed_factor.is_finite(), "factor {} from {}", factor, speed_factor);
        // Aligning first from elsewhere, or not.
        let away = [0.3, -0.2, 0.25];
        let options = Options { align, ..options(factor) };
        let current = align.then_some(&away[..]);
        match Session::new(file, limits_for(0.5, 0.9, false), start_index, end_index, current, options) {
            Ok(mut session) => {
                prop_assert!(!speed_factor.is_nan(), "a NaN speed_factor was taken (as {})", factor);
                let first = if start_index < 0 { 0 } else { start_index };
                let last = if end_index < 0 { points - 1 } else { end_index };
                prop_assert!(0 <= first && first <= last && last < points, "{}..{} of {}", start_index, end_index, points);
                prop_assert!(factor.is_finite() && factor > 0.0 && factor <= session.s_max());
                prop_assert!(matches!(session.state(), State::Playing | State::Aligning));
                commands_stay_finite(&mut session, 300).map_err(TestCaseError::fail)?;
            }
            Err(e) => {
                let m = e.to_string();
                prop_assert!(
                    m.contains(&format!("points {start_index}..{end_index}"))
                        || m.contains("speed factor")
                        || m.contains("section ends at point"),
                    "{}", m
                );
            }
        }
    }
}

/// The values the properties above found: a stop or start time beyond the longest ramp the planner plans
/// made it step a copy of the motion through the whole ramp (1e308 s: `u64` overflow; 1e9 s: hours of
/// planning), and NaN was taken as "not given".
#[test]
fn a_time_beyond_the_longest_ramp_or_nan_is_refused_at_once() {
    let started = std::time::Instant::now();
    for t in [1e308, 1e9, 3600.0, 61.0, f64::NAN] {
        for (session, request) in [
            (playing(150), Request::pause(t)),
            (paused(), Request::resume(t, 0.0)),
        ] {
            let e = session.clone().apply(request.clone()).unwrap_err().to_string();
            assert!(e.contains("time"), "{request:?}: {e}");
            assert!(session.prepare(request.clone(), 3).is_err(), "{request:?}");
        }
    }
    let e = paused()
        .apply(Request::resume(0.0, f64::NAN))
        .unwrap_err()
        .to_string();
    assert!(e.contains("speed factor NaN"), "{e}");
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
}

/// A ROS `Time` / `Duration` in seconds as the node reads them (`sec` int32, `nanosec` uint32): the stamp
/// through exact nanoseconds, a duration as `sec + nanosec * 1e-9`.
fn stamp_secs(sec: i32, nanosec: u32) -> f64 {
    (i64::from(sec) * 1_000_000_000 + i64::from(nanosec)) as f64 * 1e-9
}

fn duration_secs(sec: i32, nanosec: u32) -> f64 {
    f64::from(sec) + f64::from(nanosec) * 1e-9
}

/// A value of a trajectory point: mostly one a planner sends, else any f64.
fn joint_value() -> impl Strategy<Value = f64> {
    prop_oneof![3 => -0.5..0.5f64, 1 => any_f64()]
}

fn point() -> impl Strategy<Value = ((i32, u32), Vec<f64>, Vec<f64>, Vec<f64>)> {
    (
        (prop_oneof![3 => 0..4i32, 1 => any_time_sec()], any_nanosec()),
        prop::collection::vec(joint_value(), 3),
        prop_oneof![Just(Vec::new()), prop::collection::vec(joint_value(), 3)],
        prop_oneof![Just(Vec::new()), prop::collection::vec(joint_value(), 3)],
    )
}

fn tolerance() -> impl Strategy<Value = (usize, f64, f64, f64)> {
    (0..3usize, any_f64(), any_f64(), any_f64())
}

proptest! {
    #![proptest_config(config(256, 0x5EED_0004))]

    /// FollowJointTrajectory goal: every number of the trajectory and the tolerances.
    #[test]
    fn follow_joint_trajectory_numbers_are_refused_or_played_finite(
        stamp in (prop_oneof![3 => Just(0i32), 1 => any_time_sec()], any_nanosec()),
        points in prop::collection::vec(point(), 1..4),
        path in prop::collection::vec(tolerance(), 0..3),
        goal in prop::collection::vec(tolerance(), 0..3),
        goal_time in (any_time_sec(), any_nanosec()),
    ) {
        let joints: Vec<String> = ["shoulder", "elbow", "wrist"].map(String::from).to_vec();
        let mut points = points;
        // Increasing times, as a planner sends them (any numbers are in the first point's).
        points.sort_by_key(|p| (i64::from(p.0 .0), p.0 .1));
        if let Some(last) = points.last_mut() {
            last.2.clear();
        }
        let trajectory = JointTrajectory {
            stamp_secs: stamp_secs(stamp.0, stamp.1),
            joint_names: joints.clone(),
            points: points.iter().map(|((sec, nanosec), p, v, a)| TrajectoryPoint {
                positions: p.clone(),
                velocities: v.clone(),
                accelerations: a.clone(),
                effort: Vec::new(),
                time_from_start_secs: duration_secs(*sec, *nanosec),
            }).collect(),
        };
        let tolerances = |list: &[(usize, f64, f64, f64)]| -> Vec<JointTolerance> {
            list.iter().map(|&(j, position, velocity, acceleration)| JointTolerance {
                name: joints[j].clone(),
                position,
                velocity,
                acceleration,
            }).collect()
        };
        let defaults = Tolerances::uniform(&joints, 0.1, 0.01, 0.05, 1.0);
        let (resolved, warning) = defaults.with_goal(
            &tolerances(&path),
            &tolerances(&goal),
            duration_secs(goal_time.0, goal_time.1),
        );
        if let Some(w) = &warning {
            prop_assert!(w.contains("tolerance"), "{}", w);
            prop_assert_eq!(&resolved, &defaults);
        }
        for x in resolved.path_position.iter().chain(&resolved.goal_position).chain(&resolved.goal_velocity)
            .chain(std::iter::once(&resolved.goal_time_secs))
        {
            prop_assert!(x.is_finite() && *x >= 0.0, "{:?}", resolved);
        }
        let now = 1_700_000_000.0;
        let checked = match check(&trajectory, &joints, now) {
            Ok(c) => c,
            Err(e) => {
                prop_assert!(!e.message.is_empty());
                return Ok(());
            }
        };
        for k in &checked.knots {
            prop_assert!(k.time_secs.is_finite() && k.time_secs >= 0.0);
            for x in k.positions.iter().chain(k.velocities.iter().flatten()).chain(k.accelerations.iter().flatten()) {
                prop_assert!(x.is_finite());
            }
        }
        let limits = limits_for(0.5, 0.9, false);
        match Session::follow(&checked, limits.clone(), options(1.0), None, &[0.0, 0.0, 0.0]) {
            Ok(mut session) => {
                let file = session.main().file().clone();
                for p in &file.points {
                    prop_assert!(p.iter().all(|x| x.is_finite()), "a sample {:?}", p);
                }
                commands_stay_finite(&mut session, 300).map_err(TestCaseError::fail)?;
            }
            Err(e) => prop_assert!(!e.message.is_empty()),
        }
        // Taking over a motion under way.
        let moving = playing(150);
        match Session::follow(&checked, limits, options(1.0), Some(moving.main()), &[0.0, 0.0, 0.0]) {
            Ok(mut session) => commands_stay_finite(&mut session, 300).map_err(TestCaseError::fail)?,
            Err(e) => prop_assert!(!e.message.is_empty()),
        }
    }
}
