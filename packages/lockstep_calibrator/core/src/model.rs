//! The differential-drive motion model: track width b, wheel radius, command-to-motion delay
//! T_d and a centripetal factor beta.
//!
//! With left and right wheel travel l and r: theta = (r - l) / b, x = (r + l)/2 * sin(theta)/theta,
//! y = (r + l)/2 * (1 - cos(theta))/theta, and when r and l are equal the motion is straight: x = (r + l)/2,
//! y = 0, theta = 0 (b and beta drop out, which is why straight driving cannot determine them).
//!
//! The centripetal slip is the simulator's:
//! the ground delivers the yaw rate `omega / (1 + beta * |v * omega|)`.

/// The four parameters of the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelParams {
    /// Distance between the wheels' contact points (m).
    pub track_width_m: f64,
    /// Wheel radius (m).
    pub wheel_radius_m: f64,
    /// Command-to-motion delay (s).
    pub delay_secs: f64,
    /// Centripetal factor beta (s^2/m in the reconstruction `omega / (1 + beta * |v * omega|)`).
    pub centripetal_factor: f64,
    /// Difference of the wheel radii as a fraction of the mean: the left wheel's radius is
    /// `wheel_radius_m * (1 - a)`, the right one's `wheel_radius_m * (1 + a)` (0: equal wheels). Unequal
    /// wheels make a base that drives its wheels at one speed curve.
    pub wheel_radius_asymmetry: f64,
    /// Sideways slide in turns (s): the body's lateral velocity is `-lateral_slip_s * v * omega`, outward of
    /// the turn (0: none). Many wheeled robots drift outward in fast arcs; a centripetal factor alone, which
    /// slows the turn, cannot explain a drift that leaves the heading as the wheels say.
    pub lateral_slip_s: f64,
}

impl Default for ModelParams {
    fn default() -> Self {
        Self {
            track_width_m: 0.4,
            wheel_radius_m: 0.05,
            delay_secs: 0.0,
            centripetal_factor: 0.0,
            wheel_radius_asymmetry: 0.0,
            lateral_slip_s: 0.0,
        }
    }
}

/// Wheel travel shorter than this difference is straight motion. Far below the 1e-6 m often used: over one
/// 10 ms odometry step a wheel-radius asymmetry of 0.1 % makes a difference of about 1e-5 m, and a wider
/// straight band would hide it (its effect on the heading would be exactly zero, so it could not be fitted).
pub const STRAIGHT_EPSILON_M: f64 = 1e-12;

/// Heading (rotation about z) of the quaternion `(x, y, z, w)`; NaN when a component is not finite, so that
/// the history drops the sample (atan2 alone turns an infinite component into a finite angle).
pub fn yaw_of_quaternion(x: f64, y: f64, z: f64, w: f64) -> f64 {
    if ![x, y, z, w].iter().all(|c| c.is_finite()) {
        return f64::NAN;
    }
    (2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z))
}

/// The arc: a body moving `distance_m` along its path while turning `theta_rad` ends at `(x, y)` in
/// its start frame; straight when `straight` (then theta is 0).
pub fn arc(distance_m: f64, theta_rad: f64, straight: bool) -> (f64, f64, f64) {
    if straight || theta_rad.abs() < 1e-12 {
        return (distance_m, 0.0, 0.0);
    }
    (
        distance_m * theta_rad.sin() / theta_rad,
        distance_m * (1.0 - theta_rad.cos()) / theta_rad,
        theta_rad,
    )
}

impl ModelParams {
    /// The left wheel's radius (m).
    pub fn left_radius_m(&self) -> f64 {
        self.wheel_radius_m * (1.0 - self.wheel_radius_asymmetry)
    }

    /// The right wheel's radius (m).
    pub fn right_radius_m(&self) -> f64 {
        self.wheel_radius_m * (1.0 + self.wheel_radius_asymmetry)
    }

    /// The yaw rate the ground delivers for a kinematic `(v, omega)` (the reconstruction).
    pub fn slipped_yaw_rate(&self, v_mps: f64, w_radps: f64) -> f64 {
        w_radps / (1.0 + self.centripetal_factor * (v_mps * w_radps).abs())
    }

    /// Motion in the start frame `(x, y, theta)` while the wheels turn `d_left_rad` and `d_right_rad`
    /// over `dt_secs`: wheel travel from the radius, heading change from the track width, slip from beta.
    pub fn motion(&self, d_left_rad: f64, d_right_rad: f64, dt_secs: f64) -> (f64, f64, f64) {
        let l = d_left_rad * self.left_radius_m();
        let r = d_right_rad * self.right_radius_m();
        let distance = 0.5 * (l + r);
        let straight = (r - l).abs() < STRAIGHT_EPSILON_M;
        let mut theta = if straight {
            0.0
        } else {
            (r - l) / self.track_width_m
        };
        if dt_secs > 0.0 && !straight {
            theta = self.slipped_yaw_rate(distance / dt_secs, theta / dt_secs) * dt_secs;
        }
        let (x, y, theta) = arc(distance, theta, straight);
        if self.lateral_slip_s != 0.0 && dt_secs > 0.0 {
            // v * omega * dt = distance * theta / dt, sideways in the step's middle heading.
            let slide = -self.lateral_slip_s * distance * theta / dt_secs;
            let (s, c) = (0.5 * theta).sin_cos();
            return (x - s * slide, y + c * slide, theta);
        }
        (x, y, theta)
    }

    /// The kinematic heading change behind an odometry heading change `theta_rad` that these parameters
    /// slipped (the inverse of [`Self::slipped_yaw_rate`] over `dt_secs`); unchanged for beta 0, and where
    /// the slip cannot be inverted.
    pub fn unslipped_rotation(&self, distance_m: f64, theta_rad: f64, dt_secs: f64) -> f64 {
        if self.centripetal_factor == 0.0 || dt_secs <= 0.0 {
            return theta_rad;
        }
        // w_odom = w / (1 + beta |v w|)  <=>  w = w_odom / (1 - beta |v w_odom|)
        let denominator =
            1.0 - self.centripetal_factor * (distance_m * theta_rad).abs() / (dt_secs * dt_secs);
        if denominator > 1e-6 {
            theta_rad / denominator
        } else {
            theta_rad
        }
    }

    /// Wheel angular speeds (left, right) a base controller with these parameters commands for `(v, w)`.
    pub fn wheel_speeds(&self, v_mps: f64, w_radps: f64) -> (f64, f64) {
        let half = 0.5 * self.track_width_m * w_radps;
        (
            (v_mps - half) / self.left_radius_m(),
            (v_mps + half) / self.right_radius_m(),
        )
    }

    /// Wheel angle increments (left, right) behind a body motion of `distance_m` and `theta_rad` as
    /// odometry computed it with these (nominal) parameters.
    pub fn wheel_angles(&self, distance_m: f64, theta_rad: f64) -> (f64, f64) {
        let half = 0.5 * self.track_width_m * theta_rad;
        (
            (distance_m - half) / self.left_radius_m(),
            (distance_m + half) / self.right_radius_m(),
        )
    }
}

/// A planar pose.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pose {
    /// x (m).
    pub x_m: f64,
    /// y (m).
    pub y_m: f64,
    /// Heading (rad).
    pub yaw_rad: f64,
}

impl Pose {
    /// The pose after a motion `(x, y, theta)` given in this pose's frame.
    pub fn compose(&self, (dx, dy, dtheta): (f64, f64, f64)) -> Pose {
        let (s, c) = self.yaw_rad.sin_cos();
        Pose {
            x_m: self.x_m + c * dx - s * dy,
            y_m: self.y_m + s * dx + c * dy,
            yaw_rad: self.yaw_rad + dtheta,
        }
    }
}

/// An angle wrapped into (-pi, pi].
pub fn wrap(a: f64) -> f64 {
    let r = a.rem_euclid(std::f64::consts::TAU);
    if r > std::f64::consts::PI {
        r - std::f64::consts::TAU
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_arc_and_its_straight_case() {
        // A quarter circle of radius 1: distance pi/2, theta pi/2 -> (1, 1).
        let (x, y, t) = arc(std::f64::consts::FRAC_PI_2, std::f64::consts::FRAC_PI_2, false);
        assert!(
            (x - 1.0).abs() < 1e-12
                && (y - 1.0).abs() < 1e-12
                && (t - std::f64::consts::FRAC_PI_2).abs() < 1e-12
        );
        assert_eq!(arc(2.0, 0.3, true), (2.0, 0.0, 0.0));
    }

    #[test]
    fn straight_motion_ignores_track_width_and_beta() {
        let a = ModelParams::default();
        let b = ModelParams {
            track_width_m: 0.9,
            centripetal_factor: 3.0,
            ..a
        };
        assert_eq!(a.motion(10.0, 10.0, 0.1), b.motion(10.0, 10.0, 0.1));
        assert_eq!(a.motion(10.0, 10.0, 0.1), (0.5, 0.0, 0.0));
    }

    #[test]
    fn beta_slows_the_turn_only_when_moving() {
        let p = ModelParams {
            centripetal_factor: 0.5,
            ..ModelParams::default()
        };
        // In place: no |v w|, no slip.
        let (_, _, spin) = p.motion(-2.0, 2.0, 1.0);
        assert!((spin - 0.5).abs() < 1e-12, "{spin}");
        let (_, _, turn) = p.motion(8.0, 12.0, 1.0);
        let no_slip = ModelParams::default().motion(8.0, 12.0, 1.0).2;
        assert!(turn < no_slip && turn > 0.0);
    }

    #[test]
    fn wheel_angles_invert_the_nominal_odometry() {
        let p = ModelParams::default();
        let (l, r) = p.wheel_angles(0.3, 0.2);
        let (x, _, t) = p.motion(l, r, 0.0);
        assert!((t - 0.2).abs() < 1e-12);
        assert!((x - 0.3 * (0.2_f64).sin() / 0.2).abs() < 1e-12);
        assert_eq!(p.wheel_speeds(0.5, 0.0), (10.0, 10.0));
    }

    #[test]
    fn odometry_slipped_by_beta_is_unslipped_back() {
        let p = ModelParams {
            centripetal_factor: 0.3,
            ..ModelParams::default()
        };
        let (dt, distance, kinematic) = (0.01, 0.006, 0.009);
        let slipped = p.slipped_yaw_rate(distance / dt, kinematic / dt) * dt;
        assert!(slipped < kinematic * 0.999);
        assert!((p.unslipped_rotation(distance, slipped, dt) - kinematic).abs() < 1e-15);
        assert_eq!(
            ModelParams::default().unslipped_rotation(distance, slipped, dt),
            slipped
        );
    }

    #[test]
    fn yaw_of_a_rotation_about_z_and_of_garbage() {
        for a in [-3.0_f64, -1.0, 0.0, 0.5, 3.0] {
            let yaw = yaw_of_quaternion(0.0, 0.0, (0.5 * a).sin(), (0.5 * a).cos());
            assert!((yaw - a).abs() < 1e-12, "{a}");
        }
        assert!(yaw_of_quaternion(0.0, 0.0, f64::NAN, 1.0).is_nan());
        assert!((2.0_f64 * f64::INFINITY).atan2(-f64::INFINITY).is_finite());
        assert!(yaw_of_quaternion(0.0, 0.0, f64::INFINITY, 1.0).is_nan());
    }
}
