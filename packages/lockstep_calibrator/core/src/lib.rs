//! Online differential-drive motion-model calibration, without ROS.
//!
//! - [`model`]: the motion model (track width, wheel radius, delay, centripetal factor beta, the latter a
//!   reconstruction: yaw rate `omega / (1 + beta * |v * omega|)`).
//! - [`history`]: commands, wheel motion recovered from odometry and observed poses, checked on entry.
//! - [`delay`]: the delay, searched first, from commands vs wheel speeds.
//! - [`batch`]: the joint fit of many windows, each parameter with its own uncertainty.
//! - [`fit`]: radius, track width and beta from wheel motion vs observed poses (Levenberg-Marquardt, Huber).
//! - [`observe`]: what a window can determine, and why not the rest.
//! - [`needs`]: what driving determines each parameter, for those that stayed nominal.
//! - [`ranges`]: the ranges of its numbers (parameters and command-line options).
//! - [`command_model`]: where a sequence of velocity commands takes the robot (nominal wheel speeds, actual
//!   motion).
//! - [`pattern`]: a calibration drive within a disc around its start.
//! - [`calibrator`]: the online loop: gate, fit, accumulate, validate on held-out history, accept, alarm.

pub mod batch;
pub mod calibrator;
pub mod command_model;
pub mod delay;
pub mod fit;
pub mod history;
pub mod model;
pub mod needs;
pub mod observe;
pub mod pattern;
pub mod ranges;

#[cfg(feature = "cli")]
pub mod cli;

pub use batch::{fit_windows, BatchFit};
pub use calibrator::{Accepted, Calibrator, Config, Gate, Outcome, SegmentCheck};
pub use command_model::{commands_from_arrays, predict_commands, PredictError};
pub use delay::{estimate_delay, DelayEstimate, DelayRefusal};
pub use fit::{fit, predict, residual, Fit, Free, PoseNoise};
pub use history::{
    CommandSample, DropCounts, Dropped, History, OdomSample, PoseSample, Stream, WheelSample, Window,
    FAR_FUTURE_CONFIRM,
};
pub use model::{arc, wrap, yaw_of_quaternion, ModelParams, Pose};
pub use needs::{driving_needed, needs, DriveSummary, Need, Parameter};
pub use observe::{determined, Determined, Observability};
pub use pattern::{Pattern, PatternError};
