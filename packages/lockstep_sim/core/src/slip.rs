//! How the ground turns wheel rotation into motion of the TRUE vehicle: the slip model.
//!
//! Two models of different form, so that a calibrator written from one of them can be benchmarked against a
//! truth it was not written from:
//!
//! - [`SlipModel::Centripetal`] (the default): the calibrator's own model. The yaw rate the ground delivers is
//!   `w / (1 + beta * |v * w|)` with beta = the true vehicle's `centripetal_factor`; the vehicle moves along
//!   its heading.
//! - [`SlipModel::Lateral`]: the yaw rate is the kinematic one (the true `centripetal_factor` is not used),
//!   but the body slides sideways in turns, with a lateral velocity `v_y = -lateral_slip_s * v * w` (outward
//!   of the turn), and each wheel slips while it speeds up or brakes: its ground speed is its surface speed
//!   times `1 - longitudinal_slip_s2pm * a`, with `a` the wheel's surface acceleration over the step, the
//!   factor kept within [0.5, 1.5].
//!
//! Either way the wheel encoders (and so `joint_states` and odometry) count wheel rotation only: the slip
//! shows in the true pose (ground truth, SLAM), never in the encoders.

use crate::error::{check_finite, Error, Result};
use crate::vehicle::{normalize_angle, DiffDriveParams, Pose2D};

/// Bounds of the factor a wheel's ground speed is its surface speed times (lateral model): a wheel neither
/// loses more than half its speed to spinning nor gains more than half of it from skidding.
const LONGITUDINAL_FACTOR_RANGE: (f64, f64) = (0.5, 1.5);

/// How the ground moves the TRUE vehicle for given wheel speeds (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum SlipModel {
    /// Yaw rate `w / (1 + beta * |v * w|)`, beta = the true vehicle's `centripetal_factor`; no sideways
    /// motion, no wheel slip.
    #[default]
    Centripetal,
    /// Kinematic yaw rate (the true `centripetal_factor` is not used), sideways sliding in turns and wheel
    /// slip while speeding up or braking.
    Lateral {
        /// k_lat (s): the lateral body velocity is `-k_lat * v * w` (m/s), outward of the turn. 0 = no
        /// sliding.
        lateral_slip_s: f64,
        /// k_long (s^2/m): a wheel's ground speed is its surface speed times `1 - k_long * a`, `a` its
        /// surface acceleration (m/s^2), the factor kept within [0.5, 1.5]. 0 = no wheel slip.
        longitudinal_slip_s2pm: f64,
    },
}

impl SlipModel {
    /// The model names, as the `slip_model` parameter takes them.
    pub const NAMES: &'static [&'static str] = &["centripetal", "lateral"];

    /// The model's name (one of [`SlipModel::NAMES`]).
    pub fn name(&self) -> &'static str {
        match self {
            SlipModel::Centripetal => "centripetal",
            SlipModel::Lateral { .. } => "lateral",
        }
    }

    /// The model named `name` (`centripetal` or `lateral`), with the lateral model's coefficients. Both
    /// coefficients are checked whichever model is named, so a bad value is refused even while it does not
    /// act. An unknown name, or a coefficient that is not a finite number >= 0: an error naming the parameter.
    pub fn from_parameters(
        name: &str,
        lateral_slip_s: f64,
        longitudinal_slip_s2pm: f64,
    ) -> Result<SlipModel> {
        check_finite("lateral_slip_s", lateral_slip_s, false)?;
        check_finite("longitudinal_slip_s2pm", longitudinal_slip_s2pm, false)?;
        match name.trim() {
            "centripetal" => Ok(SlipModel::Centripetal),
            "lateral" => Ok(SlipModel::Lateral {
                lateral_slip_s,
                longitudinal_slip_s2pm,
            }),
            other => Err(Error::BadParameter {
                name: "slip_model",
                reason: format!(
                    "is `{other}`; expected one of {}",
                    SlipModel::NAMES
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
        }
    }

    /// Checks the coefficients: finite and >= 0; the error names the parameter.
    pub fn validate(&self) -> Result<()> {
        match *self {
            SlipModel::Centripetal => Ok(()),
            SlipModel::Lateral {
                lateral_slip_s,
                longitudinal_slip_s2pm,
            } => {
                check_finite("lateral_slip_s", lateral_slip_s, false)?;
                check_finite("longitudinal_slip_s2pm", longitudinal_slip_s2pm, false)
            }
        }
    }
}

/// Where the ground takes the vehicle in one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct GroundMotion {
    /// The pose after the step.
    pub pose: Pose2D,
    /// Speed along the body's x axis (m/s) and yaw rate (rad/s) over the step.
    pub twist: (f64, f64),
}

/// Moves the TRUE vehicle from `pose` for `dt_secs` with wheel angular speeds `wheels` (left, right; rad/s),
/// which were `previous` one step before (the lateral model reads the wheels' acceleration from the change).
pub(crate) fn ground_motion(
    model: &SlipModel,
    vehicle: &DiffDriveParams,
    pose: &Pose2D,
    previous: (f64, f64),
    wheels: (f64, f64),
    dt_secs: f64,
) -> GroundMotion {
    match *model {
        SlipModel::Centripetal => {
            let (v, w_kinematic) = vehicle.body_twist(wheels.0, wheels.1);
            let w = vehicle.slipped_yaw_rate(v, w_kinematic);
            GroundMotion {
                pose: pose.advanced(v, w, dt_secs),
                twist: (v, w),
            }
        }
        SlipModel::Lateral {
            lateral_slip_s,
            longitudinal_slip_s2pm,
        } => {
            let r = vehicle.wheel_radius_m;
            // Each wheel's ground speed: its surface speed, less while it spins up, more while it skids.
            let ground_speed = |before: f64, now: f64| {
                let accel = (now - before) * r / dt_secs;
                let (low, high) = LONGITUDINAL_FACTOR_RANGE;
                now * r * (1.0 - longitudinal_slip_s2pm * accel).clamp(low, high)
            };
            let left = ground_speed(previous.0, wheels.0);
            let right = ground_speed(previous.1, wheels.1);
            let v = 0.5 * (left + right);
            let w = (right - left) / vehicle.track_width_m;
            let v_lateral = -lateral_slip_s * v * w;
            GroundMotion {
                pose: advanced_sliding(pose, v, v_lateral, w, dt_secs),
                twist: (v, w),
            }
        }
    }
}

/// Moves `pose` for `dt_secs` with a constant body twist: `vx` along the body's x axis, `vy` along its y axis
/// (m/s), yaw rate `w` (rad/s). Exact for a constant twist; midpoint heading for a very small turn.
fn advanced_sliding(pose: &Pose2D, vx: f64, vy: f64, w: f64, dt_secs: f64) -> Pose2D {
    let dyaw = w * dt_secs;
    let (dx, dy) = if dyaw.abs() < 1e-9 {
        let (sin, cos) = (pose.yaw_rad + 0.5 * dyaw).sin_cos();
        ((vx * cos - vy * sin) * dt_secs, (vx * sin + vy * cos) * dt_secs)
    } else {
        // The body velocity rotated into the world frame, integrated over the turn.
        let (sin0, cos0) = pose.yaw_rad.sin_cos();
        let (sin1, cos1) = (pose.yaw_rad + dyaw).sin_cos();
        let (ds, dc) = (sin1 - sin0, cos1 - cos0);
        ((vx * ds + vy * dc) / w, (vy * ds - vx * dc) / w)
    };
    Pose2D {
        x_m: pose.x_m + dx,
        y_m: pose.y_m + dy,
        yaw_rad: normalize_angle(pose.yaw_rad + dyaw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sliding_with_no_lateral_velocity_is_the_plain_arc() {
        let start = Pose2D {
            x_m: 1.0,
            y_m: -2.0,
            yaw_rad: 0.7,
        };
        for (v, w) in [(0.5, 0.0), (0.5, 0.4), (-0.3, -1.2), (0.0, 0.9)] {
            let a = advanced_sliding(&start, v, 0.0, w, 0.1);
            let b = start.advanced(v, w, 0.1);
            assert!(
                a.distance_to(&b) < 1e-12 && (a.yaw_rad - b.yaw_rad).abs() < 1e-12,
                "{a:?} {b:?}"
            );
        }
    }

    #[test]
    fn sideways_velocity_moves_along_the_body_y_axis() {
        let start = Pose2D {
            x_m: 0.0,
            y_m: 0.0,
            yaw_rad: std::f64::consts::FRAC_PI_2,
        };
        // Facing +y, the body's +y axis points to -x.
        let p = advanced_sliding(&start, 0.0, 1.0, 0.0, 0.5);
        assert!((p.x_m + 0.5).abs() < 1e-12 && p.y_m.abs() < 1e-12, "{p:?}");
        // Turning, the small-turn and exact formulas agree where they meet.
        let near = advanced_sliding(&start, 0.4, 0.1, 1.1e-8, 1.0);
        let below = advanced_sliding(&start, 0.4, 0.1, 0.9e-8, 1.0);
        assert!(near.distance_to(&below) < 1e-6, "{near:?} {below:?}");
    }

    #[test]
    fn wheel_slip_factor_is_bounded() {
        let model = SlipModel::Lateral {
            lateral_slip_s: 0.0,
            longitudinal_slip_s2pm: 10.0,
        };
        let p = DiffDriveParams::default();
        let pose = Pose2D::default();
        let speed_up = ground_motion(&model, &p, &pose, (0.0, 0.0), (20.0, 20.0), 0.02);
        assert!((speed_up.twist.0 - 0.5 * 20.0 * p.wheel_radius_m).abs() < 1e-12);
        let brake = ground_motion(&model, &p, &pose, (20.0, 20.0), (10.0, 10.0), 0.02);
        assert!((brake.twist.0 - 1.5 * 10.0 * p.wheel_radius_m).abs() < 1e-12);
    }
}
