//! The simulator and what the node keeps around it, shared (behind one mutex) by the simulation loop, the
//! inputs and the reloader. A module of its own so that all of them import it and none imports the binary's
//! root.

use std::fmt::Display;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use lockstep_sim::{BadInputLog, RunningDrive, Simulator};

/// How often (at most) the running count of dropped inputs is logged (wall seconds).
const DROPPED_LOG_PERIOD_SECS: f64 = 2.0;

/// The simulator and what the node keeps around it, shared by the loop, the inputs and the reloader.
pub struct Shared {
    pub(crate) sim: Simulator,
    /// The grid markers must be (re)published: at start and after a reload.
    pub(crate) grid_dirty: bool,
    /// The state must be (re)published.
    pub(crate) state_dirty: bool,
    dropped: BadInputLog,
    epoch: Instant,
    /// The running drive script (commanded mode).
    pub(crate) drive: Option<RunningDrive>,
}

impl Shared {
    /// A freshly started simulator: the grid and the state are due for publishing, nothing dropped yet.
    pub(crate) fn new(sim: Simulator, drive: Option<RunningDrive>) -> Self {
        Shared {
            sim,
            grid_dirty: true,
            state_dirty: true,
            dropped: BadInputLog::new(DROPPED_LOG_PERIOD_SECS),
            epoch: Instant::now(),
            drive,
        }
    }

    /// Counts a dropped input and logs the running counts if a line is due.
    pub(crate) fn drop_input(&mut self, input: &'static str, reason: impl Display, logger: &str) {
        if let Some(line) = self
            .dropped
            .record(input, reason, self.epoch.elapsed().as_secs_f64())
        {
            r2r::log_warn!(logger, "{line}");
        }
    }

    /// Logs the final count of a burst of dropped inputs once the throttle period has passed.
    pub(crate) fn flush_dropped(&mut self, logger: &str) {
        if let Some(line) = self.dropped.flush(self.epoch.elapsed().as_secs_f64()) {
            r2r::log_warn!(logger, "{line}");
        }
    }
}

/// The shared state as the node's tasks hold it.
pub type SharedSim = Arc<Mutex<Shared>>;
