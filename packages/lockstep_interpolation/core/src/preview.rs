//! The commands a session will send next, without changing it: what a trajectory output sends ahead of time
//! (a window of future points for a joint_trajectory_controller).

use crate::session::Session;

/// The next `n` commands of `session` (one per output tick), from a copy of it ticked without measurements.
/// A copy waiting for the joints to reach the first point (after an alignment) holds that point; a copy that
/// would end in an error (the joints not there in time) stops there, so fewer than `n` may come back.
pub fn preview(session: &Session, n: usize) -> Vec<Vec<f64>> {
    let mut copy = session.clone();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        match copy.tick(None) {
            Ok(positions) => out.push(positions.to_vec()),
            Err(_) => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::session::Options;
    use crate::{AxisLimits, Interpolation, InterpolationFile};

    #[test]
    fn the_preview_is_what_the_session_then_sends_and_leaves_it_unchanged() {
        let mut text = String::from("# period_s: 0.002\na,b\n");
        for k in 0..=200 {
            let x = 0.5 * (1.0 - (std::f64::consts::PI * f64::from(k) / 200.0).cos());
            text.push_str(&format!("{},{}\n", 0.2 * x, -0.1 * x));
        }
        let file = Arc::new(InterpolationFile::parse(Path::new("p.csv"), &text).unwrap());
        let limits = vec![
            AxisLimits {
                max_velocity: 1.0,
                max_acceleration: 10.0,
                max_jerk: None,
            };
            2
        ];
        let options = Options {
            period_secs: 0.003,
            factor: 0.8,
            align: true,
            tolerance: 1e-4,
            settle_timeout_secs: 1.0,
            interpolation: Interpolation::Linear,
        };
        let mut session = Session::new(file, limits, 0, -1, Some(&[0.0, 0.0]), options).unwrap();
        for _ in 0..20 {
            session.tick(None).unwrap();
        }
        let ahead = preview(&session, 50);
        assert_eq!(ahead.len(), 50);
        assert_ne!(ahead[0], ahead[49], "it moves over the window");
        for (k, expected) in ahead.iter().enumerate() {
            assert_eq!(session.tick(None).unwrap(), expected.as_slice(), "tick {k}");
        }
    }
}
