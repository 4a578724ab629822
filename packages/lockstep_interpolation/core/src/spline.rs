//! How positions between two file points are found: linear interpolation, or a natural cubic
//! spline through the same points.
//!
//! Why the spline: linear interpolation makes the commanded velocity step at every file point. At s = 1 with
//! T_c = T each tick lands on a point and nobody sees it, but at any other s the third finite difference of
//! the commands spikes to about s * a * T / T_c^2 (over 1,300 rad/s^3 for a = 25 rad/s^2, T = T_c = 2 ms,
//! s = 0.35), so no ramp of s can honour a jerk limit mid-move. The spline is C2: its jerk is the file's
//! own, bounded, and every change of s keeps within a jerk limit when the ramp is an S-curve. Both pass
//! through every file point, so at s = 1 with T_c = T they send the same commands.

use std::sync::Arc;

use crate::file::InterpolationFile;

/// The interpolation between file points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Interpolation {
    /// Linear: P = (1 - w) P_k + w P_(k+1).
    #[default]
    Linear,
    /// A natural cubic spline through the points (C2; zero second derivative at both ends).
    Cubic,
}

impl std::str::FromStr for Interpolation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "linear" => Ok(Self::Linear),
            "cubic" => Ok(Self::Cubic),
            other => Err(format!("`{other}`: expected `linear` or `cubic`")),
        }
    }
}

/// A file and the interpolation between its points.
#[derive(Debug, Clone)]
pub struct Curve {
    file: Arc<InterpolationFile>,
    /// With the cubic interpolation: the spline's second derivative at each point, per joint.
    second: Option<Arc<Vec<Vec<f64>>>>,
}

impl Curve {
    pub fn new(file: Arc<InterpolationFile>, interpolation: Interpolation) -> Self {
        let second = match interpolation {
            Interpolation::Linear => None,
            Interpolation::Cubic => Some(Arc::new(natural_second_derivatives(&file))),
        };
        Self { file, second }
    }

    pub fn file(&self) -> &InterpolationFile {
        &self.file
    }

    pub fn file_arc(&self) -> Arc<InterpolationFile> {
        self.file.clone()
    }

    pub fn interpolation(&self) -> Interpolation {
        if self.second.is_some() {
            Interpolation::Cubic
        } else {
            Interpolation::Linear
        }
    }

    /// The position at file time `tau` (s) into `out`: before the start the first point, past the end the
    /// last.
    pub fn position_at(&self, tau: f64, out: &mut Vec<f64>) {
        let Some(second) = &self.second else {
            self.file.position_at(tau, out);
            return;
        };
        let points = &self.file.points;
        let last = points.len() - 1;
        let x = tau / self.file.period_secs;
        out.clear();
        if x.is_nan() || x <= 0.0 {
            out.extend_from_slice(&points[0]);
            return;
        }
        let k = x.floor() as usize;
        if k >= last {
            out.extend_from_slice(&points[last]);
            return;
        }
        let w = x - k as f64;
        let h2 = self.file.period_secs * self.file.period_secs;
        let (ca, cb) = (
            ((1.0 - w).powi(3) - (1.0 - w)) * h2 / 6.0,
            (w.powi(3) - w) * h2 / 6.0,
        );
        let (pa, pb, ma, mb) = (&points[k], &points[k + 1], &second[k], &second[k + 1]);
        out.extend((0..pa.len()).map(|i| (1.0 - w) * pa[i] + w * pb[i] + ca * ma[i] + cb * mb[i]));
    }
}

/// The second derivatives M of the natural cubic spline through `file`'s points (uniform spacing h = T):
/// M_(i-1) + 4 M_i + M_(i+1) = 6 (P_(i+1) - 2 P_i + P_(i-1)) / h^2 inside, M = 0 at both ends; solved per
/// joint with the Thomas algorithm (the system is diagonally dominant, so no pivoting is needed).
fn natural_second_derivatives(file: &InterpolationFile) -> Vec<Vec<f64>> {
    let points = &file.points;
    let n = points.len();
    let joints = file.joints.len();
    let mut m = vec![vec![0.0; joints]; n];
    if n < 3 {
        return m;
    }
    let h2 = file.period_secs * file.period_secs;
    // Unknowns M_1 .. M_(n-2); forward sweep keeps the modified upper diagonal c' and right side d'.
    let inner = n - 2;
    let mut c = vec![0.0; inner];
    let mut d = vec![vec![0.0; joints]; inner];
    for r in 0..inner {
        let i = r + 1;
        let denom = 4.0 - if r > 0 { c[r - 1] } else { 0.0 };
        c[r] = 1.0 / denom;
        for j in 0..joints {
            let rhs = 6.0 * (points[i + 1][j] - 2.0 * points[i][j] + points[i - 1][j]) / h2;
            let prev = if r > 0 { d[r - 1][j] } else { 0.0 };
            d[r][j] = (rhs - prev) / denom;
        }
    }
    for r in (0..inner).rev() {
        for j in 0..joints {
            let next = if r + 1 < inner { m[r + 2][j] } else { 0.0 };
            m[r + 1][j] = d[r][j] - c[r] * next;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn file(points: Vec<Vec<f64>>, period_secs: f64) -> Arc<InterpolationFile> {
        let lines = (1..=points.len()).collect();
        Arc::new(InterpolationFile {
            path: PathBuf::from("t.csv"),
            joints: vec!["a".into(), "b".into()],
            period_secs,
            points,
            lines,
        })
    }

    #[test]
    fn passes_through_every_point_and_is_c2() {
        let t = 0.01;
        let points: Vec<Vec<f64>> = (0..40)
            .map(|i| {
                let x = f64::from(i) * t;
                vec![(3.0 * x).sin(), x * x * x - x]
            })
            .collect();
        let curve = Curve::new(file(points.clone(), t), Interpolation::Cubic);
        let mut p = Vec::new();
        for (k, point) in points.iter().enumerate() {
            curve.position_at(k as f64 * t, &mut p);
            for (a, b) in p.iter().zip(point) {
                assert!((a - b).abs() < 1e-12, "point {k}: {a} vs {b}");
            }
        }
        // Second derivative by central differences just left and right of an inner point: equal (C2),
        // where the linear interpolation's first derivative already jumps.
        let e = 1e-4 * t;
        let second = |curve: &Curve, tau: f64| {
            let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
            curve.position_at(tau - e, &mut a);
            curve.position_at(tau, &mut b);
            curve.position_at(tau + e, &mut c);
            (a[0] - 2.0 * b[0] + c[0]) / (e * e)
        };
        let knot = 17.0 * t;
        let (left, right) = (second(&curve, knot - 2.0 * e), second(&curve, knot + 2.0 * e));
        assert!(
            (left - right).abs() < 1e-3 * left.abs().max(1.0),
            "{left} vs {right}"
        );
        // ...and it is close to the true second derivative of sin(3x): -9 sin(3x).
        assert!((left + 9.0 * (3.0 * knot).sin()).abs() < 1e-2, "{left}");
        let linear = Curve::new(file(points, t), Interpolation::Linear);
        let slope = |tau: f64| {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            linear.position_at(tau, &mut a);
            linear.position_at(tau + e, &mut b);
            (b[0] - a[0]) / e
        };
        assert!((slope(knot - 2.0 * e) - slope(knot + e)).abs() > 1e-3);
    }

    #[test]
    fn ends_hold_and_parse() {
        let curve = Curve::new(
            file(vec![vec![0.0, 1.0], vec![1.0, 2.0]], 0.1),
            Interpolation::Cubic,
        );
        let mut p = Vec::new();
        curve.position_at(-1.0, &mut p);
        assert_eq!(p, [0.0, 1.0]);
        curve.position_at(5.0, &mut p);
        assert_eq!(p, [1.0, 2.0]);
        curve.position_at(0.05, &mut p);
        assert!((p[0] - 0.5).abs() < 1e-15, "{p:?}");
        assert_eq!("cubic".parse(), Ok(Interpolation::Cubic));
        assert!("spline"
            .parse::<Interpolation>()
            .unwrap_err()
            .contains("`spline`"));
    }
}
