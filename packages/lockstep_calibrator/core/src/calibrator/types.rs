//! The calibrator's settings and what a step reports.

use crate::fit::PoseNoise;
use crate::model::ModelParams;
use crate::observe::Observability;

/// How threshold 1 is set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gate {
    /// A fixed value of the normalized RMS residual.
    Fixed(f64),
    /// The smallest residual among candidate fits started from the current, the nominal and perturbed
    /// parameters: the current parameters are kept when within 5 % of it.
    BestOfCandidates,
}

/// Settings of the calibrator (the node's parameters).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Length of a fitting window (s).
    pub window_secs: f64,
    /// Upper bound of the delay search (s).
    pub max_delay_secs: f64,
    /// Noise of the observed poses.
    pub noise: PoseNoise,
    /// Observability thresholds.
    pub observability: Observability,
    /// Threshold 1 (gate).
    pub gate: Gate,
    /// Threshold 2: each validation segment's normalized RMS residual must be below it.
    pub threshold2: f64,
    /// Held-out windows each update is validated on (the newest ones that moved).
    pub validation_segments: usize,
    /// No longer used: held-out segments are windows of `window_secs`.
    pub validation_segment_secs: f64,
    /// How far back the input history reaches (s); the windows of the joint fit are kept apart from it.
    pub history_limit_secs: f64,
    /// Disjoint windows (of `window_secs`) fitted jointly: the newest this many that are not held out
    /// (with the default 3 s windows and every 4th held out, the last 4 minutes of driving).
    pub accumulate_windows: usize,
    /// No longer used: the radius is fitted jointly with the other parameters over `accumulate_windows`.
    pub radius_accumulate_windows: usize,
    /// Consecutive windows are fitted as one stretch from one start pose, up to this long (s): over a
    /// longer stretch a small radius or track-width error adds up to more against the observed poses, but
    /// an effect the model lacks adds up too.
    pub stretch_secs: f64,
    /// Every this many disjoint windows, one is held out of the fit and kept for validation only, so an
    /// update is always checked on driving that did not produce it.
    pub holdout_every: usize,
    /// The mean of the newest 3 windows this many standard deviations from the estimate before them
    /// restarts the accumulation (the vehicle changed: wear, a new load).
    pub change_sigmas: f64,
    /// Below threshold 1 the window alone does not warrant new parameters, but it is still fitted and folded
    /// into the accumulated estimate; that estimate replaces the parameters (after validation) once it
    /// differs from them by more than this many of its standard deviations in radius, track width or beta.
    /// A single 3 s window cannot see a 0.5 % radius error under 2 cm of SLAM noise; two minutes of
    /// windows can. 0: threshold 1 alone decides (the residual gate).
    pub significance_sigmas: f64,
    /// An observed pose that moves this much more than the wheels say is a jump (m).
    pub jump_m: f64,
    /// An accepted radius or track width this many percent from nominal raises an alarm.
    pub drift_alarm_percent: f64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            window_secs: 3.0,
            max_delay_secs: 0.5,
            noise: PoseNoise {
                sigma_xy_m: 0.02,
                sigma_yaw_rad: 0.0087,
            },
            observability: Observability::default(),
            gate: Gate::Fixed(1.1),
            threshold2: 2.0,
            validation_segments: 2,
            validation_segment_secs: 3.0,
            history_limit_secs: 120.0,
            accumulate_windows: 60,
            radius_accumulate_windows: 120,
            holdout_every: 4,
            stretch_secs: 60.0,
            change_sigmas: 5.0,
            significance_sigmas: 2.0,
            jump_m: 0.25,
            drift_alarm_percent: 10.0,
        }
    }
}

/// One validation segment's result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentCheck {
    /// Start (s).
    pub t0_secs: f64,
    /// End (s).
    pub t1_secs: f64,
    /// Normalized RMS residual of the candidate parameters.
    pub residual: f64,
}

/// An accepted update.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// The new parameters.
    pub params: ModelParams,
    /// Standard deviations: radius, track width, delay, beta (0 = never estimated).
    pub std: [f64; 4],
    /// Standard deviation of the wheel-radius asymmetry (0 = never estimated).
    pub asymmetry_std: f64,
    /// Standard deviation of the lateral slip (0 = never estimated).
    pub lateral_slip_std: f64,
    /// Residual of the previous parameters over the window.
    pub residual_before: f64,
    /// Residual of the new ones.
    pub residual_after: f64,
    /// Every validation segment.
    pub validation: Vec<SegmentCheck>,
    /// What the window could not determine, and why.
    pub refused: Vec<String>,
    /// The unconstrained estimate of beta when it is negative (beta is then kept at 0).
    pub beta_wants_negative: Option<f64>,
    /// Drift alarms (a parameter far from nominal).
    pub alarms: Vec<String>,
}

/// What one calibration step did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Not enough data yet (the reason says what is missing).
    Waiting(String),
    /// The current parameters already explain the window (threshold 1), or nothing is determinable.
    Unchanged {
        /// Their residual.
        residual: f64,
        /// Threshold 1 it was compared with.
        threshold1: f64,
        /// Parameters the window could not determine.
        refused: Vec<String>,
    },
    /// The window was not used (an observed pose jumped).
    Skipped(String),
    /// The fit failed validation on a held-out segment, or does not explain the windows it was fitted on
    /// (threshold 1; the segment then spans those windows and `threshold2` is threshold 1).
    Rejected {
        /// The candidate.
        params: ModelParams,
        /// The failing segment.
        segment: SegmentCheck,
        /// Threshold 2.
        threshold2: f64,
    },
    /// New parameters.
    Accepted(Accepted),
}
