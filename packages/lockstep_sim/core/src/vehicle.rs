//! Differential-drive kinematics, shared with the calibrator's model: track width, wheel radius,
//! command-to-motion delay and a centripetal compensation factor.
//!
//! The simulator keeps two parameter sets. A base controller converts `cmd_vel` into wheel speeds with the
//! NOMINAL parameters it believes in, and integrates odometry from the wheel encoders with the same nominal
//! parameters; the ground moves the vehicle according to the TRUE parameters. With a true wheel radius larger
//! than the nominal one the vehicle travels farther than odometry says; with a true track wider than the
//! nominal one it turns less than commanded and odometry over-reports the rotation.

use crate::error::{Error, Result};

/// Parameters of a differential drive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiffDriveParams {
    /// Distance between the two wheels' contact points (m).
    pub track_width_m: f64,
    /// Wheel radius (m).
    pub wheel_radius_m: f64,
    /// Time from a command to the motion it causes (s).
    pub delay_secs: f64,
    /// Centripetal compensation factor beta (s^2/m): in a turn the yaw rate the ground delivers is
    /// `w / (1 + beta * |v * w|)` (the faster the turn, the more the vehicle slides outward). 0 = no slip;
    /// straight driving (w = 0) is unaffected, as in the calibrator's model.
    pub centripetal_factor: f64,
}

impl Default for DiffDriveParams {
    fn default() -> Self {
        DiffDriveParams {
            track_width_m: 0.4,
            wheel_radius_m: 0.05,
            delay_secs: 0.0,
            centripetal_factor: 0.0,
        }
    }
}

impl DiffDriveParams {
    /// Checks that the values describe a physical vehicle; `which` prefixes the field names in the error.
    pub fn validate(&self, which: &'static str) -> Result<()> {
        let check = |name: &'static str, value: f64, positive: bool| {
            if !value.is_finite() || value < 0.0 || (positive && value == 0.0) {
                Err(Error::BadParameter {
                    name,
                    reason: format!(
                        "is {value} for the {which} vehicle; it must be a finite number {}",
                        if positive { "> 0" } else { ">= 0" }
                    ),
                })
            } else {
                Ok(())
            }
        };
        check("track_width_m", self.track_width_m, true)?;
        check("wheel_radius_m", self.wheel_radius_m, true)?;
        check("delay_secs", self.delay_secs, false)?;
        check("centripetal_factor", self.centripetal_factor, false)
    }

    /// Wheel angular speeds (left, right) in rad/s that realise `(v, w)` under these parameters: what a
    /// diff-drive controller computes from `cmd_vel`.
    pub fn wheel_speeds(&self, v_mps: f64, w_radps: f64) -> (f64, f64) {
        let half = 0.5 * self.track_width_m * w_radps;
        (
            (v_mps - half) / self.wheel_radius_m,
            (v_mps + half) / self.wheel_radius_m,
        )
    }

    /// Body twist `(v, w)` produced by wheel angular speeds under these parameters, before slip.
    pub fn body_twist(&self, left_radps: f64, right_radps: f64) -> (f64, f64) {
        let l = left_radps * self.wheel_radius_m;
        let r = right_radps * self.wheel_radius_m;
        (0.5 * (l + r), (r - l) / self.track_width_m)
    }

    /// One value by its parameter name (`track_width_m`, `wheel_radius_m`, `delay_secs`; any other name:
    /// `centripetal_factor`): what a refused run-time set writes back.
    pub fn field(&self, name: &str) -> f64 {
        match name {
            "track_width_m" => self.track_width_m,
            "wheel_radius_m" => self.wheel_radius_m,
            "delay_secs" => self.delay_secs,
            _ => self.centripetal_factor,
        }
    }

    /// The yaw rate the ground delivers for a kinematic `(v, w)`, after centripetal slip.
    pub fn slipped_yaw_rate(&self, v_mps: f64, w_radps: f64) -> f64 {
        w_radps / (1.0 + self.centripetal_factor * (v_mps * w_radps).abs())
    }
}

/// A planar pose.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pose2D {
    /// x (m).
    pub x_m: f64,
    /// y (m).
    pub y_m: f64,
    /// Heading (rad), counter-clockwise from +x, in (-pi, pi].
    pub yaw_rad: f64,
}

impl Pose2D {
    /// Moves the pose along an arc with body twist `(v, w)` for `dt` seconds (exact for constant twist).
    pub fn advanced(&self, v_mps: f64, w_radps: f64, dt_secs: f64) -> Pose2D {
        let dyaw = w_radps * dt_secs;
        let (dx, dy) = if dyaw.abs() < 1e-9 {
            let mid = self.yaw_rad + 0.5 * dyaw;
            (v_mps * dt_secs * mid.cos(), v_mps * dt_secs * mid.sin())
        } else {
            let radius = v_mps / w_radps;
            (
                radius * ((self.yaw_rad + dyaw).sin() - self.yaw_rad.sin()),
                -radius * ((self.yaw_rad + dyaw).cos() - self.yaw_rad.cos()),
            )
        };
        Pose2D {
            x_m: self.x_m + dx,
            y_m: self.y_m + dy,
            yaw_rad: normalize_angle(self.yaw_rad + dyaw),
        }
    }

    /// The pose `local`, given in this pose's frame, in the frame this pose is given in: e.g. the start pose
    /// composed with the odometry pose is where dead reckoning from the known start puts the vehicle.
    pub fn compose(&self, local: &Pose2D) -> Pose2D {
        let (sin, cos) = self.yaw_rad.sin_cos();
        Pose2D {
            x_m: self.x_m + cos * local.x_m - sin * local.y_m,
            y_m: self.y_m + sin * local.x_m + cos * local.y_m,
            yaw_rad: normalize_angle(self.yaw_rad + local.yaw_rad),
        }
    }

    /// Distance to another pose's position (m).
    pub fn distance_to(&self, other: &Pose2D) -> f64 {
        (self.x_m - other.x_m).hypot(self.y_m - other.y_m)
    }
}

/// An angle wrapped into (-pi, pi].
pub fn normalize_angle(a: f64) -> f64 {
    let two_pi = std::f64::consts::TAU;
    let mut r = a.rem_euclid(two_pi);
    if r > std::f64::consts::PI {
        r -= two_pi;
    }
    r
}

/// Wheel encoder state: accumulated angles and current angular speeds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct WheelState {
    /// Left wheel angle (rad), accumulated.
    pub left_position_rad: f64,
    /// Right wheel angle (rad), accumulated.
    pub right_position_rad: f64,
    /// Left wheel angular speed (rad/s).
    pub left_velocity_radps: f64,
    /// Right wheel angular speed (rad/s).
    pub right_velocity_radps: f64,
}

/// Odometry as a base controller computes it: wheel angle increments times the NOMINAL radius, heading
/// change over the NOMINAL track (theta = (r - l) / track_width, straight when |r - l| < 1e-6),
/// slipped by the NOMINAL centripetal factor (0 by default: no correction).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Odometry {
    /// Integrated pose in the `odom` frame (starts at the origin).
    pub pose: Pose2D,
    /// Linear speed estimate (m/s).
    pub v_mps: f64,
    /// Angular speed estimate (rad/s).
    pub w_radps: f64,
    /// Distance travelled, summed over |increments| (m).
    pub distance_m: f64,
}

impl Odometry {
    /// Integrates one encoder increment.
    pub fn integrate(&mut self, nominal: &DiffDriveParams, d_left_rad: f64, d_right_rad: f64, dt_secs: f64) {
        let l = d_left_rad * nominal.wheel_radius_m;
        let r = d_right_rad * nominal.wheel_radius_m;
        let ds = 0.5 * (l + r);
        let mut dtheta = if (r - l).abs() < 1e-6 {
            0.0
        } else {
            (r - l) / nominal.track_width_m
        };
        if dt_secs > 0.0 {
            // A base that knows the centripetal factor (a calibrated one) corrects its heading for the slip.
            dtheta = nominal.slipped_yaw_rate(ds / dt_secs, dtheta / dt_secs) * dt_secs;
        }
        let mid = self.pose.yaw_rad + 0.5 * dtheta;
        self.pose.x_m += ds * mid.cos();
        self.pose.y_m += ds * mid.sin();
        self.pose.yaw_rad = normalize_angle(self.pose.yaw_rad + dtheta);
        self.distance_m += ds.abs();
        if dt_secs > 0.0 {
            self.v_mps = ds / dt_secs;
            self.w_radps = dtheta / dt_secs;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composing_turns_the_local_pose_into_the_frame() {
        let start = Pose2D {
            x_m: 1.0,
            y_m: 2.0,
            yaw_rad: std::f64::consts::FRAC_PI_2,
        };
        let local = Pose2D {
            x_m: 1.0,
            y_m: 0.0,
            yaw_rad: std::f64::consts::PI,
        };
        let p = start.compose(&local);
        assert!((p.x_m - 1.0).abs() < 1e-12 && (p.y_m - 3.0).abs() < 1e-12);
        assert!((p.yaw_rad + std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    }

    #[test]
    fn a_field_is_found_by_its_parameter_name() {
        let d = DiffDriveParams::default();
        assert_eq!(d.field("track_width_m"), 0.4);
        assert_eq!(d.field("wheel_radius_m"), 0.05);
        assert_eq!(d.field("delay_secs"), 0.0);
        assert_eq!(d.field("centripetal_factor"), 0.0);
    }
}
