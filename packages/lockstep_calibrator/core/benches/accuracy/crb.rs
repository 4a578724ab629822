//! The Cramer-Rao bound of radius, track width and beta for the window fit's model.
//!
//! Per window (the library's `predict` from the wheel steps, the start pose a nuisance, as in `fit`), the
//! Fisher information of the normalized pose residuals at the TRUE parameters is `J^T J` (J by central
//! differences; the residuals are already divided by the known SLAM noise, so this is `J^T Sigma^-1 J`).
//! The start pose is marginalized (Schur complement), the windows' informations are summed and the sum
//! inverted. Over disjoint 3 s windows this is the best any unbiased estimator can do from those windows
//! each taken on its own; over one window spanning the whole run it is the bound for the run's data as a
//! whole (a single start pose: heading errors then build up over the whole run). It depends on the drive
//! and the noise level, not on the noise draw.

use lockstep_calibrator::{predict, History, ModelParams, Pose, PoseNoise, Window};
use nalgebra::{DMatrix, Matrix3};

/// Normalized residual-vector prediction (x, y, yaw per observed pose) for parameters `x` =
/// radius, track width, beta, start x, y, yaw.
fn predicted(w: &Window, base: &ModelParams, times: &[f64], x: &[f64; 6], noise: PoseNoise) -> Vec<f64> {
    let p = ModelParams {
        wheel_radius_m: x[0],
        track_width_m: x[1],
        centripetal_factor: x[2],
        ..*base
    };
    let start = Pose {
        x_m: x[3],
        y_m: x[4],
        yaw_rad: x[5],
    };
    predict(w, &p, start, times)
        .iter()
        .flat_map(|q| {
            [
                q.x_m / noise.sigma_xy_m,
                q.y_m / noise.sigma_xy_m,
                q.yaw_rad / noise.sigma_yaw_rad,
            ]
        })
        .collect()
}

/// Fisher information of (radius, track width, beta) in one window, its start pose marginalized.
fn window_information(
    w: &Window,
    truth: &ModelParams,
    start: Pose,
    noise: PoseNoise,
) -> Option<Matrix3<f64>> {
    let times: Vec<f64> = w.poses.iter().map(|p| p.t_secs).collect();
    if times.len() < 2 {
        return None;
    }
    let x0 = [
        truth.wheel_radius_m,
        truth.track_width_m,
        truth.centripetal_factor,
        start.x_m,
        start.y_m,
        start.yaw_rad,
    ];
    let steps = [1e-7, 1e-6, 1e-5, 1e-6, 1e-6, 1e-6];
    let rows = 3 * times.len();
    let mut j = DMatrix::<f64>::zeros(rows, 6);
    for (c, h) in steps.iter().enumerate() {
        let (mut up, mut down) = (x0, x0);
        up[c] += h;
        down[c] -= h;
        let a = predicted(w, truth, &times, &up, noise);
        let b = predicted(w, truth, &times, &down, noise);
        if a.len() != rows || b.len() != rows {
            return None;
        }
        for r in 0..rows {
            j[(r, c)] = (a[r] - b[r]) / (2.0 * h);
        }
    }
    let f = j.transpose() * &j;
    let a = f.fixed_view::<3, 3>(0, 0).into_owned();
    let b = f.fixed_view::<3, 3>(0, 3).into_owned();
    let d = f.fixed_view::<3, 3>(3, 3).into_owned();
    let d_inv = d.try_inverse()?;
    Some(a - b * d_inv * b.transpose())
}

/// The bound over a run.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    /// Standard deviations of radius (m), track width (m), beta.
    pub std: [f64; 3],
    /// Windows summed.
    pub windows: usize,
}

/// The bound over `windows` (start, end), their informations summed (as if independent); `truth` gives
/// each window's true start pose.
pub fn bound(
    h: &History,
    truth: &[(f64, Pose)],
    params: &ModelParams,
    noise: PoseNoise,
    windows: &[(f64, f64)],
) -> Option<Bound> {
    let mut info = Matrix3::<f64>::zeros();
    let mut used = 0;
    for &(t0, t1) in windows {
        let w = h.window(t0, t1, 0.0);
        let Some(first) = w.poses.first() else {
            continue;
        };
        let i = truth.partition_point(|(t, _)| *t < first.t_secs - 1e-9);
        let start = match truth.get(i) {
            Some((t, p)) if (t - first.t_secs).abs() < 1e-6 => *p,
            _ => continue,
        };
        if let Some(f) = window_information(&w, params, start, noise) {
            info += f;
            used += 1;
        }
    }
    let cov = info.try_inverse()?;
    Some(Bound {
        std: [cov[(0, 0)].sqrt(), cov[(1, 1)].sqrt(), cov[(2, 2)].sqrt()],
        windows: used,
    })
}

/// Windows of `len` from `t0` every `stride` up to `t1`.
pub fn windows(t0: f64, t1: f64, len: f64, stride: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut t = t0;
    while t + len <= t1 + 1e-9 {
        out.push((t, t + len));
        t += stride;
    }
    out
}
