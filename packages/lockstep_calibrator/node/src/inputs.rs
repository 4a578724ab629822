//! Messages in: each is turned into a sample and pushed into the calibrator's history, which drops (and
//! counts) NaN/inf and out-of-order samples.

use lockstep_calibrator::{yaw_of_quaternion, CommandSample, OdomSample, Pose, PoseSample};
use r2r::builtin_interfaces::msg::Time;
use r2r::geometry_msgs::msg::{Quaternion, Twist};
use r2r::nav_msgs::msg::Odometry;

/// A stamp in seconds.
pub fn secs(t: &Time) -> f64 {
    lockstep_ros::time::time_to_ns(t) as f64 * 1e-9
}

/// Heading of a quaternion; NaN when a component is not finite (the history drops it).
pub fn yaw(q: &Quaternion) -> f64 {
    yaw_of_quaternion(q.x, q.y, q.z, q.w)
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
        noise: None,
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
