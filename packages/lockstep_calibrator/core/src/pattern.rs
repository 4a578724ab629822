//! A calibration drive that determines every parameter within a disc around its start: turns in place
//! both ways (track width), a straight run (wheel radius), arcs at a slow and a fast speed (two |v*w|
//! levels: the centripetal factor), with stops between them (command steps: the delay). It repeats until
//! told to stop, and keeps the robot within `max_radius_m` of where it started: each straight run first
//! turns toward the start and goes through it, each arc circles on the side nearer the start, and a run or
//! an arc heading outward beyond 0.7 * `max_radius_m` is cut short and the robot turns back.
//!
//! Pure: [`Pattern::command`] takes the time and the robot's pose relative to the start and gives the
//! velocity command to publish.

use std::f64::consts::TAU;

use crate::model::{wrap, Pose};

/// How long each stop lasts (s): the command steps before and after it show the delay.
pub const STOP_SECS: f64 = 0.5;
/// Each turn in place, one way then the other (rad).
pub const TURN_RAD: f64 = 1.5;
/// Beyond this fraction of the radius, a run or an arc heading outward is cut short.
pub const TURN_BACK_FRACTION: f64 = 0.7;
/// The longest straight run, as a fraction of the radius.
const RUN_FRACTION: f64 = 0.8;
/// A straight run ends about this fraction of the radius past the start.
const PAST_START_FRACTION: f64 = 0.3;
/// Nearer the start than this fraction of the radius, the robot does not turn toward it first.
const AT_START_FRACTION: f64 = 0.05;
/// Arcs have a radius of at most this fraction of `max_radius_m`.
const ARC_FRACTION: f64 = 0.25;

/// Why a pattern cannot be made: the field and its value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {value} must be finite and > 0")]
pub struct PatternError {
    /// The goal's field.
    pub field: &'static str,
    /// Its value.
    pub value: f64,
}

/// The steps of one cycle, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    TurnLeft,
    TurnRight,
    TurnToStart,
    Straight,
    SlowArc,
    FastArc,
    Stop,
}

const CYCLE: [Step; 12] = [
    Step::TurnLeft,
    Step::Stop,
    Step::TurnRight,
    Step::Stop,
    Step::TurnToStart,
    Step::Stop,
    Step::Straight,
    Step::Stop,
    Step::SlowArc,
    Step::Stop,
    Step::FastArc,
    Step::Stop,
];
/// Where a cut-short run or arc goes on: the stop before turning toward the start.
const TURN_BACK_AT: usize = 3;

impl Step {
    fn name(self) -> &'static str {
        match self {
            Step::TurnLeft => "turn_left",
            Step::TurnRight => "turn_right",
            Step::TurnToStart => "turn_to_start",
            Step::Straight => "straight",
            Step::SlowArc => "slow_arc",
            Step::FastArc => "fast_arc",
            Step::Stop => "stop",
        }
    }

    fn moves(self) -> bool {
        matches!(self, Step::Straight | Step::SlowArc | Step::FastArc)
    }
}

/// The calibration drive: see the module's documentation.
#[derive(Debug, Clone)]
pub struct Pattern {
    max_radius_m: f64,
    speed_mps: f64,
    turn_radps: f64,
    slow_arc: (f64, f64),
    fast_arc: (f64, f64),
    index: usize,
    end_secs: Option<f64>,
    command: (f64, f64),
}

impl Pattern {
    /// A pattern within `max_radius_m` of the start, at most `max_speed_mps` straight and
    /// `max_turn_rate_radps` turning; an error names a value that is not finite and above zero.
    pub fn new(
        max_radius_m: f64,
        max_speed_mps: f64,
        max_turn_rate_radps: f64,
    ) -> Result<Self, PatternError> {
        for (field, value) in [
            ("max_radius_m", max_radius_m),
            ("max_speed_mps", max_speed_mps),
            ("max_turn_rate_radps", max_turn_rate_radps),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(PatternError { field, value });
            }
        }
        // The fast arc turns at the highest rate, as fast as its radius allows; the slow one at 40 % of its
        // speed and 60 % of its turn rate: |v*w| 24 % of the fast arc's.
        let fast_v = max_speed_mps.min(max_turn_rate_radps * ARC_FRACTION * max_radius_m);
        Ok(Self {
            max_radius_m,
            speed_mps: max_speed_mps,
            turn_radps: max_turn_rate_radps,
            slow_arc: (0.4 * fast_v, 0.6 * max_turn_rate_radps),
            fast_arc: (fast_v, max_turn_rate_radps),
            index: 0,
            end_secs: None,
            command: (0.0, 0.0),
        })
    }

    /// The |v*w| of the slow and the fast arc (m/s^2).
    pub fn arc_levels(&self) -> (f64, f64) {
        (
            self.slow_arc.0 * self.slow_arc.1,
            self.fast_arc.0 * self.fast_arc.1,
        )
    }

    /// The command `(v m/s, w rad/s, phase)` at `t_secs` for the robot at `pose_from_start` (its pose in the
    /// frame of its pose when the pattern started). Call it regularly (20 Hz); time must not go back.
    pub fn command(&mut self, t_secs: f64, pose_from_start: Pose) -> (f64, f64, &'static str) {
        let p = pose_from_start;
        let distance = p.x_m.hypot(p.y_m);
        let step = CYCLE[self.index];
        let outward = self.command.0 * (p.x_m * p.yaw_rad.cos() + p.y_m * p.yaw_rad.sin()) > 0.0;
        match self.end_secs {
            None => self.enter(0, t_secs, p),
            Some(_) if step.moves() && outward && distance > TURN_BACK_FRACTION * self.max_radius_m => {
                self.enter(TURN_BACK_AT, t_secs, p);
            }
            Some(_) => {}
        }
        // Steps with nothing to do take no time: go on to the next in the same call.
        for _ in 0..CYCLE.len() {
            match self.end_secs {
                Some(end) if t_secs >= end => self.enter((self.index + 1) % CYCLE.len(), t_secs, p),
                _ => break,
            }
        }
        (self.command.0, self.command.1, CYCLE[self.index].name())
    }

    /// Starts step `index` at `t_secs` with the robot at `p`.
    fn enter(&mut self, index: usize, t_secs: f64, p: Pose) {
        let r = self.max_radius_m;
        let distance = p.x_m.hypot(p.y_m);
        let (command, secs) = match CYCLE[index] {
            Step::Stop => ((0.0, 0.0), STOP_SECS),
            Step::TurnLeft => ((0.0, self.turn_radps), TURN_RAD / self.turn_radps),
            Step::TurnRight => ((0.0, -self.turn_radps), TURN_RAD / self.turn_radps),
            Step::TurnToStart => {
                let error = if distance < AT_START_FRACTION * r {
                    0.0
                } else {
                    wrap((-p.y_m).atan2(-p.x_m) - p.yaw_rad)
                };
                (
                    (0.0, self.turn_radps.copysign(error)),
                    error.abs() / self.turn_radps,
                )
            }
            Step::Straight => {
                let wanted =
                    (distance + PAST_START_FRACTION * r).clamp(PAST_START_FRACTION * r, RUN_FRACTION * r);
                let length = wanted.min(room_ahead(p, 0.85 * r));
                ((self.speed_mps, 0.0), length / self.speed_mps)
            }
            Step::SlowArc | Step::FastArc => {
                let (v, w) = if CYCLE[index] == Step::SlowArc {
                    self.slow_arc
                } else {
                    self.fast_arc
                };
                // Circle on the side whose centre is nearer the start: left's centre is to the left.
                let rho = v / w;
                let (s, c) = p.yaw_rad.sin_cos();
                let left = (p.x_m - rho * s).hypot(p.y_m + rho * c);
                let right = (p.x_m + rho * s).hypot(p.y_m - rho * c);
                let w = if left <= right { w } else { -w };
                ((v, w), TAU / w.abs())
            }
        };
        self.index = index;
        self.command = command;
        self.end_secs = Some(t_secs + secs);
    }
}

/// How far the robot at `p` can drive straight ahead and stay within `radius_m` of the start (when already
/// beyond it: as far as it comes nearer).
fn room_ahead(p: Pose, radius_m: f64) -> f64 {
    let along = p.x_m * p.yaw_rad.cos() + p.y_m * p.yaw_rad.sin();
    let d2 = p.x_m * p.x_m + p.y_m * p.y_m;
    let r2 = radius_m * radius_m;
    if d2 >= r2 {
        return (-along).max(0.0);
    }
    -along + (along * along + r2 - d2).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// What a run of the pattern did: the farthest from the start, and each command's phase and (v, w).
    struct Run {
        farthest_m: f64,
        commands: Vec<(&'static str, f64, f64)>,
        straight_runs_m: Vec<f64>,
    }

    /// Drives a unicycle with the pattern's commands at 20 Hz for `secs`: the wheels `delay_secs` late,
    /// the speed scaled by `speed_gain`, the turn rate by `turn_gain` (a robot off its nominal parameters).
    fn drive(mut pattern: Pattern, secs: f64, delay_secs: f64, speed_gain: f64, turn_gain: f64) -> Run {
        let dt = 0.05;
        let lag = (delay_secs / dt).round() as usize;
        let mut queue: VecDeque<(f64, f64)> = std::iter::repeat_n((0.0, 0.0), lag).collect();
        let (mut pose, mut farthest_m) = (Pose::default(), 0.0_f64);
        let (mut commands, mut straight_runs_m, mut run) = (Vec::new(), Vec::new(), 0.0);
        for i in 0..(secs / dt) as usize {
            let (v, w, phase) = pattern.command(i as f64 * dt, pose);
            commands.push((phase, v, w));
            queue.push_back((v, w));
            let (v, w) = queue.pop_front().unwrap_or_default();
            let (v, w) = (v * speed_gain, w * turn_gain);
            if v > 0.0 && w == 0.0 {
                run += v * dt;
            } else if run > 0.0 {
                straight_runs_m.push(run);
                run = 0.0;
            }
            let mid = pose.yaw_rad + 0.5 * w * dt;
            pose = Pose {
                x_m: pose.x_m + v * dt * mid.cos(),
                y_m: pose.y_m + v * dt * mid.sin(),
                yaw_rad: pose.yaw_rad + w * dt,
            };
            farthest_m = farthest_m.max(pose.x_m.hypot(pose.y_m));
        }
        Run {
            farthest_m,
            commands,
            straight_runs_m,
        }
    }

    #[test]
    fn five_minutes_stay_within_the_radius_and_hold_every_kind_of_driving() {
        for (radius, speed, turn) in [(3.0, 0.5, 1.0), (1.0, 0.5, 1.0), (5.0, 1.0, 0.5), (0.5, 0.3, 2.0)] {
            let pattern = Pattern::new(radius, speed, turn).unwrap();
            let (slow, fast) = pattern.arc_levels();
            for (delay, speed_gain, turn_gain) in [(0.0, 1.0, 1.0), (0.1, 1.05, 0.4 / 0.384)] {
                let run = drive(pattern.clone(), 300.0, delay, speed_gain, turn_gain);
                let case = format!("radius {radius}, speed {speed}, turn {turn}, delay {delay}");
                assert!(
                    run.farthest_m < radius,
                    "{case}: {} m from the start",
                    run.farthest_m
                );
                let c = &run.commands;
                assert!(
                    c.iter()
                        .any(|(p, v, w)| *p == "turn_left" && *v == 0.0 && *w > 0.0),
                    "{case}"
                );
                assert!(
                    c.iter()
                        .any(|(p, v, w)| *p == "turn_right" && *v == 0.0 && *w < 0.0),
                    "{case}"
                );
                assert!(
                    c.iter().any(|(p, v, w)| *p == "stop" && *v == 0.0 && *w == 0.0),
                    "{case}"
                );
                let longest = run.straight_runs_m.iter().copied().fold(0.0, f64::max);
                assert!(
                    run.straight_runs_m.len() >= 5 && longest >= (0.3 * radius).min(0.8),
                    "{case}: straight runs {:?}",
                    run.straight_runs_m
                );
                for (phase, level) in [("slow_arc", slow), ("fast_arc", fast)] {
                    let n = c
                        .iter()
                        .filter(|(p, v, w)| *p == phase && *v > 0.0 && ((v * w).abs() - level).abs() < 1e-12)
                        .count();
                    assert!(n >= 20, "{case}: {n} commands of {phase}");
                }
                assert!(
                    fast - slow >= 0.05 && fast * radius > 0.0,
                    "{case}: levels {slow} {fast}"
                );
                // Arcs no wider than half the radius.
                for (v, w) in [pattern.slow_arc, pattern.fast_arc] {
                    assert!(v / w <= 0.5 * radius + 1e-12, "{case}");
                }
            }
        }
    }

    #[test]
    fn far_out_and_heading_away_it_turns_back() {
        let mut pattern = Pattern::new(2.0, 0.5, 1.0).unwrap();
        pattern.command(0.0, Pose::default());
        // Skip to the straight run, then be far out heading away from the start.
        let out = Pose {
            x_m: 1.5,
            y_m: 0.0,
            yaw_rad: 0.0,
        };
        let mut t = 0.0;
        while CYCLE[pattern.index] != Step::Straight {
            t += 0.05;
            pattern.command(t, Pose::default());
        }
        let (v, w, phase) = pattern.command(t + 0.05, out);
        assert_eq!((v, w, phase), (0.0, 0.0, "stop"));
        let (v, w, phase) = pattern.command(t + 0.05 + STOP_SECS, out);
        assert_eq!((v, phase), (0.0, "turn_to_start"));
        assert!(w != 0.0);
        assert!(
            room_ahead(out, 1.4) == 0.0
                && (room_ahead(out, 1.7) - 0.2).abs() < 1e-12
                && (room_ahead(Pose::default(), 1.7) - 1.7).abs() < 1e-12
        );
    }

    #[test]
    fn bad_limits_name_the_field() {
        let e = Pattern::new(0.0, 0.5, 1.0).unwrap_err();
        assert_eq!(e.to_string(), "max_radius_m: 0 must be finite and > 0");
        let e = Pattern::new(1.0, f64::NAN, 1.0).unwrap_err();
        assert_eq!(e.to_string(), "max_speed_mps: NaN must be finite and > 0");
        let e = Pattern::new(1.0, 0.5, -1.0).unwrap_err();
        assert_eq!(e.to_string(), "max_turn_rate_radps: -1 must be finite and > 0");
    }
}
