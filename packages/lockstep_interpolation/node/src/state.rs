//! The messages that show what the motion does: a FollowJointTrajectory goal's feedback and the
//! `~/controller_state` a joint_trajectory_controller publishes every cycle.

use lockstep_interpolation::session::Session;
use r2r::control_msgs::action::FollowJointTrajectory as Fjt;
use r2r::control_msgs::msg::JointTrajectoryControllerState;
use r2r::trajectory_msgs::msg::JointTrajectoryPoint;

use crate::engine::Active;

/// A trajectory point of `positions` with optional velocities and accelerations.
pub(crate) fn point(
    positions: Vec<f64>,
    velocities: Vec<f64>,
    accelerations: Vec<f64>,
    secs: f64,
) -> JointTrajectoryPoint {
    JointTrajectoryPoint {
        positions,
        velocities,
        accelerations,
        effort: Vec::new(),
        time_from_start: lockstep_ros::time::secs_to_duration(secs),
    }
}

/// Feedback of a trajectory goal: desired (the command, its velocity and acceleration), actual (the latest
/// measurement), error (desired - actual), in the controller's joint order.
pub(crate) fn fjt_feedback(
    session: &Session,
    joints: &[String],
    measured: Option<&[f64]>,
    stamp: r2r::builtin_interfaces::msg::Time,
    secs: f64,
) -> Fjt::Feedback {
    let main = session.main();
    let desired = main.position().to_vec();
    let actual = measured.map(<[f64]>::to_vec).unwrap_or_default();
    let error = if actual.is_empty() {
        Vec::new()
    } else {
        desired.iter().zip(&actual).map(|(d, m)| d - m).collect()
    };
    Fjt::Feedback {
        header: r2r::std_msgs::msg::Header {
            stamp,
            frame_id: String::new(),
        },
        joint_names: joints.to_vec(),
        desired: point(
            desired,
            main.velocity().to_vec(),
            main.acceleration().to_vec(),
            secs,
        ),
        actual: point(actual, Vec::new(), Vec::new(), secs),
        error: point(error, Vec::new(), Vec::new(), secs),
        ..Default::default()
    }
}

/// What a joint_trajectory_controller publishes on `~/controller_state` every cycle: reference (the command,
/// its velocity and acceleration), feedback (the joint states), error, output (the command sent) and the
/// speed scaling factor the motion runs at now.
pub(crate) fn controller_state(
    a: &Active,
    measured: Option<&[f64]>,
    velocity: Option<&[f64]>,
) -> JointTrajectoryControllerState {
    let main = a.session.main();
    let command = a.last_command.clone();
    let actual = measured.map(<[f64]>::to_vec).unwrap_or_default();
    let error = if actual.is_empty() {
        Vec::new()
    } else {
        command.iter().zip(&actual).map(|(c, m)| c - m).collect()
    };
    JointTrajectoryControllerState {
        header: r2r::std_msgs::msg::Header {
            stamp: wall_stamp(),
            frame_id: String::new(),
        },
        joint_names: a.joints.clone(),
        reference: point(
            command.clone(),
            main.velocity().to_vec(),
            main.acceleration().to_vec(),
            0.0,
        ),
        feedback: point(
            actual,
            velocity.map(<[f64]>::to_vec).unwrap_or_default(),
            Vec::new(),
            0.0,
        ),
        error: point(error, Vec::new(), Vec::new(), 0.0),
        output: point(command, Vec::new(), Vec::new(), 0.0),
        speed_scaling_factor: main.speed(),
        ..Default::default()
    }
}

/// The system time as a message stamp (ROS time of a node not on simulated time).
pub(crate) fn wall_stamp() -> r2r::builtin_interfaces::msg::Time {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    lockstep_ros::time::ns_to_time(ns)
}
