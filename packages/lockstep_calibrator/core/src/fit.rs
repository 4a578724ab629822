//! The pose fit of one window: wheel radius, track width and beta (those the window can determine), plus
//! the pose at the window's start as a nuisance (so the first observed pose's noise does not leak into
//! every residual), by Levenberg-Marquardt under a Huber loss (iteratively reweighted), so that a few bad
//! poses do not drag the fit.
//!
//! Prediction: from the start pose, the wheel motion of each odometry step (wheel angles recovered through
//! the nominal parameters) is turned into body motion by the candidate model (the arc with slip) and
//! composed; at each observed pose's time the prediction is interpolated within its step. The residual of a
//! sample is `(dx / sigma_xy, dy / sigma_xy, dyaw / sigma_yaw)`.

use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt};
use nalgebra::{storage::Owned, DMatrix, DVector, Dyn};

// The noise of the observed poses is the residuals' unit; it is defined beside the observed poses (the
// history's samples carry it), and offered here too, where it has always been.
pub use crate::history::PoseNoise;

use crate::history::Window;
use crate::model::{wrap, ModelParams, Pose};

/// Which of the model's fitted parameters are free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Free {
    /// Wheel radius.
    pub radius: bool,
    /// Track width.
    pub track_width: bool,
    /// Centripetal factor.
    pub beta: bool,
}

/// Huber's threshold on a sample's normalized error norm.
const HUBER: f64 = 3.0;

/// A fitted window.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// The model with the free parameters fitted (others as given).
    pub params: ModelParams,
    /// Standard deviations of radius, track width and beta (0 where not free).
    pub std: [f64; 3],
    /// RMS of the normalized per-sample error (about 1 when model and noise are right).
    pub rms: f64,
    /// Samples compared.
    pub samples: usize,
}

/// Predicted poses at `times` (ascending, within the steps), starting at `start` at `times[0]`.
pub fn predict(w: &Window, params: &ModelParams, start: Pose, times: &[f64]) -> Vec<Pose> {
    let mut out = Vec::with_capacity(times.len());
    let Some(&t_start) = times.first() else {
        return out;
    };
    let mut pose = start;
    let mut now = t_start;
    let mut next = 0;
    while next < times.len() && times[next] <= now + 1e-12 {
        out.push(pose);
        next += 1;
    }
    for s in &w.steps {
        if s.t1_secs <= now || next >= times.len() {
            continue;
        }
        let span = s.t1_secs - s.t0_secs;
        if span <= 0.0 {
            continue;
        }
        let advance = |pose: &mut Pose, from: f64, to: f64| {
            let f = (to - from) / span;
            *pose = pose.compose(params.motion(s.d_left_rad * f, s.d_right_rad * f, to - from));
        };
        while next < times.len() && times[next] <= s.t1_secs + 1e-12 {
            advance(&mut pose, now, times[next].max(now));
            now = times[next].max(now);
            out.push(pose);
            next += 1;
        }
        if now < s.t1_secs {
            advance(&mut pose, now, s.t1_secs);
            now = s.t1_secs;
        }
    }
    out
}

struct Problem<'a> {
    w: &'a Window,
    base: ModelParams,
    free: Free,
    noise: PoseNoise,
    times: Vec<f64>,
    weights: Vec<f64>,
    x: DVector<f64>,
}

impl Problem<'_> {
    fn model(&self, x: &DVector<f64>) -> (ModelParams, Pose) {
        let mut p = self.base;
        let mut i = 0;
        for (on, field) in [
            (self.free.radius, &mut p.wheel_radius_m),
            (self.free.track_width, &mut p.track_width_m),
            (self.free.beta, &mut p.centripetal_factor),
        ] {
            if on {
                *field = x[i];
                i += 1;
            }
        }
        let start = Pose {
            x_m: x[i],
            y_m: x[i + 1],
            yaw_rad: x[i + 2],
        };
        (p, start)
    }

    /// Per-sample normalized errors (3 per sample), unweighted.
    fn errors(&self, x: &DVector<f64>) -> Vec<[f64; 3]> {
        let (p, start) = self.model(x);
        predict(self.w, &p, start, &self.times)
            .iter()
            .zip(&self.w.poses)
            .map(|(pred, obs)| {
                [
                    (pred.x_m - obs.pose.x_m) / self.noise.sigma_xy_m,
                    (pred.y_m - obs.pose.y_m) / self.noise.sigma_xy_m,
                    wrap(pred.yaw_rad - obs.pose.yaw_rad) / self.noise.sigma_yaw_rad,
                ]
            })
            .collect()
    }

    fn weighted(&self, x: &DVector<f64>) -> DVector<f64> {
        let e = self.errors(x);
        DVector::from_iterator(
            e.len() * 3,
            e.iter()
                .zip(&self.weights)
                .flat_map(|(e, w)| e.map(|v| v * w.sqrt())),
        )
    }

    fn scales(&self) -> Vec<f64> {
        let mut s = Vec::new();
        if self.free.radius {
            s.push(1e-4);
        }
        if self.free.track_width {
            s.push(1e-3);
        }
        if self.free.beta {
            s.push(1e-3);
        }
        s.extend([1e-4, 1e-4, 1e-5]);
        s
    }
}

impl LeastSquaresProblem<f64, Dyn, Dyn> for Problem<'_> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, Dyn>;
    type ParameterStorage = Owned<f64, Dyn>;

    fn set_params(&mut self, x: &DVector<f64>) {
        self.x.copy_from(x);
    }

    fn params(&self) -> DVector<f64> {
        self.x.clone()
    }

    fn residuals(&self) -> Option<DVector<f64>> {
        let r = self.weighted(&self.x);
        r.iter().all(|v| v.is_finite()).then_some(r)
    }

    fn jacobian(&self) -> Option<DMatrix<f64>> {
        let r0 = self.weighted(&self.x);
        let mut j = DMatrix::zeros(r0.len(), self.x.len());
        for (c, h) in self.scales().into_iter().enumerate() {
            let mut x = self.x.clone();
            x[c] += h;
            let r = self.weighted(&x);
            j.set_column(c, &((r - &r0) / h));
        }
        j.iter().all(|v| v.is_finite()).then_some(j)
    }
}

/// Fits the free parameters of `start_params` (with the start pose) to the window's observed poses.
/// `None` when the window has fewer than 6 poses or the solver fails.
pub fn fit(w: &Window, start_params: &ModelParams, free: Free, noise: PoseNoise) -> Option<Fit> {
    if w.poses.len() < 6 {
        return None;
    }
    let first = w.poses[0].pose;
    let mut x0 = Vec::new();
    if free.radius {
        x0.push(start_params.wheel_radius_m);
    }
    if free.track_width {
        x0.push(start_params.track_width_m);
    }
    if free.beta {
        x0.push(start_params.centripetal_factor);
    }
    x0.extend([first.x_m, first.y_m, first.yaw_rad]);
    let mut problem = Problem {
        w,
        base: *start_params,
        free,
        noise,
        times: w.poses.iter().map(|p| p.t_secs).collect(),
        weights: vec![1.0; w.poses.len()],
        x: DVector::from_vec(x0),
    };
    for _ in 0..3 {
        let (solved, report) = LevenbergMarquardt::new().with_patience(200).minimize(problem);
        problem = solved;
        if !report.termination.was_successful() {
            return None;
        }
        let errors = problem.errors(&problem.x);
        problem.weights = errors
            .iter()
            .map(|e| {
                let norm = (e[0] * e[0] + e[1] * e[1] + e[2] * e[2]).sqrt();
                if norm <= HUBER {
                    1.0
                } else {
                    HUBER / norm
                }
            })
            .collect();
    }
    let (params, _) = problem.model(&problem.x);
    let errors = problem.errors(&problem.x);
    let n = errors.len();
    let sum: f64 = errors.iter().map(|e| e.iter().map(|v| v * v).sum::<f64>()).sum();
    let rms = (sum / (3 * n) as f64).sqrt();
    let j = problem.jacobian()?;
    let dof = (3 * n).saturating_sub(problem.x.len()).max(1) as f64;
    let r = problem.residuals()?;
    let s2 = r.norm_squared() / dof;
    let cov = (j.transpose() * &j).try_inverse()?;
    let mut std = [0.0; 3];
    let mut i = 0;
    for (k, on) in [free.radius, free.track_width, free.beta].into_iter().enumerate() {
        if on {
            std[k] = (cov[(i, i)] * s2).sqrt();
            i += 1;
        }
    }
    Some(Fit {
        params,
        std,
        rms,
        samples: n,
    })
}

/// RMS normalized error of `params` over the window, with only the start pose fitted: the residual the
/// gate and the validation compare with their thresholds. Not robust on purpose: a jump shows.
pub fn residual(w: &Window, params: &ModelParams, noise: PoseNoise) -> Option<f64> {
    fit(w, params, Free::default(), noise).map(|f| f.rms)
}
