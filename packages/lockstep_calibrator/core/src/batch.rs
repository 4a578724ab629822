//! The joint fit of many windows: wheel radius, track width, beta, the wheel-radius asymmetry and the
//! lateral slip shared by
//! every window, each window with its own start pose (a nuisance). One window alone often cannot separate
//! the track width from beta (its turns are all at one speed) or sees too little of a 0.1 % radius error
//! under SLAM noise; together, the turns in place of one window, the arcs of another and the straight runs of
//! a third pin every parameter at once.
//!
//! Gauss-Newton with Levenberg-Marquardt damping on the reduced system: each window's start pose is
//! eliminated by its Schur complement, so one iteration costs a 4 x 4 solve plus, per window, a 3 x 3 one,
//! however many windows there are. From scratch the fit is plain least squares until it converges; then (and
//! from a warm start) Huber weights (3 sigma) are refreshed every iteration, so a few bad poses do not drag
//! the fit. The covariance of the shared parameters is the inverse of the reduced
//! information, scaled by the residual's variance.

use nalgebra::{Matrix3, SMatrix, SVector, Vector3};

use crate::fit::{predict, PoseNoise};
use crate::history::Window;
use crate::model::{wrap, ModelParams, Pose};

/// The shared parameters, in this order.
pub const NAMES: [&str; N] = [
    "wheel radius",
    "track width",
    "beta",
    "wheel radius asymmetry",
    "lateral slip",
];
/// How many shared parameters.
pub const N: usize = 5;
type MatrixN = SMatrix<f64, N, N>;
type VectorN = SVector<f64, N>;

/// Finite-difference steps of the shared parameters.
const THETA_STEP: [f64; N] = [1e-7, 1e-6, 1e-5, 1e-6, 1e-5];
/// Huber's threshold on a sample's normalized error norm.
const HUBER: f64 = 3.0;
/// Iterations of a fit from scratch, and of one warm-started from the previous fit (which goes on
/// converging at the next refit, a few seconds later).
const MAX_ITERATIONS: usize = 30;
const MAX_WARM_ITERATIONS: usize = 8;

/// The result of a joint fit.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchFit {
    /// The model with the free parameters fitted (the others as given).
    pub params: ModelParams,
    /// Standard deviations of radius (m), track width (m), beta, asymmetry, lateral slip (s); infinite where
    /// not free.
    pub std: [f64; N],
    /// Which were free.
    pub free: [bool; N],
    /// RMS of the normalized per-sample error over every window (about 1 when model and noise are right;
    /// not robust: every sample counts).
    pub rms: f64,
    /// Observed poses compared.
    pub samples: usize,
    /// The fitted start pose of each window.
    pub starts: Vec<Pose>,
    /// The start time of each window (s).
    pub stretches: Vec<f64>,
}

fn theta_of(p: &ModelParams) -> [f64; N] {
    [
        p.wheel_radius_m,
        p.track_width_m,
        p.centripetal_factor,
        p.wheel_radius_asymmetry,
        p.lateral_slip_s,
    ]
}

fn with_theta(base: &ModelParams, t: &[f64; N]) -> ModelParams {
    ModelParams {
        wheel_radius_m: t[0],
        track_width_m: t[1],
        centripetal_factor: t[2],
        wheel_radius_asymmetry: t[3],
        lateral_slip_s: t[4],
        ..*base
    }
}

/// Normalized errors (x, y, yaw per observed pose) of `params` from `start` over `w`: each pose weighed by
/// its own noise when it carries one.
pub fn errors(w: &Window, params: &ModelParams, start: Pose, noise: PoseNoise) -> Vec<[f64; 3]> {
    let times: Vec<f64> = w.poses.iter().map(|p| p.t_secs).collect();
    residuals(&predict(w, params, start, &times), w, noise)
}

/// Normalized errors of `predicted` poses against the window's observed ones.
fn residuals(predicted: &[Pose], w: &Window, noise: PoseNoise) -> Vec<[f64; 3]> {
    predicted
        .iter()
        .zip(&w.poses)
        .map(|(pred, obs)| {
            let n = obs.noise.unwrap_or(noise);
            [
                (pred.x_m - obs.pose.x_m) / n.sigma_xy_m,
                (pred.y_m - obs.pose.y_m) / n.sigma_xy_m,
                wrap(pred.yaw_rad - obs.pose.yaw_rad) / n.sigma_yaw_rad,
            ]
        })
        .collect()
}

fn huber(e: &[f64; 3]) -> f64 {
    let norm = (e[0] * e[0] + e[1] * e[1] + e[2] * e[2]).sqrt();
    if norm <= HUBER {
        1.0
    } else {
        HUBER / norm
    }
}

/// One window's share of the reduced system.
struct Share {
    a_inv: Matrix3<f64>,
    b: SMatrix<f64, N, 3>,
    g_pose: Vector3<f64>,
}

struct Problem<'a> {
    windows: &'a [&'a Window],
    base: ModelParams,
    free: [bool; N],
    noise: PoseNoise,
}

impl Problem<'_> {
    fn weighted(&self, w: &Window, theta: &[f64; N], start: Pose, weights: &[f64]) -> Vec<f64> {
        errors(w, &with_theta(&self.base, theta), start, self.noise)
            .iter()
            .zip(weights)
            .flat_map(|(e, k)| e.map(|v| v * k.sqrt()))
            .collect()
    }

    fn cost(&self, theta: &[f64; N], starts: &[Pose], weights: &[Vec<f64>]) -> f64 {
        self.windows
            .iter()
            .zip(starts)
            .zip(weights)
            .map(|((w, s), k)| self.weighted(w, theta, *s, k).iter().map(|v| v * v).sum::<f64>())
            .sum()
    }

    /// Huber weights at `theta` and `starts`, and the cost they give there.
    fn weights(&self, theta: &[f64; N], starts: &[Pose]) -> (Vec<Vec<f64>>, f64) {
        let p = with_theta(&self.base, theta);
        let mut cost = 0.0;
        let weights = self
            .windows
            .iter()
            .zip(starts)
            .map(|(w, s)| {
                errors(w, &p, *s, self.noise)
                    .iter()
                    .map(|e| {
                        let k = huber(e);
                        cost += k * (e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
                        k
                    })
                    .collect()
            })
            .collect();
        (weights, cost)
    }

    /// The reduced information matrix and gradient of the shared parameters, and each window's share.
    fn reduced(
        &self,
        theta: &[f64; N],
        starts: &[Pose],
        weights: &[Vec<f64>],
    ) -> (MatrixN, VectorN, Vec<Option<Share>>) {
        let mut h = MatrixN::zeros();
        let mut g = VectorN::zeros();
        let mut shares = Vec::with_capacity(self.windows.len());
        for ((w, start), k) in self.windows.iter().zip(starts).zip(weights) {
            let params = with_theta(&self.base, theta);
            let times: Vec<f64> = w.poses.iter().map(|p| p.t_secs).collect();
            let predicted = predict(w, &params, *start, &times);
            let r0: Vec<f64> = residuals(&predicted, w, self.noise)
                .iter()
                .zip(k)
                .flat_map(|(e, k)| e.map(|v| v * k.sqrt()))
                .collect();
            let n = r0.len();
            let mut jt = vec![vec![0.0; n]; N];
            for (c, col) in jt.iter_mut().enumerate() {
                if !self.free[c] {
                    continue;
                }
                let mut t = *theta;
                t[c] += THETA_STEP[c];
                let r = self.weighted(w, &t, *start, k);
                for (out, (a, b)) in col.iter_mut().zip(r.iter().zip(&r0)) {
                    *out = (a - b) / THETA_STEP[c];
                }
            }
            // The start pose's columns in closed form: moving the start moves every predicted pose with it,
            // turning it turns the whole prediction about the start.
            let mut jx = vec![vec![0.0; n]; 3];
            for (i, ((p, obs), k)) in predicted.iter().zip(&w.poses).zip(k.iter()).enumerate() {
                let noise = obs.noise.unwrap_or(self.noise);
                let (sxy, syaw) = (k.sqrt() / noise.sigma_xy_m, k.sqrt() / noise.sigma_yaw_rad);
                jx[0][3 * i] = sxy;
                jx[1][3 * i + 1] = sxy;
                jx[2][3 * i] = -sxy * (p.y_m - start.y_m);
                jx[2][3 * i + 1] = sxy * (p.x_m - start.x_m);
                jx[2][3 * i + 2] = syaw;
            }
            let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
            let a = Matrix3::from_fn(|i, j| dot(&jx[i], &jx[j]));
            let b = SMatrix::<f64, N, 3>::from_fn(|i, j| dot(&jt[i], &jx[j]));
            let c = MatrixN::from_fn(|i, j| dot(&jt[i], &jt[j]));
            let g_theta = VectorN::from_fn(|i, _| dot(&jt[i], &r0));
            let g_pose = Vector3::from_fn(|i, _| dot(&jx[i], &r0));
            let Some(a_inv) = a.try_inverse() else {
                shares.push(None);
                continue;
            };
            h += c - b * a_inv * b.transpose();
            g += g_theta - b * a_inv * g_pose;
            shares.push(Some(Share { a_inv, b, g_pose }));
        }
        for i in 0..N {
            if !self.free[i] {
                for j in 0..N {
                    h[(i, j)] = 0.0;
                    h[(j, i)] = 0.0;
                }
                h[(i, i)] = 1.0;
                g[i] = 0.0;
            }
        }
        (h, g, shares)
    }
}

fn moved(start: Pose, d: &Vector3<f64>) -> Pose {
    Pose {
        x_m: start.x_m + d[0],
        y_m: start.y_m + d[1],
        yaw_rad: start.yaw_rad + d[2],
    }
}

/// Fits the `free` shared parameters of `init` (radius, track width, beta, asymmetry) and one start pose
/// per window to every window's observed poses. `starts` warm-starts the poses (else each window's first
/// observed pose). `warm`: `init` is the previous fit's result, so a few iterations are enough. `None` when no
/// window has 6 poses or the solve fails.
pub fn fit_windows(
    windows: &[&Window],
    init: &ModelParams,
    starts: Option<&[Pose]>,
    free: [bool; N],
    noise: PoseNoise,
    warm: bool,
) -> Option<BatchFit> {
    let windows: Vec<&Window> = windows.iter().copied().filter(|w| w.poses.len() >= 6).collect();
    if windows.is_empty() {
        return None;
    }
    let problem = Problem {
        windows: &windows,
        base: *init,
        free,
        noise,
    };
    let mut theta = theta_of(init);
    let mut poses: Vec<Pose> = match starts {
        Some(s) if s.len() == windows.len() => s.to_vec(),
        _ => windows.iter().map(|w| w.poses[0].pose).collect(),
    };
    let mut lambda = 1e-4;
    let iterations = if warm { MAX_WARM_ITERATIONS } else { MAX_ITERATIONS };
    // From scratch, plain least squares first: with the start far off, Huber weights would let whole windows
    // count as outliers and the fit settle where it explains none of them. Robust once it has converged.
    let mut robust = warm;
    for _ in 0..iterations {
        let (weights, cost) = if robust {
            problem.weights(&theta, &poses)
        } else {
            let ones: Vec<Vec<f64>> = windows.iter().map(|w| vec![1.0; w.poses.len()]).collect();
            let cost = problem.cost(&theta, &poses, &ones);
            (ones, cost)
        };
        let (h, g, shares) = problem.reduced(&theta, &poses, &weights);
        let reduced = Reduced { h, g, shares };
        let improved = problem.damped_step(&reduced, &weights, cost, &mut lambda, &mut theta, &mut poses);
        if !improved {
            if robust {
                break;
            }
            robust = true;
        }
    }
    problem.result(init, &theta, poses)
}

/// The normal equations of the shared parameters with the start poses eliminated (see `Problem::reduced`).
struct Reduced {
    h: MatrixN,
    g: VectorN,
    shares: Vec<Option<Share>>,
}

impl Problem<'_> {
    /// One Levenberg-Marquardt step: raise the damping `lambda` until a step lowers the cost below `cost`,
    /// then take it (into `theta` and `poses`) and lower the damping. Returns whether the step improved the
    /// cost by more than a relative 1e-6 (false when no damping up to 1e10 gave a lower cost).
    fn damped_step(
        &self,
        r: &Reduced,
        weights: &[Vec<f64>],
        cost: f64,
        lambda: &mut f64,
        theta: &mut [f64; N],
        poses: &mut Vec<Pose>,
    ) -> bool {
        let (h, g, shares) = (r.h, r.g, &r.shares);
        let mut improved = false;
        while *lambda < 1e10 {
            let mut damped = h;
            for i in 0..N {
                damped[(i, i)] += *lambda * h[(i, i)].max(1e-12);
            }
            let Some(d_theta) = damped.cholesky().map(|c| c.solve(&(-g))) else {
                *lambda *= 10.0;
                continue;
            };
            let mut t = *theta;
            for i in 0..N {
                t[i] += d_theta[i];
            }
            let next: Vec<Pose> = poses
                .iter()
                .zip(shares)
                .map(|(p, s)| match s {
                    Some(s) => moved(*p, &(-(s.a_inv * (s.g_pose + s.b.transpose() * d_theta)))),
                    None => *p,
                })
                .collect();
            let next_cost = self.cost(&t, &next, weights);
            if next_cost.is_finite() && next_cost < cost {
                let gain = cost - next_cost;
                *theta = t;
                *poses = next;
                *lambda = (*lambda / 3.0).max(1e-9);
                improved = gain > 1e-6 * cost.max(1e-12);
                break;
            }
            *lambda *= 4.0;
        }
        improved
    }

    /// The fit at `theta` and `poses`: parameters, their standard deviations from the robustly weighted
    /// normal equations, and the plain RMS of the normalized errors. `None` when the equations are singular.
    fn result(&self, init: &ModelParams, theta: &[f64; N], poses: Vec<Pose>) -> Option<BatchFit> {
        let (windows, free, noise) = (self.windows, self.free, self.noise);
        let (weights, weighted_cost) = self.weights(theta, &poses);
        let (h, _, _) = self.reduced(theta, &poses, &weights);
        let params = with_theta(init, theta);
        let mut sum = 0.0;
        let mut samples = 0usize;
        for (w, s) in windows.iter().zip(&poses) {
            for e in errors(w, &params, *s, noise) {
                sum += e.iter().map(|v| v * v).sum::<f64>();
                samples += 1;
            }
        }
        let unknowns = 3 * windows.len() + free.iter().filter(|f| **f).count();
        let dof = (3 * samples).saturating_sub(unknowns).max(1) as f64;
        let s2 = weighted_cost / dof;
        let cov = h.try_inverse()?;
        let mut std = [f64::INFINITY; N];
        for i in 0..N {
            if free[i] {
                std[i] = (cov[(i, i)] * s2).max(0.0).sqrt();
            }
        }
        Some(BatchFit {
            params,
            std,
            free,
            rms: (sum / (3 * samples).max(1) as f64).sqrt(),
            samples,
            stretches: windows.iter().map(|w| w.t0_secs).collect(),
            starts: poses,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{PoseSample, WheelStep};

    /// A window driven by `(left, right)` wheel speeds (rad/s) for `secs` each, observed exactly at 20 Hz as
    /// `truth` moves the body.
    fn drive(truth: &ModelParams, pieces: &[(f64, f64, f64)]) -> Window {
        let dt = 0.01;
        let mut steps = Vec::new();
        let mut t = 0.0;
        for &(left, right, secs) in pieces {
            for _ in 0..(secs / dt).round() as usize {
                steps.push(WheelStep {
                    t0_secs: t,
                    t1_secs: t + dt,
                    d_left_rad: left * dt,
                    d_right_rad: right * dt,
                    left_radps: left,
                    right_radps: right,
                });
                t += dt;
            }
        }
        let mut w = Window {
            t0_secs: 0.0,
            t1_secs: t,
            commands: Vec::new(),
            steps,
            poses: Vec::new(),
            nominal: ModelParams::default(),
        };
        let times: Vec<f64> = (0..=(t / 0.05).round() as usize)
            .map(|k| k as f64 * 0.05)
            .collect();
        w.poses = predict(&w, truth, Pose::default(), &times)
            .into_iter()
            .zip(&times)
            .map(|(pose, t)| PoseSample {
                t_secs: *t,
                pose,
                noise: None,
            })
            .collect();
        w
    }

    const NOISE: PoseNoise = PoseNoise {
        sigma_xy_m: 0.02,
        sigma_yaw_rad: 0.0087,
    };

    #[test]
    fn unequal_wheels_and_a_sideways_slide_are_told_apart_from_radius_track_and_beta() {
        let truth = ModelParams {
            wheel_radius_m: 0.0515,
            track_width_m: 0.376,
            centripetal_factor: 0.1,
            wheel_radius_asymmetry: 0.004,
            lateral_slip_s: 0.05,
            ..ModelParams::default()
        };
        // Straight, a turn in place each way, a slow and a fast arc.
        let w = drive(
            &truth,
            &[
                (10.0, 10.0, 4.0),
                (-8.0, 8.0, 3.0),
                (8.0, -8.0, 3.0),
                (4.0, 7.0, 4.0),
                (10.0, 16.0, 4.0),
            ],
        );
        let e = fit_windows(&[&w], &ModelParams::default(), None, [true; N], NOISE, false).unwrap();
        let got = theta_of(&e.params);
        let want = theta_of(&truth);
        for k in 0..N {
            assert!(
                (got[k] - want[k]).abs() < 1e-4 * want[k].abs().max(1.0),
                "{}: {got:?} vs {want:?}",
                NAMES[k]
            );
            assert!(e.std[k].is_finite() && e.std[k] > 0.0, "{}", NAMES[k]);
        }
        assert!(e.rms < 0.01, "{}", e.rms);
    }

    #[test]
    fn a_parameter_left_fixed_keeps_its_value_and_has_no_uncertainty() {
        let truth = ModelParams {
            wheel_radius_m: 0.052,
            ..ModelParams::default()
        };
        let w = drive(&truth, &[(10.0, 10.0, 4.0), (0.0, 0.0, 1.0), (6.0, 6.0, 3.0)]);
        let free = [true, false, false, false, false];
        let e = fit_windows(&[&w], &ModelParams::default(), None, free, NOISE, false).unwrap();
        assert!((e.params.wheel_radius_m - 0.052).abs() < 1e-7, "{:?}", e.params);
        assert_eq!(e.params.track_width_m, 0.4);
        assert!(e.std[1].is_infinite() && e.std[0].is_finite());
    }
}
