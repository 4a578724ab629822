//! What the node keeps around the calibrator: input counts, window counts and when the next step is due
//! (once per `step_period_secs` of data time, so the node keeps pace with a simulator at any time scale).

use lockstep_calibrator::{Calibrator, CommandSample, Dropped, OdomSample, Outcome, PoseSample};

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
    /// Samples received: cmd_vel, odom, pose.
    pub received: [u64; 3],
    pub windows: WindowCounts,
    last_step_secs: Option<f64>,
    step_period_secs: f64,
}

impl State {
    pub fn new(calibrator: Calibrator, step_period_secs: f64) -> Self {
        State {
            step_period_secs,
            calibrator,
            received: [0; 3],
            windows: WindowCounts::default(),
            last_step_secs: None,
        }
    }

    pub fn push_command(&mut self, c: CommandSample) -> Result<(), Dropped> {
        self.received[0] += 1;
        self.calibrator.history_mut().push_command(c)
    }

    pub fn push_odom(&mut self, o: OdomSample) -> Result<(), Dropped> {
        self.received[1] += 1;
        self.calibrator.history_mut().push_odom(o)
    }

    pub fn push_pose(&mut self, p: PoseSample) -> Result<(), Dropped> {
        self.received[2] += 1;
        self.calibrator.history_mut().push_pose(p)
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

    /// Back to nominal: the estimates and the window counts (the history and input counts stay).
    pub fn reset(&mut self) {
        self.calibrator.reset();
        self.windows = WindowCounts::default();
    }
}
