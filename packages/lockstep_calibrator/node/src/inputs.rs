//! Messages in: each is turned into a sample and pushed into the calibrator's history, which drops (and
//! counts) NaN/inf and out-of-order samples.

use lockstep_calibrator::{
    yaw_of_quaternion, CommandSample, OdomSample, Pose, PoseNoise, PoseSample, WheelSample,
};
use r2r::builtin_interfaces::msg::Time;
use r2r::geometry_msgs::msg::{Quaternion, Twist};
use r2r::nav_msgs::msg::Odometry;
use r2r::sensor_msgs::msg::JointState;

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

/// A wheel encoder sample from a JointState holding both wheel joints; else the joint missing, with the
/// names the message has (`Err` is the sentence to log).
pub fn wheels(m: &JointState, left: &str, right: &str) -> Result<WheelSample, String> {
    let find = |joint: &str| {
        let i = m.name.iter().position(|n| n == joint);
        match i.and_then(|i| m.position.get(i).map(|p| (i, *p))) {
            Some((i, position)) => Ok((position, m.velocity.get(i).copied())),
            None => Err(format!(
                "joint_states without {} of the wheel joint `{joint}` (names present: [{}]): dropped",
                if i.is_some() { "a position" } else { "the position" },
                m.name.join(", ")
            )),
        }
    };
    let (left_rad, left_radps) = find(left)?;
    let (right_rad, right_radps) = find(right)?;
    Ok(WheelSample {
        t_secs: secs(&m.header.stamp),
        left_rad,
        right_rad,
        left_radps,
        right_radps,
    })
}

/// The observed pose's noise from a PoseWithCovariance's row-major 6x6 covariance (x, y, z, roll, pitch,
/// yaw): the larger of the x and y variances and the yaw variance, when all three are finite and above zero;
/// else (all zero: unknown) `None`, and the configured noise applies.
pub fn pose_noise(covariance: &[f64]) -> Option<PoseNoise> {
    let (var_x, var_y, var_yaw) = (*covariance.first()?, *covariance.get(7)?, *covariance.get(35)?);
    [var_x, var_y, var_yaw]
        .iter()
        .all(|v| v.is_finite() && *v > 0.0)
        .then(|| PoseNoise {
            sigma_xy_m: var_x.max(var_y).sqrt(),
            sigma_yaw_rad: var_yaw.sqrt(),
        })
}

/// An observed pose at `t_secs`, with its own noise when known.
pub fn observed(t_secs: f64, p: &r2r::geometry_msgs::msg::Pose, noise: Option<PoseNoise>) -> PoseSample {
    PoseSample {
        t_secs,
        pose: pose(p),
        noise,
    }
}

/// A planar pose (heading from the quaternion).
pub fn pose(p: &r2r::geometry_msgs::msg::Pose) -> Pose {
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

    #[test]
    fn a_covariance_gives_the_pose_noise_and_zero_means_unknown() {
        let mut c = vec![0.0; 36];
        assert_eq!(pose_noise(&c), None, "all zero: unknown");
        c[0] = 0.0004;
        c[7] = 0.0009;
        c[35] = 0.0001;
        let n = pose_noise(&c).unwrap();
        assert!((n.sigma_xy_m - 0.03).abs() < 1e-12 && (n.sigma_yaw_rad - 0.01).abs() < 1e-12);
        for bad in [f64::NAN, f64::INFINITY, -0.0001, 0.0] {
            let mut c = c.clone();
            c[35] = bad;
            assert_eq!(pose_noise(&c), None, "{bad}");
        }
        assert_eq!(pose_noise(&c[..20]), None, "too short");
    }

    #[test]
    fn joint_states_give_wheel_samples_or_name_the_missing_joint() {
        let m = JointState {
            name: vec![
                "caster".into(),
                "right_wheel_joint".into(),
                "left_wheel_joint".into(),
            ],
            position: vec![9.0, 2.0, 1.0],
            velocity: vec![0.0, 4.0],
            ..JointState::default()
        };
        let w = wheels(&m, "left_wheel_joint", "right_wheel_joint").unwrap();
        assert_eq!(
            (w.left_rad, w.right_rad, w.left_radps, w.right_radps),
            (1.0, 2.0, None, Some(4.0))
        );
        let e = wheels(&m, "left_wheel", "right_wheel_joint").unwrap_err();
        assert_eq!(
            e,
            "joint_states without the position of the wheel joint `left_wheel` (names present: [caster, \
             right_wheel_joint, left_wheel_joint]): dropped"
        );
        let short = JointState {
            position: vec![9.0],
            ..m
        };
        let e = wheels(&short, "left_wheel_joint", "right_wheel_joint").unwrap_err();
        assert!(
            e.contains("without a position of the wheel joint `left_wheel_joint`"),
            "{e}"
        );
    }
}
