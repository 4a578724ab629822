//! Messages in: each is turned into a sample and pushed into the calibrator's history, which drops (and
//! counts) NaN/inf and out-of-order samples.

use lockstep_calibrator::{CommandSample, OdomSample, Pose, PoseSample};
use r2r::builtin_interfaces::msg::Time;
use r2r::geometry_msgs::msg::{Quaternion, Twist};
use r2r::nav_msgs::msg::Odometry;

/// A stamp in seconds.
pub fn secs(t: &Time) -> f64 {
    f64::from(t.sec) + 1e-9 * f64::from(t.nanosec)
}

/// Heading of a quaternion (rotation about z); NaN when a component is not finite (the history drops it:
/// atan2 would turn an infinite component into a finite angle).
pub fn yaw(q: &Quaternion) -> f64 {
    if ![q.x, q.y, q.z, q.w].iter().all(|c| c.is_finite()) {
        return f64::NAN;
    }
    (2.0 * (q.w * q.z + q.x * q.y)).atan2(1.0 - 2.0 * (q.y * q.y + q.z * q.z))
}

/// A velocity command at `t_secs`.
pub fn command(t_secs: f64, twist: &Twist) -> CommandSample {
    CommandSample {
        t_secs,
        v_mps: twist.linear.x,
        w_radps: twist.angular.z,
    }
}

/// An odometry sample.
pub fn odometry(o: &Odometry) -> OdomSample {
    OdomSample {
        t_secs: secs(&o.header.stamp),
        pose: pose(&o.pose.pose),
        v_mps: o.twist.twist.linear.x,
        w_radps: o.twist.twist.angular.z,
    }
}

/// An observed pose at `t_secs`.
pub fn observed(t_secs: f64, p: &r2r::geometry_msgs::msg::Pose) -> PoseSample {
    PoseSample {
        t_secs,
        pose: pose(p),
    }
}

fn pose(p: &r2r::geometry_msgs::msg::Pose) -> Pose {
    Pose {
        x_m: p.position.x,
        y_m: p.position.y,
        yaw_rad: yaw(&p.orientation),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaw_of_a_rotation_about_z() {
        for a in [-3.0_f64, -1.0, 0.0, 0.5, 3.0] {
            let q = Quaternion {
                x: 0.0,
                y: 0.0,
                z: (0.5 * a).sin(),
                w: (0.5 * a).cos(),
            };
            assert!((yaw(&q) - a).abs() < 1e-12, "{a}");
        }
        let q = Quaternion {
            x: 0.0,
            y: 0.0,
            z: f64::NAN,
            w: 1.0,
        };
        assert!(yaw(&q).is_nan());
        let q = Quaternion {
            x: 0.0,
            y: 0.0,
            z: f64::INFINITY,
            w: 1.0,
        };
        assert!(
            yaw(&q).is_nan(),
            "atan2 alone gives {}",
            (2.0_f64 * f64::INFINITY).atan2(-f64::INFINITY)
        );
    }

    #[test]
    fn stamps_in_seconds() {
        assert_eq!(
            secs(&Time {
                sec: 3,
                nanosec: 500_000_000
            }),
            3.5
        );
    }
}
