//! The evaluation of the nominal and the calibrated parameters over the whole bag and over the held-out
//! stretch: dead reckoning from the wheel motion with the library's [`predict`] against the observed poses,
//! and per-window residuals with its [`residual`].

use super::input::Sample;
use crate::calibrator::Config;
use crate::fit::{predict, residual};
use crate::history::History;
use crate::model::ModelParams;

/// Nominal vs calibrated parameters over the whole bag, or over the held-out stretch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evaluation {
    /// Observed poses compared (x, y), from the first one with odometry before it.
    pub observed: Vec<(f64, f64)>,
    /// Their times (s since the first sample).
    pub times: Vec<f64>,
    /// Dead reckoning from the first observed pose with the nominal parameters (x, y).
    pub nominal_path: Vec<(f64, f64)>,
    /// The same with the calibrated parameters.
    pub calibrated_path: Vec<(f64, f64)>,
    /// RMS distance between the nominal dead reckoning and the observed poses (m).
    pub rms_error_nominal_m: f64,
    /// The same for the calibrated parameters (m).
    pub rms_error_calibrated_m: f64,
    /// Mean normalized residual (the gate's and validation's measure) of the nominal parameters over
    /// consecutive windows of the bag.
    pub residual_nominal: Option<f64>,
    /// The same for the calibrated parameters.
    pub residual_calibrated: Option<f64>,
    /// Windows in those means.
    pub residual_windows: usize,
}

fn rms_distance(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
    let n = a.len().min(b.len()).max(1) as f64;
    let sum: f64 = a
        .iter()
        .zip(b)
        .map(|(p, q)| (p.0 - q.0).powi(2) + (p.1 - q.1).powi(2))
        .sum();
    (sum / n).sqrt()
}

/// The whole bag's wheel motion and observed poses, for odometry computed with `nominal`.
pub(crate) fn history(samples: &[Sample], nominal: ModelParams) -> History {
    // The whole bag: nothing gets old enough to be forgotten.
    let mut h = History::new(nominal, f64::INFINITY);
    for s in samples {
        // Dropped samples were counted by the calibrator's own history.
        let _ = match s {
            Sample::Odometry(o) => h.push_odom(*o),
            Sample::Pose(p) => h.push_pose(*p),
            Sample::Command(_) => Ok(()),
        };
    }
    h
}

/// Dead reckoning over `[t0_secs, t1_secs]` of `h` (the whole bag for infinite bounds) with `nominal` (what
/// the odometry did) and `calibrated`, from the first observed pose in it, against the observed poses; and
/// both parameters' residual per window.
pub(crate) fn evaluate(
    h: &History,
    (t0_secs, t1_secs): (f64, f64),
    nominal: ModelParams,
    calibrated: ModelParams,
    config: &Config,
) -> Evaluation {
    let (Some(from), Some(until)) = (h.complete_from(), h.complete_until()) else {
        return Evaluation::default();
    };
    let (from, until) = (from.max(t0_secs), until.min(t1_secs));
    if from >= until {
        return Evaluation::default();
    }
    // A wheel step that straddles the first pose counts from that pose on (predict interpolates in it).
    let w = h.window(from - 1.0, until, 0.0);
    let poses: Vec<_> = w.poses.iter().filter(|p| p.t_secs >= from).collect();
    let Some(first) = poses.first() else {
        return Evaluation::default();
    };
    let times: Vec<f64> = poses.iter().map(|p| p.t_secs).collect();
    let path = |params: &ModelParams| -> Vec<(f64, f64)> {
        predict(&w, params, first.pose, &times)
            .iter()
            .map(|p| (p.x_m, p.y_m))
            .collect()
    };
    let observed: Vec<(f64, f64)> = poses.iter().map(|p| (p.pose.x_m, p.pose.y_m)).collect();
    let nominal_path = path(&nominal);
    let calibrated_path = path(&calibrated);
    let mut sums = (0.0, 0.0, 0);
    let mut t0 = from;
    while t0 + config.window_secs <= until {
        let win = h.window(t0, t0 + config.window_secs, 0.0);
        if let (Some(a), Some(b)) = (
            residual(&win, &nominal, config.noise),
            residual(&win, &calibrated, config.noise),
        ) {
            sums = (sums.0 + a, sums.1 + b, sums.2 + 1);
        }
        t0 += config.window_secs;
    }
    let mean = |s: f64| (sums.2 > 0).then(|| s / sums.2 as f64);
    Evaluation {
        rms_error_nominal_m: rms_distance(&nominal_path, &observed),
        rms_error_calibrated_m: rms_distance(&calibrated_path, &observed),
        residual_nominal: mean(sums.0),
        residual_calibrated: mean(sums.1),
        residual_windows: sums.2,
        observed,
        times,
        nominal_path,
        calibrated_path,
    }
}
