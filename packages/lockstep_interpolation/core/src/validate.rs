//! What a file asks of each axis when played as recorded (s = 1, at its own period T): the velocity of each
//! step (P_(k+1) - P_k) / T and the acceleration between two steps. Over a limit is an error citing the line
//! of the point where it happens. A file may start or end moving (the player ramps s from 0 at the start).

use crate::file::InterpolationFile;
use crate::limits::AxisLimits;
use crate::monitor::{Quantity, SLACK};

/// A file step over an axis limit at s = 1.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}:{line}: joint `{joint}` needs {quantity} {value:.4} at speed 1, over its limit {limit:.4}")]
pub struct LimitViolation {
    pub path: String,
    pub line: usize,
    pub joint: String,
    pub quantity: Quantity,
    pub value: f64,
    pub limit: f64,
}

/// Check every step of `file` against `limits` (one per joint, in the file's order).
pub fn check_file(file: &InterpolationFile, limits: &[AxisLimits]) -> Result<(), LimitViolation> {
    let t = file.period_secs;
    let over = |k: usize, axis: usize, quantity: Quantity, value: f64, limit: f64| LimitViolation {
        path: file.path.display().to_string(),
        line: file.lines[k],
        joint: file.joints[axis].clone(),
        quantity,
        value: value.abs(),
        limit,
    };
    let mut previous: Option<Vec<f64>> = None;
    for k in 1..file.points.len() {
        let velocity: Vec<f64> = file.points[k]
            .iter()
            .zip(&file.points[k - 1])
            .map(|(b, a)| (b - a) / t)
            .collect();
        for (axis, (v, l)) in velocity.iter().zip(limits).enumerate() {
            if v.abs() > l.max_velocity * (1.0 + SLACK) {
                return Err(over(k, axis, Quantity::Velocity, *v, l.max_velocity));
            }
        }
        if let Some(previous) = &previous {
            for (axis, ((v, p), l)) in velocity.iter().zip(previous).zip(limits).enumerate() {
                let a = (v - p) / t;
                if a.abs() > l.max_acceleration * (1.0 + SLACK) {
                    return Err(over(k - 1, axis, Quantity::Acceleration, a, l.max_acceleration));
                }
            }
        }
        previous = Some(velocity);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn limits() -> Vec<AxisLimits> {
        vec![
            AxisLimits {
                max_velocity: 1.0,
                max_acceleration: 10.0,
                max_jerk: None,
            };
            2
        ]
    }

    #[test]
    fn cites_the_line_of_the_step() {
        // line 3: point 0, line 4: point 1 ... a 0.02 step in 0.01 s on `b` between lines 5 and 6: 2 rad/s.
        let text = "# period_s: 0.01\na,b\n0,0\n0,0.001\n0,0.002\n0,0.022\n";
        let f = InterpolationFile::parse(Path::new("f.csv"), text).unwrap();
        let e = check_file(&f, &limits()).unwrap_err();
        assert_eq!(
            (e.line, e.joint.as_str(), e.quantity),
            (6, "b", Quantity::Velocity)
        );
        assert!(
            e.to_string()
                .starts_with("f.csv:6: joint `b` needs velocity 2.0000"),
            "{e}"
        );
        // 0.1 -> 0.3 rad/s in 0.01 s: 20 rad/s^2 at the point between the two steps (line 4).
        let text = "# period_s: 0.01\na,b\n0,0\n0.001,0\n0.004,0\n0.007,0\n";
        let f = InterpolationFile::parse(Path::new("f.csv"), text).unwrap();
        let e = check_file(&f, &limits()).unwrap_err();
        assert_eq!((e.line, e.quantity), (4, Quantity::Acceleration));
        // A file that starts moving is fine.
        let text = "# period_s: 0.01\na,b\n0,0\n0.005,0\n0.01,0\n";
        let f = InterpolationFile::parse(Path::new("f.csv"), text).unwrap();
        assert_eq!(check_file(&f, &limits()), Ok(()));
    }
}
