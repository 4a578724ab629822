//! The baseline: Censi, Franchi, Marchionni, Oriolo (2013), "Simultaneous calibration of odometry and
//! sensor parameters for mobile robots", closed-form least squares, simplified to our case.
//!
//! Simplifications: the exteroceptive sensor (here the SLAM pose) sits at the base origin (no sensor
//! displacement to estimate), and the wheel radii may differ. The model is the paper's: body velocity
//! `v = J11 wL + J12 wR`, `omega = J21 wL + J22 wR` with `J21 = -rL / b`, `J22 = rR / b`,
//! `J11 = rL / 2`, `J12 = rR / 2`. No delay, no slip: the method has neither.
//!
//! 1. Rotation: over each interval between consecutive observed poses, the observed heading change equals
//!    `J21 * dphiL + J22 * dphiR` (wheel angle increments over the interval): `J21, J22` by linear least
//!    squares on the 2 x 2 normal equations. The paper's "matrix almost singular" is this matrix when the
//!    two wheels turned alike throughout (straight driving): reported as a failure, not solved.
//! 2. Translation: with `J21, J22` fixed, the motion over an interval integrated step by step is linear in
//!    the axle length `b` (the heading follows from the J's alone, the speed is `b/2 (-J21 wL + J22 wR)`),
//!    so the observed displacement (in the interval's start frame) `s_k = b * c_k`, and `b` is the scalar
//!    least-squares solution `sum c.s / sum c.c`. The paper's second step also solves the sensor's
//!    displacement in closed form (a quadratic with a constraint); with the sensor at the origin only `b`
//!    is left. Then `rL = -J21 b`, `rR = J22 b`.

use lockstep_calibrator::history::WheelStep;
use lockstep_calibrator::{wrap, Pose, PoseSample};

/// The normal matrix of step 1 counts as "almost singular" beyond this condition number.
pub const COND_LIMIT: f64 = 1e6;

/// One interval between consecutive observed poses.
#[derive(Debug, Clone)]
pub struct Interval {
    /// The wheel angle increments (left, right) of the odometry steps inside it (rad).
    pub steps: Vec<(f64, f64)>,
    /// Observed displacement in the interval's start frame: x, y (m), heading change (rad).
    pub observed: (f64, f64, f64),
}

impl Interval {
    fn totals(&self) -> (f64, f64) {
        self.steps
            .iter()
            .fold((0.0, 0.0), |(l, r), (dl, dr)| (l + dl, r + dr))
    }
}

/// The intervals between consecutive observed poses, each with the wheel steps exactly covering it
/// (intervals with a gap in the odometry are left out).
pub fn intervals(steps: &[WheelStep], poses: &[PoseSample]) -> Vec<Interval> {
    const EPS: f64 = 1e-9;
    let mut out = Vec::new();
    let mut i = 0;
    for pair in poses.windows(2) {
        let (p0, p1) = (pair[0], pair[1]);
        while i < steps.len() && steps[i].t0_secs < p0.t_secs - EPS {
            i += 1;
        }
        let mut inside = Vec::new();
        let mut covered = p0.t_secs;
        while i < steps.len() && steps[i].t1_secs <= p1.t_secs + EPS {
            let s = steps[i];
            if (s.t0_secs - covered).abs() > EPS {
                break;
            }
            inside.push((s.d_left_rad, s.d_right_rad));
            covered = s.t1_secs;
            i += 1;
        }
        if inside.is_empty() || (covered - p1.t_secs).abs() > EPS {
            continue;
        }
        let (s, c) = p0.pose.yaw_rad.sin_cos();
        let (dx, dy) = (p1.pose.x_m - p0.pose.x_m, p1.pose.y_m - p0.pose.y_m);
        out.push(Interval {
            steps: inside,
            observed: (
                c * dx + s * dy,
                -s * dx + c * dy,
                wrap(p1.pose.yaw_rad - p0.pose.yaw_rad),
            ),
        });
    }
    out
}

/// The baseline's estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Left wheel radius (m).
    pub radius_left_m: f64,
    /// Right wheel radius (m).
    pub radius_right_m: f64,
    /// Axle length (m).
    pub track_width_m: f64,
    /// Condition number of step 1's normal matrix.
    pub cond: f64,
    /// Intervals used.
    pub intervals: usize,
}

impl Estimate {
    /// The mean radius, comparable with our single radius.
    pub fn radius_m(&self) -> f64 {
        0.5 * (self.radius_left_m + self.radius_right_m)
    }
}

/// Why the baseline gives no estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Failure {
    /// Step 1's normal matrix is almost singular (the paper's warning).
    AlmostSingular {
        /// Its condition number (infinite when exactly singular).
        cond: f64,
    },
    /// Step 2 has no translation to scale.
    NoTranslation,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::AlmostSingular { cond } => write!(f, "matrix almost singular (cond {cond:.1e})"),
            Failure::NoTranslation => f.write_str("no translation"),
        }
    }
}

/// Eigenvalues (min, max) of the symmetric 2 x 2 matrix `[[a, b], [b, d]]`.
fn eigen2(a: f64, b: f64, d: f64) -> (f64, f64) {
    let mean = 0.5 * (a + d);
    let half = (0.25 * (a - d) * (a - d) + b * b).sqrt();
    (mean - half, mean + half)
}

/// Both steps over `intervals`.
pub fn calibrate(intervals: &[Interval]) -> Result<Estimate, Failure> {
    // Step 1: [J21 J22] from the heading changes.
    let (mut all, mut alr, mut arr, mut bl, mut br) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for k in intervals {
        let (l, r) = k.totals();
        let th = k.observed.2;
        all += l * l;
        alr += l * r;
        arr += r * r;
        bl += l * th;
        br += r * th;
    }
    let (lo, hi) = eigen2(all, alr, arr);
    let cond = if lo > 0.0 { hi / lo } else { f64::INFINITY };
    if !(cond.is_finite() && cond <= COND_LIMIT) {
        return Err(Failure::AlmostSingular { cond });
    }
    let det = all * arr - alr * alr;
    let j21 = (arr * bl - alr * br) / det;
    let j22 = (all * br - alr * bl) / det;
    // Step 2: the axle length from the translations, linear in b.
    let (mut cc, mut cs) = (0.0, 0.0);
    for k in intervals {
        let mut pose = Pose::default();
        for (dl, dr) in &k.steps {
            let theta = j21 * dl + j22 * dr;
            let distance_per_b = 0.5 * (-j21 * dl + j22 * dr);
            pose = pose.compose(lockstep_calibrator::arc(distance_per_b, theta, false));
        }
        cc += pose.x_m * pose.x_m + pose.y_m * pose.y_m;
        cs += pose.x_m * k.observed.0 + pose.y_m * k.observed.1;
    }
    if cc <= 0.0 || !cs.is_finite() {
        return Err(Failure::NoTranslation);
    }
    let b = cs / cc;
    Ok(Estimate {
        radius_left_m: -j21 * b,
        radius_right_m: j22 * b,
        track_width_m: b,
        cond,
        intervals: intervals.len(),
    })
}

/// Checks both steps on exact data (rL 0.05, rR 0.052, b 0.38; arcs and a spin) and the failure on
/// straight driving; the bench runs it first (its harness runs no `#[test]`s).
pub fn self_check() {
    let (rl, rr, b) = (0.05, 0.052, 0.38);
    let mut ivs = Vec::new();
    for (wl, wr) in [(8.0, 12.0), (-5.0, 5.0), (10.0, 9.0), (6.0, 6.0)] {
        let steps: Vec<(f64, f64)> = (0..5).map(|_| (wl * 0.01, wr * 0.01)).collect();
        let mut pose = Pose::default();
        for (dl, dr) in &steps {
            let (l, r) = (dl * rl, dr * rr);
            pose = pose.compose(lockstep_calibrator::arc(0.5 * (l + r), (r - l) / b, false));
        }
        ivs.push(Interval {
            steps,
            observed: (pose.x_m, pose.y_m, pose.yaw_rad),
        });
    }
    let e = calibrate(&ivs).unwrap();
    assert!((e.radius_left_m - rl).abs() < 1e-12, "{e:?}");
    assert!((e.radius_right_m - rr).abs() < 1e-12, "{e:?}");
    assert!((e.track_width_m - b).abs() < 1e-12, "{e:?}");
    let straight: Vec<Interval> = (0..10)
        .map(|_| Interval {
            steps: vec![(0.1, 0.1)],
            observed: (0.005, 0.0, 0.0),
        })
        .collect();
    assert!(matches!(
        calibrate(&straight),
        Err(Failure::AlmostSingular { .. })
    ));
}
