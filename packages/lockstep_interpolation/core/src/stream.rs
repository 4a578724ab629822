//! The stream of commanded positions: one time variable tau (file time) advanced by s * T_c each output tick,
//! the position the file's interpolation at tau (linear unless [`Stream::interpolated`]), and s
//! changed only by planned ramps (see `plan`).
//!
//! Everything here is deterministic: the planner checks a change by running a copy of the stream through it,
//! so what the stream then does is exactly what was checked.

use std::sync::Arc;

use crate::file::InterpolationFile;
use crate::limits::AxisLimits;
use crate::monitor::{Monitor, Violation};
use crate::ramp::Ramp;
use crate::spline::{Curve, Interpolation};

/// What the stream is doing (the MovePlay feedback's state, alignment aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Playing,
    Pausing,
    Paused,
    Resuming,
    /// The end of the section was reached, or a cancel's stop completed.
    Done,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Playing => "playing",
            Self::Pausing => "pausing",
            Self::Paused => "paused",
            Self::Resuming => "resuming",
            Self::Done => "done",
        }
    }
}

/// A change of s to start after `delay_steps` more output ticks (the ramp then starts from the s and ds/dt
/// of that moment).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    pub delay_steps: u32,
    pub s1: f64,
    pub duration_secs: f64,
    pub jerk_secs: f64,
}

/// The playing part of the interpolation player.
#[derive(Debug, Clone)]
pub struct Stream {
    curve: Curve,
    limits: Vec<AxisLimits>,
    /// Output period T_c (s).
    period_secs: f64,
    tau: f64,
    tau_end: f64,
    s: f64,
    pending: Option<Change>,
    ramp: Option<(Ramp, u32)>,
    phase: Phase,
    /// A cancel: once stopped, the phase is `Done`.
    cancelling: bool,
    /// The factor a resume returns to by default (the one before the pause).
    pub(crate) resume_to: f64,
    monitor: Monitor,
    alarms: u64,
    first_alarm: Option<Violation>,
    steps: u64,
    position: Vec<f64>,
}

impl Stream {
    /// A stream of `file` from point `start` to point `end` (inclusive) at output period `period_secs`, at
    /// rest on the start point with s = 0 and phase `Paused`; [`crate::plan`] starts it.
    pub fn new(
        file: Arc<InterpolationFile>,
        limits: Vec<AxisLimits>,
        period_secs: f64,
        start: usize,
        end: usize,
    ) -> Self {
        let tau = start as f64 * file.period_secs;
        let tau_end = end as f64 * file.period_secs;
        let mut position = Vec::new();
        file.position_at(tau, &mut position);
        let mut monitor = Monitor::new(period_secs, limits.clone());
        monitor.push(&position);
        Self {
            curve: Curve::new(file, Interpolation::Linear),
            limits,
            period_secs,
            tau,
            tau_end,
            s: 0.0,
            pending: None,
            ramp: None,
            phase: Phase::Paused,
            cancelling: false,
            resume_to: 1.0,
            monitor,
            alarms: 0,
            first_alarm: None,
            steps: 0,
            position,
        }
    }

    /// The same stream with `interpolation` between the file's points (linear by default).
    /// Both pass through every point, so the position at rest on the start point is unchanged.
    #[must_use]
    pub fn interpolated(mut self, interpolation: Interpolation) -> Self {
        if interpolation != self.curve.interpolation() {
            self.curve = Curve::new(self.curve.file_arc(), interpolation);
        }
        self
    }

    /// Advance one output tick; the position to send (the hold point while paused or done).
    pub fn step(&mut self) -> &[f64] {
        if let Some(change) = self.pending {
            if change.delay_steps == 0 {
                let (s, ds) = self.current();
                let ramp = Ramp::new(s, ds, change.s1, change.duration_secs, change.jerk_secs);
                self.ramp = Some((ramp, 0));
                self.pending = None;
            } else {
                self.pending = Some(Change {
                    delay_steps: change.delay_steps - 1,
                    ..change
                });
            }
        }
        if let Some((ramp, k)) = &mut self.ramp {
            *k += 1;
            let t = f64::from(*k) * self.period_secs;
            self.s = ramp.at(t).0;
            if t >= ramp.duration_secs {
                self.ramp = None;
                self.settle();
            }
        }
        if self.phase != Phase::Done {
            self.tau = (self.tau + self.s * self.period_secs).min(self.tau_end);
            if self.tau >= self.tau_end {
                self.finish();
            }
        }
        self.steps += 1;
        let mut position = std::mem::take(&mut self.position);
        self.curve.position_at(self.tau, &mut position);
        self.position = position;
        if let Some(v) = self.monitor.push(&self.position) {
            self.alarms += 1;
            self.first_alarm.get_or_insert(v);
        }
        &self.position
    }

    /// A ramp just ended: the phase it was for is reached.
    fn settle(&mut self) {
        self.phase = match self.phase {
            Phase::Pausing if self.s == 0.0 && self.cancelling => Phase::Done,
            Phase::Pausing if self.s == 0.0 => Phase::Paused,
            Phase::Resuming => Phase::Playing,
            other => other,
        };
    }

    fn finish(&mut self) {
        self.phase = Phase::Done;
        self.s = 0.0;
        self.ramp = None;
        self.pending = None;
    }

    /// s and ds/dt now.
    pub fn current(&self) -> (f64, f64) {
        match &self.ramp {
            Some((ramp, k)) => ramp.at(f64::from(*k) * self.period_secs),
            None => (self.s, 0.0),
        }
    }

    /// The naive baseline, what ros2_controllers' joint_trajectory_controller speed scaling does: s becomes
    /// `factor` at the next tick, with no ramp and no check. For comparisons only (`benches/changes.rs`).
    pub fn set_speed_instantly(&mut self, factor: f64) {
        let phase = if factor == 0.0 {
            Phase::Pausing
        } else {
            Phase::Resuming
        };
        self.apply(
            Change {
                delay_steps: 0,
                s1: factor,
                duration_secs: 0.0,
                jerk_secs: 0.0,
            },
            phase,
            false,
        );
    }

    /// Schedule `change`, entering `phase` (a ramp already under way is replaced when the change starts).
    pub(crate) fn apply(&mut self, change: Change, phase: Phase, cancelling: bool) {
        self.pending = Some(change);
        self.phase = phase;
        self.cancelling = cancelling;
    }

    /// Run a copy through `change` and a few ticks beyond it; the first limit it would break.
    pub(crate) fn try_change(&self, change: Change, phase: Phase) -> Option<Violation> {
        let mut copy = self.clone();
        copy.apply(change, phase, false);
        let steps =
            change.delay_steps as u64 + (change.duration_secs / self.period_secs).ceil() as u64 + TAIL_STEPS;
        copy.first_violation_within(steps)
    }

    /// Step this stream (a copy) up to `steps` ticks; the first limit it breaks on the way.
    pub(crate) fn first_violation_within(mut self, steps: u64) -> Option<Violation> {
        self.alarms = 0;
        self.first_alarm = None;
        for _ in 0..steps {
            self.step();
            if self.first_alarm.is_some() {
                break;
            }
        }
        self.first_alarm
    }

    /// Ticks until the change of s planned or under way ends (0 when s is steady).
    pub(crate) fn change_ticks_left(&self) -> u64 {
        let ticks = |secs: f64| (secs / self.period_secs).ceil().max(0.0) as u64;
        match (&self.pending, &self.ramp) {
            (Some(change), _) => u64::from(change.delay_steps) + ticks(change.duration_secs),
            (None, Some((ramp, k))) => ticks(ramp.duration_secs - f64::from(*k) * self.period_secs),
            (None, None) => 0,
        }
    }

    /// The speed factor s is heading for: the planned or running change's, else the current one.
    pub fn target_speed(&self) -> f64 {
        match (&self.pending, &self.ramp) {
            (Some(change), _) => change.s1,
            (None, Some((ramp, _))) => ramp.s1,
            (None, None) => self.s,
        }
    }

    /// Whether the stop under way ends the motion (a cancel) rather than pausing it.
    pub fn cancelling(&self) -> bool {
        self.cancelling
    }

    /// Where the path is at tau, its first and second derivatives in file time (central differences over one
    /// output period; at rest once done), and the path one and two periods back (what a check of the
    /// commands' finite differences starts from). What a trajectory replacing this one must start from for
    /// the commands to go on without a step in position, velocity or acceleration.
    pub fn path_state(&self) -> [Vec<f64>; 5] {
        let n = self.position.len();
        let p = self.position.clone();
        if self.phase == Phase::Done {
            return [p.clone(), vec![0.0; n], vec![0.0; n], p.clone(), p];
        }
        let h = self.period_secs;
        let at = |tau: f64| {
            let mut out = Vec::new();
            self.curve.position_at(tau, &mut out);
            out
        };
        let (before, after, two_back) = (at(self.tau - h), at(self.tau + h), at(self.tau - 2.0 * h));
        let velocity = (0..n).map(|i| (after[i] - before[i]) / (2.0 * h)).collect();
        let acceleration = (0..n)
            .map(|i| (after[i] - 2.0 * p[i] + before[i]) / (h * h))
            .collect();
        [p, velocity, acceleration, before, two_back]
    }

    /// Take over the speed state of `previous` (s, the change planned or under way, the phase, the factor a
    /// resume returns to) and its monitor, so the commands go on from its last one: this stream must start
    /// where `previous` is. The counters (ticks, alarms) go on too.
    pub(crate) fn continue_from(&mut self, previous: &Stream) {
        self.s = previous.s;
        self.pending = previous.pending;
        self.ramp = previous.ramp;
        self.phase = previous.phase;
        self.cancelling = previous.cancelling;
        self.resume_to = previous.resume_to;
        self.monitor = previous.monitor.clone();
        self.alarms = previous.alarms;
        self.first_alarm = previous.first_alarm;
        self.steps = previous.steps;
        self.position = previous.position.clone();
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// File time (s).
    pub fn tau(&self) -> f64 {
        self.tau
    }
    pub fn tau_end(&self) -> f64 {
        self.tau_end
    }
    /// The speed factor s of the last tick.
    pub fn speed(&self) -> f64 {
        self.s
    }
    pub fn period_secs(&self) -> f64 {
        self.period_secs
    }
    pub fn file(&self) -> &InterpolationFile {
        self.curve.file()
    }
    pub fn interpolation(&self) -> Interpolation {
        self.curve.interpolation()
    }
    pub fn limits(&self) -> &[AxisLimits] {
        &self.limits
    }
    /// The index of the file point at or before tau.
    pub fn point_index(&self) -> usize {
        let f = self.curve.file();
        ((self.tau / f.period_secs).floor().max(0.0) as usize).min(f.points.len() - 1)
    }
    /// The last position sent.
    pub fn position(&self) -> &[f64] {
        &self.position
    }
    /// The commanded velocity of the last tick, per axis.
    pub fn velocity(&self) -> &[f64] {
        self.monitor.velocity()
    }
    /// The commanded acceleration of the last tick, per axis.
    pub fn acceleration(&self) -> &[f64] {
        self.monitor.acceleration()
    }
    /// Ticks sent.
    pub fn steps(&self) -> u64 {
        self.steps
    }
    /// Ticks whose step broke a limit (0 unless the file or the hardware's limits disagree with a plan).
    pub fn alarms(&self) -> u64 {
        self.alarms
    }
    pub fn first_alarm(&self) -> Option<Violation> {
        self.first_alarm
    }
    /// Largest |v|, |a|, |j| per axis so far, as fractions of the limits.
    pub fn peaks(&self) -> &[[f64; 3]] {
        &self.monitor.peak
    }
    /// The file's own velocity (per axis, at s = 1) at tau.
    pub fn path_velocity(&self) -> Vec<f64> {
        let f = self.curve.file();
        let k = self.point_index().min(f.points.len().saturating_sub(2));
        if f.points.len() < 2 {
            return vec![0.0; f.joints.len()];
        }
        f.points[k]
            .iter()
            .zip(&f.points[k + 1])
            .map(|(a, b)| (b - a) / f.period_secs)
            .collect()
    }
}

/// Ticks checked after a change ends (the jerk of its last step shows two ticks later).
const TAIL_STEPS: u64 = 3;
