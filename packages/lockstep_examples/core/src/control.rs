//! m2: a go-to-goal controller that stops for obstacles.

use crate::types::{Goal, Obstacles, OdomPose, Velocity};
use crate::validate::Invalid;

/// Controller limits and gains.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gains {
    /// Forward speed per metre of distance to the goal (1/s).
    pub k_linear_per_s: f64,
    /// Turn rate per radian of heading error (1/s).
    pub k_angular_per_s: f64,
    /// Speed limit (m/s).
    pub max_linear_mps: f64,
    /// Turn rate limit (rad/s).
    pub max_angular_rps: f64,
    /// Closer than this to the goal counts as arrived (m).
    pub goal_tolerance_m: f64,
    /// An obstacle ahead closer than this stops forward motion (m).
    pub stop_distance_m: f64,
    /// An obstacle ahead closer than this slows forward motion linearly down to the stop distance (m).
    pub slow_distance_m: f64,
}

impl Default for Gains {
    fn default() -> Self {
        Self {
            k_linear_per_s: 0.5,
            k_angular_per_s: 1.5,
            max_linear_mps: 0.5,
            max_angular_rps: 1.0,
            goal_tolerance_m: 0.05,
            stop_distance_m: 0.4,
            slow_distance_m: 1.0,
        }
    }
}

impl Gains {
    /// `Ok` if every gain and limit is a finite, non-negative number: then commands stay finite and the
    /// limits make valid clamps (a NaN or negative limit would make `clamp` panic).
    pub fn check(&self) -> Result<(), Invalid> {
        for (field, value) in [
            ("k_linear_per_s", self.k_linear_per_s),
            ("k_angular_per_s", self.k_angular_per_s),
            ("max_linear_mps", self.max_linear_mps),
            ("max_angular_rps", self.max_angular_rps),
            ("goal_tolerance_m", self.goal_tolerance_m),
            ("stop_distance_m", self.stop_distance_m),
            ("slow_distance_m", self.slow_distance_m),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(Invalid {
                    field: field.to_owned(),
                    value,
                    problem: "not a finite, non-negative number",
                });
            }
        }
        Ok(())
    }
}

/// The gains a module runs with: the defaults with the three limits its parameters set
/// (`max_linear_mps`, `max_angular_rps`, `stop_distance_m`), checked ([`Gains::check`]). The node and
/// `lockstep replay --in-process` both build theirs here, so they run the same controller.
pub fn gains_with_limits(
    max_linear_mps: f64,
    max_angular_rps: f64,
    stop_distance_m: f64,
) -> Result<Gains, Invalid> {
    let gains = Gains {
        max_linear_mps,
        max_angular_rps,
        stop_distance_m,
        ..Gains::default()
    };
    gains.check().map(|()| gains)
}

/// Yaw (rad) of a quaternion `[x, y, z, w]`.
pub fn yaw(&[x, y, z, w]: &[f64; 4]) -> f64 {
    (2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z))
}

/// An angle wrapped into (-π, π].
pub fn wrap_angle(angle: f64) -> f64 {
    let wrapped = angle.rem_euclid(std::f64::consts::TAU);
    if wrapped > std::f64::consts::PI {
        wrapped - std::f64::consts::TAU
    } else {
        wrapped
    }
}

/// Distance to the nearest obstacle ahead (x > 0 in the base frame), if any.
pub fn nearest_ahead_m(obstacles: &Obstacles) -> Option<f64> {
    obstacles
        .xs
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .min_by(f64::total_cmp)
}

/// The velocity command toward `goal` from the odometry pose `pose`, slowed or stopped by `obstacles`
/// ahead. Non-finite inputs give a zero command (stop) rather than a NaN one.
pub fn command(obstacles: &Obstacles, goal: &Goal, pose: &OdomPose, gains: &Gains) -> Velocity {
    let dx = goal.x - pose.x;
    let dy = goal.y - pose.y;
    let distance = dx.hypot(dy);
    let heading_error = wrap_angle(dy.atan2(dx) - yaw(&pose.orientation));
    if !distance.is_finite() || !heading_error.is_finite() || distance < gains.goal_tolerance_m {
        return Velocity::default();
    }
    let angular =
        (gains.k_angular_per_s * heading_error).clamp(-gains.max_angular_rps, gains.max_angular_rps);
    // Drive forward only as far as the robot faces the goal: turn in place when it faces away.
    let mut linear =
        (gains.k_linear_per_s * distance).min(gains.max_linear_mps) * heading_error.cos().max(0.0);
    if let Some(ahead) = nearest_ahead_m(obstacles) {
        let span = gains.slow_distance_m - gains.stop_distance_m;
        let scale = if span > 0.0 {
            ((ahead - gains.stop_distance_m) / span).clamp(0.0, 1.0)
        } else {
            1.0
        };
        linear *= if ahead <= gains.stop_distance_m {
            0.0
        } else {
            scale
        };
    }
    Velocity {
        linear_x: linear,
        angular_z: angular,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn goal_at(x: f64, y: f64) -> Goal {
        Goal { x, y }
    }

    fn odom_at(x: f64, y: f64) -> OdomPose {
        OdomPose {
            x,
            y,
            orientation: [0.0, 0.0, 0.0, 1.0],
        }
    }

    fn obstacle(x: f64) -> Obstacles {
        Obstacles {
            xs: vec![x],
            ..Obstacles::default()
        }
    }

    #[test]
    fn drives_toward_a_goal_ahead_at_the_limit() {
        let twist = command(
            &Obstacles::default(),
            &goal_at(5.0, 0.0),
            &odom_at(0.0, 0.0),
            &Gains::default(),
        );
        assert_eq!(twist.linear_x, 0.5);
        assert_eq!(twist.angular_z, 0.0);
    }

    #[test]
    fn turns_in_place_toward_a_goal_behind() {
        let twist = command(
            &Obstacles::default(),
            &goal_at(-2.0, 0.1),
            &odom_at(0.0, 0.0),
            &Gains::default(),
        );
        assert_eq!(twist.linear_x, 0.0);
        assert_eq!(twist.angular_z, 1.0);
    }

    #[test]
    fn obstacles_ahead_slow_then_stop_but_behind_do_not() {
        let g = Gains::default();
        let (goal, odom) = (goal_at(5.0, 0.0), odom_at(0.0, 0.0));
        assert_eq!(command(&obstacle(0.3), &goal, &odom, &g).linear_x, 0.0);
        let slowed = command(&obstacle(0.7), &goal, &odom, &g).linear_x;
        assert!((slowed - 0.25).abs() < 1e-12, "{slowed}");
        assert_eq!(command(&obstacle(-0.2), &goal, &odom, &g).linear_x, 0.5);
    }

    #[test]
    fn arrived_or_nan_means_stop() {
        let g = Gains::default();
        assert_eq!(
            command(&Obstacles::default(), &goal_at(0.01, 0.0), &odom_at(0.0, 0.0), &g),
            Velocity::default()
        );
        assert_eq!(
            command(
                &Obstacles::default(),
                &goal_at(f64::NAN, 0.0),
                &odom_at(0.0, 0.0),
                &g
            ),
            Velocity::default()
        );
    }

    #[test]
    fn gains_must_be_finite_and_non_negative() {
        assert_eq!(Gains::default().check(), Ok(()));
        for spoil in [f64::NAN, f64::INFINITY, -1.0] {
            let gains = Gains {
                max_angular_rps: spoil,
                ..Gains::default()
            };
            assert_eq!(gains.check().unwrap_err().field, "max_angular_rps", "{spoil}");
        }
    }

    #[test]
    fn limits_replace_the_defaults_and_are_checked() {
        let gains = gains_with_limits(0.3, 0.7, 0.2).unwrap();
        assert_eq!((gains.max_linear_mps, gains.max_angular_rps), (0.3, 0.7));
        assert_eq!((gains.stop_distance_m, gains.k_linear_per_s), (0.2, 0.5));
        let err = gains_with_limits(0.3, 0.7, f64::NAN).unwrap_err();
        assert_eq!(err.field, "stop_distance_m");
    }

    #[test]
    fn yaw_and_wrap() {
        let q = [0.0, 0.0, (0.5f64).sin(), (0.5f64).cos()];
        assert!((yaw(&q) - 1.0).abs() < 1e-12);
        assert!((wrap_angle(3.0 * std::f64::consts::PI) - std::f64::consts::PI).abs() < 1e-12);
        assert!((wrap_angle(-0.5) + 0.5).abs() < 1e-12);
    }
}
