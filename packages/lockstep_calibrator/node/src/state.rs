//! What the node keeps around the calibrator: input counts, window counts and when the next step is due
//! (once per `step_period_secs` of data time, so the node keeps pace with a simulator at any time scale).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockstep_calibrator::{
    Calibrator, CommandSample, Dropped, OdomSample, Outcome, Pose, PoseSample, WheelSample,
};

/// The state as the node's tasks share it.
pub(crate) type Shared = Arc<Mutex<State>>;

/// Windows per outcome since start or the last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowCounts {
    pub accepted: u32,
    pub rejected: u32,
    pub unchanged: u32,
    pub skipped: u32,
    pub waiting: u32,
}

/// The calibrator with its bookkeeping.
#[derive(Debug)]
pub struct State {
    pub calibrator: Calibrator,
    /// Samples received: cmd_vel, odom (or joint_states), pose.
    pub received: [u64; 3],
    /// The latest observed pose taken, and when it came (wall time): drive_pattern steers by it.
    pub latest_pose: Option<(Instant, Pose)>,
    pub windows: WindowCounts,
    last_step_secs: Option<f64>,
    step_period_secs: f64,
    /// When a far-future sample was last logged (wall time): at most one line per [`WARN_PERIOD`].
    last_warn: Option<Instant>,
    /// When a joint_states message without a wheel joint was last logged (wall time).
    last_joint_warn: Option<Instant>,
}

/// Shortest wall time between two warnings about dropped far-future samples.
pub const WARN_PERIOD: Duration = Duration::from_secs(5);

impl State {
    pub fn new(calibrator: Calibrator, step_period_secs: f64) -> Self {
        State {
            step_period_secs,
            calibrator,
            received: [0; 3],
            latest_pose: None,
            windows: WindowCounts::default(),
            last_step_secs: None,
            last_warn: None,
            last_joint_warn: None,
        }
    }

    /// Whether a joint_states message lacking a wheel joint is worth a warning now (at most one per
    /// [`WARN_PERIOD`]); it is counted as received either way.
    pub fn joint_warning_due(&mut self, now: Instant) -> bool {
        self.received[1] += 1;
        if self
            .last_joint_warn
            .is_some_and(|t| now.duration_since(t) < WARN_PERIOD)
        {
            return false;
        }
        self.last_joint_warn = Some(now);
        true
    }

    /// The line to log for a dropped sample, if one is due: far-future stamps are worth a warning (rate
    /// limited, with the running count); the rest are counted in `~/status` only.
    pub fn warning(&mut self, dropped: &Dropped, now: Instant) -> Option<String> {
        if !matches!(dropped, Dropped::FarFuture { .. }) {
            return None;
        }
        if self
            .last_warn
            .is_some_and(|t| now.duration_since(t) < WARN_PERIOD)
        {
            return None;
        }
        self.last_warn = Some(now);
        let total: u64 = self.calibrator.history().dropped().far_future.iter().sum();
        Some(format!(
            "dropped {total} sample(s) stamped in the far future so far (counted as out of order in ~/status); latest: {dropped}"
        ))
    }

    pub fn push_command(&mut self, c: CommandSample) -> Result<(), Dropped> {
        self.received[0] += 1;
        self.calibrator.history_mut().push_command(c)
    }

    pub fn push_odom(&mut self, o: OdomSample) -> Result<(), Dropped> {
        self.received[1] += 1;
        self.calibrator.history_mut().push_odom(o)
    }

    pub fn push_wheels(&mut self, w: WheelSample) -> Result<(), Dropped> {
        self.received[1] += 1;
        self.calibrator.history_mut().push_wheels(w)
    }

    pub fn push_pose(&mut self, p: PoseSample) -> Result<(), Dropped> {
        self.received[2] += 1;
        self.calibrator.history_mut().push_pose(p)?;
        self.latest_pose = Some((Instant::now(), p.pose));
        Ok(())
    }

    /// Data time up to which every stream has samples.
    pub fn data_secs(&self) -> Option<f64> {
        self.calibrator.history().complete_until()
    }

    /// Whether `step_period_secs` of new data have come in since the last step.
    pub fn due(&self) -> bool {
        let period = self.step_period_secs;
        match (self.data_secs(), self.last_step_secs) {
            (None, _) => false,
            (Some(_), None) => true,
            // A clock that went back (a restarted simulation) counts as new data.
            (Some(t), Some(last)) => t >= last + period || t < last - period,
        }
    }

    /// One calibration step on the latest window, counted.
    pub fn step(&mut self) -> Outcome {
        self.last_step_secs = self.data_secs();
        let outcome = self.calibrator.step();
        let w = &mut self.windows;
        match &outcome {
            Outcome::Waiting(_) => w.waiting += 1,
            Outcome::Unchanged { .. } => w.unchanged += 1,
            Outcome::Skipped(_) => w.skipped += 1,
            Outcome::Rejected { .. } => w.rejected += 1,
            Outcome::Accepted(_) => w.accepted += 1,
        }
        outcome
    }

    /// Back to nominal, and everything keyed by time forgotten: the estimates, the history (so data with any
    /// stamps is taken again: a bad stamp cannot block the calibrator past a reset), the window counts and
    /// the time of the last step. The input and drop counts stay (they count since start).
    pub fn reset(&mut self) {
        self.calibrator.reset();
        self.calibrator.history_mut().clear();
        self.windows = WindowCounts::default();
        self.last_step_secs = None;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use lockstep_calibrator::{Config, ModelParams, Pose};

    fn pose(t: f64) -> PoseSample {
        PoseSample {
            t_secs: t,
            pose: Pose::default(),
            noise: None,
        }
    }

    fn odom(t: f64) -> OdomSample {
        OdomSample {
            t_secs: t,
            pose: Pose::default(),
            v_mps: 0.0,
            w_radps: 0.0,
        }
    }

    #[test]
    fn a_far_future_pose_is_warned_about_once_per_period_and_reset_forgets_every_stamp() {
        let mut s = State::new(Calibrator::new(Config::default(), ModelParams::default()), 1.0);
        let start = Instant::now();
        for i in 0..3 {
            s.push_odom(odom(f64::from(i))).unwrap();
            s.push_pose(pose(f64::from(i))).unwrap();
        }
        let e = s.push_pose(pose(2_147_483_647.0)).unwrap_err();
        let line = s.warning(&e, start).unwrap();
        assert!(
            line.starts_with("dropped 1 sample(s) stamped in the far future"),
            "{line}"
        );
        let e = s.push_pose(pose(2_147_483_648.0)).unwrap_err();
        assert_eq!(
            s.warning(&e, start + Duration::from_secs(1)),
            None,
            "rate limited"
        );
        assert!(s.warning(&e, start + WARN_PERIOD).is_some());
        s.push_pose(pose(3.0)).unwrap();
        assert!(s.due());
        s.step();
        // After a reset, data from an earlier time (a restarted simulation) is taken and steps again.
        s.reset();
        assert_eq!((s.data_secs(), s.windows), (None, WindowCounts::default()));
        s.push_odom(odom(0.5)).unwrap();
        s.push_odom(odom(0.6)).unwrap();
        s.push_pose(pose(0.5)).unwrap();
        assert!(s.due());
        assert_eq!(s.calibrator.history().dropped().far_future, [0, 0, 2]);
    }
}
