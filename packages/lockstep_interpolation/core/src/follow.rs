//! A checked joint trajectory ([`crate::trajectory`]) turned into a motion the player streams: sampled at the
//! output period from the state the joints are commanded to now, checked against every limit at speed 1,
//! and played as a [`Session`] with the same pause, resume, speed ramps and cancel as an interpolation file.
//!
//! Between two points the motion is a quintic (position, velocity and acceleration given at both ends), so
//! velocity and acceleration never step. A point without velocities gets the harmonic mean of the slopes on
//! either side (0 where they differ in sign, so the motion does not overshoot a turning point, and 0 at the last
//! point); a point without accelerations gets 0 (a segment's accelerations stay its own: a point given too
//! soon shows in the segment that leads to it). The first segment starts from the current state with its velocity and
//! acceleration: a trajectory sent during a motion takes over from where the motion is without a jump. A
//! way from a moving state to the first point that would break a limit is stretched until it fits (the rest
//! of the trajectory comes later by as much); from rest, it is the goal's own and is refused. A
//! first point at time 0 is the start itself: it is replaced by the current state (a planner's first point
//! is the state it planned from, which the joints have moved on from by the time it arrives).

use std::path::PathBuf;
use std::sync::Arc;

use crate::file::InterpolationFile;
use crate::limits::AxisLimits;
use crate::monitor::Monitor;
use crate::plan;
use crate::session::{Options, Session};
use crate::speed_limit;
use crate::stream::{Phase, Stream};
use crate::trajectory::{Checked, GoalError, Knot};

/// Ticks checked after a trajectory takes over a motion (beyond the change of speed under way).
const TAKEOVER_TICKS: u64 = 50;

/// The state a trajectory starts from, per joint: position, velocity, acceleration (file time).
#[derive(Debug, Clone, PartialEq)]
pub struct StartState {
    pub position: Vec<f64>,
    pub velocity: Vec<f64>,
    pub acceleration: Vec<f64>,
    /// The path one and two output periods before (the same as `position` at rest): the limit check of the
    /// samples takes its finite differences from there, as the stream's own monitor does.
    pub before: [Vec<f64>; 2],
}

impl StartState {
    pub fn at_rest(position: Vec<f64>) -> Self {
        let n = position.len();
        Self {
            before: [position.clone(), position.clone()],
            position,
            velocity: vec![0.0; n],
            acceleration: vec![0.0; n],
        }
    }

    /// Where `stream`'s path is now.
    pub fn of(stream: &Stream) -> Self {
        let [position, velocity, acceleration, one_back, two_back] = stream.path_state();
        Self {
            position,
            velocity,
            acceleration,
            before: [one_back, two_back],
        }
    }
}

/// One end of a segment: time, and per joint position, velocity, acceleration.
struct End {
    t: f64,
    p: Vec<f64>,
    v: Vec<f64>,
    a: Vec<f64>,
}

/// The trajectory's motion from `from`, sampled every `period_secs`, as an interpolation file (its last
/// sample exactly on the last point). Refused with `INVALID_GOAL` when a joint would go over a limit at
/// speed 1: the message names the joint, the limit and the points around it.
pub fn sample(
    trajectory: &Checked,
    from: &StartState,
    limits: &[AxisLimits],
    period_secs: f64,
) -> Result<InterpolationFile, GoalError> {
    sample_from(trajectory, from, limits, period_secs).map_err(|(e, _)| e)
}

/// [`sample`] taking over a motion: when the way from the current state to the first point breaks a limit,
/// it is stretched (by a quarter each try, the rest of the trajectory later by as much) until it fits; how
/// much later, in seconds, comes with the samples.
pub fn sample_takeover(
    trajectory: &Checked,
    from: &StartState,
    limits: &[AxisLimits],
    period_secs: f64,
) -> Result<(InterpolationFile, f64), GoalError> {
    let first = (trajectory.knots.iter())
        .map(|k| k.time_secs)
        .find(|t| *t > 0.0)
        .unwrap_or(0.0);
    let mut later = 0.0;
    for _ in 0..STRETCHES {
        let shifted = Checked {
            joints: trajectory.joints.clone(),
            knots: (trajectory.knots.iter())
                .map(|k| Knot {
                    time_secs: if k.time_secs > 0.0 {
                        k.time_secs + later
                    } else {
                        0.0
                    },
                    ..k.clone()
                })
                .collect(),
        };
        match sample_from(&shifted, from, limits, period_secs) {
            Ok(file) => return Ok((file, later)),
            Err((e, false)) => return Err(e),
            Err((_, true)) => later = (first + later) * 1.25 - first,
        }
    }
    sample(trajectory, from, limits, period_secs).map(|file| (file, 0.0))
}

/// The most samples a trajectory may become (an hour at 2 ms; a bound on the memory one goal can take).
pub const MAX_SAMPLES: usize = 1_800_000;

/// Tries at stretching the way to the first point (1.25^24: about 200 times as long).
const STRETCHES: usize = 24;

/// [`sample`]; an error says whether it is on the way from the current state to the first point.
fn sample_from(
    trajectory: &Checked,
    from: &StartState,
    limits: &[AxisLimits],
    period_secs: f64,
) -> Result<InterpolationFile, (GoalError, bool)> {
    // Goal points with their index in the goal; a point at time 0 is the start itself.
    let points: Vec<(usize, &Knot)> = (trajectory.knots.iter().enumerate())
        .filter(|(_, k)| k.time_secs > 0.0)
        .collect();
    let ends = ends(from, &points);
    let last_t = ends.last().map_or(0.0, |e| e.t);
    let ticks = (last_t / period_secs - 1e-9).ceil().max(0.0);
    if ticks > MAX_SAMPLES as f64 {
        let error = GoalError::new(
            crate::trajectory::ErrorCode::InvalidGoal,
            format!(
                "the trajectory lasts {last_t} s: more than {MAX_SAMPLES} output periods of {period_secs} s"
            ),
        );
        return Err((error, false));
    }
    let ticks = ticks as usize;
    let mut samples = Vec::with_capacity(ticks + 1);
    let mut segment = 0;
    for k in 0..=ticks {
        let t = (k as f64 * period_secs).min(last_t);
        while segment + 2 < ends.len() && t > ends[segment + 1].t {
            segment += 1;
        }
        samples.push(match ends.get(segment + 1) {
            Some(next) => quintic(&ends[segment], next, t),
            None => from.position.clone(),
        });
    }
    if let Some(last) = samples.last_mut() {
        // Exactly on the last point, whatever the rounding.
        if let Some(end) = ends.last() {
            last.clone_from(&end.p);
        }
    }
    let mut monitor = Monitor::new(period_secs, limits.to_vec());
    for position in [&from.before[1], &from.before[0], &from.position] {
        monitor.push(position);
    }
    for (k, sample) in samples.iter().enumerate().skip(1) {
        if let Some(v) = monitor.push(sample) {
            let t = k as f64 * period_secs;
            let after = points.iter().find(|(_, knot)| knot.time_secs >= t - 1e-12);
            let before = points.iter().rev().find(|(_, knot)| knot.time_secs < t - 1e-12);
            let first_segment = before.is_none();
            let place = match (before, after) {
                (Some((i, a)), Some((j, b))) => format!(
                    "between point {i} ({} s) and point {j} ({} s)",
                    a.time_secs, b.time_secs
                ),
                (None, Some((j, b))) => {
                    format!("from the current state to point {j} ({} s)", b.time_secs)
                }
                _ => "at the end".to_owned(),
            };
            let error = GoalError::new(
                crate::trajectory::ErrorCode::InvalidGoal,
                format!(
                    "joint `{}` would need {} {:.4}, over its limit {:.4}, {place} at speed 1, {t:.3} s in",
                    trajectory.joints[v.axis], v.quantity, v.value, v.limit
                ),
            );
            return Err((error, first_segment));
        }
    }
    Ok(InterpolationFile {
        path: PathBuf::from("joint trajectory"),
        joints: trajectory.joints.clone(),
        period_secs,
        lines: (1..=samples.len()).collect(),
        points: samples,
    })
}

/// The segment ends: the start, then each point with its velocities and accelerations (given or estimated).
fn ends(from: &StartState, points: &[(usize, &Knot)]) -> Vec<End> {
    let mut ends = vec![End {
        t: 0.0,
        p: from.position.clone(),
        v: from.velocity.clone(),
        a: from.acceleration.clone(),
    }];
    let n = from.position.len();
    let last = points.len();
    let time = |i: usize| if i == 0 { 0.0 } else { points[i - 1].1.time_secs };
    let position = |i: usize| {
        if i == 0 {
            &from.position
        } else {
            &points[i - 1].1.positions
        }
    };
    let slope = |i: usize, j: usize| (position(i + 1)[j] - position(i)[j]) / (time(i + 1) - time(i));
    for (i, (_, knot)) in points.iter().enumerate().map(|(k, p)| (k + 1, p)) {
        let v = knot.velocities.clone().unwrap_or_else(|| {
            (0..n)
                .map(|j| {
                    if i == last {
                        return 0.0;
                    }
                    let (d0, d1) = (slope(i - 1, j), slope(i, j));
                    if d0 * d1 <= 0.0 {
                        0.0
                    } else {
                        // The harmonic mean: the smaller slope weighs more, so a short steep segment next
                        // to a long flat one does not push the flat one over its limits.
                        2.0 / (1.0 / d0 + 1.0 / d1)
                    }
                })
                .collect()
        });
        ends.push(End {
            t: knot.time_secs,
            p: knot.positions.clone(),
            v,
            a: Vec::new(),
        });
    }
    for (end, (_, knot)) in ends.iter_mut().skip(1).zip(points) {
        end.a = knot.accelerations.clone().unwrap_or_else(|| vec![0.0; n]);
    }
    ends
}

/// The quintic from `a` to `b` at time `t` (position, velocity and acceleration matched at both ends).
fn quintic(a: &End, b: &End, t: f64) -> Vec<f64> {
    let d = b.t - a.t;
    let u = ((t - a.t) / d).clamp(0.0, 1.0);
    let (u2, u3) = (u * u, u * u * u);
    let (u4, u5) = (u3 * u, u3 * u2);
    let h0 = 1.0 - 10.0 * u3 + 15.0 * u4 - 6.0 * u5;
    let h1 = u - 6.0 * u3 + 8.0 * u4 - 3.0 * u5;
    let h2 = 0.5 * u2 - 1.5 * u3 + 1.5 * u4 - 0.5 * u5;
    let h3 = 0.5 * u3 - u4 + 0.5 * u5;
    let h4 = -4.0 * u3 + 7.0 * u4 - 3.0 * u5;
    let h5 = 10.0 * u3 - 15.0 * u4 + 6.0 * u5;
    (0..a.p.len())
        .map(|j| {
            h0 * a.p[j]
                + h1 * d * a.v[j]
                + h2 * d * d * a.a[j]
                + h3 * d * d * b.a[j]
                + h4 * d * b.v[j]
                + h5 * b.p[j]
        })
        .collect()
}

impl Session {
    /// A session playing `trajectory`: from rest at `at_rest` (nothing moving), or taking over `previous`'s
    /// motion where it is, keeping its speed factor, the change of speed under way and a pause (a cancel
    /// under way is called off: the new trajectory plays). `factor`: the speed to start at from rest (0:
    /// start paused).
    pub fn follow(
        trajectory: &Checked,
        limits: Vec<AxisLimits>,
        options: Options,
        previous: Option<&Stream>,
        at_rest: &[f64],
    ) -> Result<Self, GoalError> {
        let invalid = |m: String| GoalError::new(crate::trajectory::ErrorCode::InvalidGoal, m);
        let moving = previous.filter(|p| p.phase() != Phase::Done);
        let file = match moving {
            Some(previous) => {
                let from = StartState::of(previous);
                sample_takeover(trajectory, &from, &limits, options.period_secs)?.0
            }
            None => sample(
                trajectory,
                &StartState::at_rest(at_rest.to_vec()),
                &limits,
                options.period_secs,
            )?,
        };
        let last = file.points.len() - 1;
        let mut main = speed_limit::section(
            Arc::new(file),
            limits,
            options.period_secs,
            0,
            last,
            options.interpolation,
        );
        let s_max = speed_limit::s_max(&main);
        match moving {
            Some(previous) => {
                main.continue_from(previous);
                if main.cancelling() {
                    let to = options.factor.min(s_max);
                    plan::resume(&mut main, None, Some(to), s_max)
                        .map_err(|r| invalid(format!("cannot call off the stop under way: {r}")))?;
                }
                let target = main.target_speed();
                if target > s_max {
                    return Err(invalid(format!(
                        "the motion runs at speed factor {target:.4}, over this trajectory's s_max {s_max:.4}: lower the speed first"
                    )));
                }
                let ahead = main.change_ticks_left() + TAKEOVER_TICKS;
                if let Some(v) = main.clone().first_violation_within(ahead) {
                    return Err(invalid(format!(
                        "taking over the motion now would take joint `{}` to {} {:.4}, over its limit {:.4}: send it again once the speed change under way ends",
                        trajectory.joints[v.axis], v.quantity, v.value, v.limit
                    )));
                }
            }
            None if options.factor > 0.0 => {
                plan::start(&mut main, options.factor.min(s_max), s_max)
                    .map_err(|r| invalid(format!("cannot start: {r}")))?;
            }
            None => {}
        }
        Ok(Session::of_trajectory(main, s_max, options))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::trajectory::{check, JointTrajectory, TrajectoryPoint};

    fn limits() -> Vec<AxisLimits> {
        vec![
            AxisLimits {
                max_velocity: 2.0,
                max_acceleration: 10.0,
                max_jerk: None,
            };
            2
        ]
    }

    fn checked(points: &[(f64, [f64; 2])]) -> Checked {
        let t = JointTrajectory {
            stamp_secs: 0.0,
            joint_names: vec!["a".into(), "b".into()],
            points: points
                .iter()
                .map(|(t, p)| TrajectoryPoint {
                    positions: p.to_vec(),
                    time_from_start_secs: *t,
                    ..Default::default()
                })
                .collect(),
        };
        check(&t, &["a".into(), "b".into()], 0.0).unwrap()
    }

    #[test]
    fn samples_pass_through_every_point_at_its_time_and_end_on_the_last() {
        let c = checked(&[(0.0, [0.0, 0.0]), (1.0, [0.5, -0.3]), (2.0, [1.0, 0.0])]);
        let file = sample(&c, &StartState::at_rest(vec![0.0, 0.0]), &limits(), 0.01).unwrap();
        assert_eq!(file.points.len(), 201);
        assert!((file.points[100][0] - 0.5).abs() < 1e-12);
        assert!((file.points[100][1] + 0.3).abs() < 1e-12);
        assert_eq!(file.points[200], vec![1.0, 0.0]);
    }

    #[test]
    fn a_point_too_soon_names_the_joint_the_limit_and_the_points() {
        let c = checked(&[(1.0, [0.2, 0.0]), (2.0, [0.4, 0.0]), (2.1, [1.5, 0.0])]);
        let e = sample(&c, &StartState::at_rest(vec![0.0, 0.0]), &limits(), 0.01).unwrap_err();
        assert!(e.message.contains("joint `a` would need acceleration"), "{e}");
        assert!(e.message.contains("point 1 (2 s) and point 2 (2.1 s)"), "{e}");
    }

    #[test]
    fn a_takeover_continues_position_velocity_and_acceleration() {
        let options = Options {
            period_secs: 0.002,
            factor: 1.0,
            align: false,
            tolerance: 1e-3,
            settle_timeout_secs: 1.0,
            interpolation: crate::Interpolation::Linear,
        };
        let first = checked(&[(1.0, [0.8, 0.4]), (2.0, [1.0, 0.0])]);
        let mut session = Session::follow(&first, limits(), options.clone(), None, &[0.0, 0.0]).unwrap();
        for _ in 0..300 {
            session.tick(None).unwrap();
        }
        let second = checked(&[(1.0, [-0.2, 0.6]), (2.0, [0.0, 0.0])]);
        let replaced =
            Session::follow(&second, limits(), options, Some(session.main()), &[0.0, 0.0]).unwrap();
        // The commands' finite differences across the switch: the new motion's velocity and acceleration
        // start from the old one's (what is left is the change of jerk between the two paths).
        let mut commands = vec![session.main().position().to_vec()];
        let mut b = replaced;
        for _ in 0..4 {
            commands.push(b.tick(None).unwrap().to_vec());
        }
        let mut a = session.clone();
        let mut before = Vec::new();
        for _ in 0..3 {
            before.push(a.tick(None).unwrap().to_vec());
        }
        let dt = 0.002;
        for j in 0..2 {
            let v_new = (commands[1][j] - commands[0][j]) / dt;
            let v_old = (before[0][j] - commands[0][j]) / dt;
            assert!((v_new - v_old).abs() < 0.01, "joint {j}: v {v_old} then {v_new}");
            let a_new = (commands[2][j] - 2.0 * commands[1][j] + commands[0][j]) / (dt * dt);
            let a_old = (before[1][j] - 2.0 * before[0][j] + commands[0][j]) / (dt * dt);
            assert!((a_new - a_old).abs() < 0.5, "joint {j}: a {a_old} then {a_new}");
        }
        for _ in 0..1200 {
            b.tick(None).unwrap();
        }
        assert_eq!(b.alarms(), 0);
        assert_eq!(b.main().position(), &[0.0, 0.0]);
    }
}
