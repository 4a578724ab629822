//! A joint trajectory as a `control_msgs/FollowJointTrajectory` goal or a `joint_trajectory` message gives
//! it, checked the way a joint_trajectory_controller checks one, with its standard error codes and a message
//! naming the joint and the point at fault.
//!
//! What is checked (each with the code a FollowJointTrajectory result carries):
//! - the joint names: none, a duplicate, one the controller does not have, or a controller joint missing
//!   (`INVALID_JOINTS`);
//! - the points: none, a size that does not match the joints, a number that is not finite, effort (this
//!   controller commands positions), times that do not increase strictly, a last point still moving
//!   (`INVALID_GOAL`);
//! - a header stamp (not 0) after which the whole trajectory is already over (`OLD_HEADER_TIMESTAMP`).
//!
//! Whether the motion fits the joint limits is [`crate::follow`]'s job: it needs the state the motion
//! starts from.

/// A FollowJointTrajectory result code (`control_msgs/action/FollowJointTrajectory` Result constants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    Successful = 0,
    InvalidGoal = -1,
    InvalidJoints = -2,
    OldHeaderTimestamp = -3,
    PathToleranceViolated = -4,
    GoalToleranceViolated = -5,
}

impl ErrorCode {
    /// The value of the result's `error_code`.
    pub fn value(self) -> i32 {
        self as i32
    }

    /// The constant's name in the action definition.
    pub fn name(self) -> &'static str {
        match self {
            Self::Successful => "SUCCESSFUL",
            Self::InvalidGoal => "INVALID_GOAL",
            Self::InvalidJoints => "INVALID_JOINTS",
            Self::OldHeaderTimestamp => "OLD_HEADER_TIMESTAMP",
            Self::PathToleranceViolated => "PATH_TOLERANCE_VIOLATED",
            Self::GoalToleranceViolated => "GOAL_TOLERANCE_VIOLATED",
        }
    }
}

/// Why a trajectory goal ended without success: its result code and `error_string`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", code.name())]
pub struct GoalError {
    pub code: ErrorCode,
    pub message: String,
}

impl GoalError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

fn invalid(message: String) -> GoalError {
    GoalError::new(ErrorCode::InvalidGoal, message)
}

/// One point of a trajectory as received (`trajectory_msgs/JointTrajectoryPoint`, in the message's joint
/// order). Empty velocities / accelerations: not given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrajectoryPoint {
    pub positions: Vec<f64>,
    pub velocities: Vec<f64>,
    pub accelerations: Vec<f64>,
    pub effort: Vec<f64>,
    pub time_from_start_secs: f64,
}

/// A trajectory as received (`trajectory_msgs/JointTrajectory`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JointTrajectory {
    /// The header stamp in seconds; 0: start on receipt.
    pub stamp_secs: f64,
    pub joint_names: Vec<String>,
    pub points: Vec<TrajectoryPoint>,
}

/// One checked point, in the controller's joint order.
#[derive(Debug, Clone, PartialEq)]
pub struct Knot {
    pub time_secs: f64,
    pub positions: Vec<f64>,
    /// `None`: not given (estimated when the trajectory is sampled).
    pub velocities: Option<Vec<f64>>,
    pub accelerations: Option<Vec<f64>>,
}

/// A trajectory that passed every check, in the controller's joint order.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub joints: Vec<String>,
    pub knots: Vec<Knot>,
}

/// The most points a trajectory may have (a bound on the memory one message can take).
pub const MAX_POINTS: usize = 100_000;

/// A last point slower than this counts as at rest (rad/s or m/s; a joint_trajectory_controller uses
/// single-precision epsilon).
const AT_REST: f64 = f32::EPSILON as f64;

/// Check `trajectory` against the controller's joints at time `now_secs` (the stamp's clock).
pub fn check(
    trajectory: &JointTrajectory,
    controller_joints: &[String],
    now_secs: f64,
) -> Result<Checked, GoalError> {
    let order = joint_order(&trajectory.joint_names, controller_joints)?;
    let points = &trajectory.points;
    let last = points
        .last()
        .ok_or_else(|| invalid("the trajectory has no points".into()))?;
    if points.len() > MAX_POINTS {
        return Err(invalid(format!(
            "the trajectory has {} points, more than the {MAX_POINTS} this controller takes",
            points.len()
        )));
    }
    let mut knots = Vec::with_capacity(points.len());
    let mut previous: Option<f64> = None;
    for (k, point) in points.iter().enumerate() {
        let t = point.time_from_start_secs;
        if !t.is_finite() || t < 0.0 {
            return Err(invalid(format!(
                "point {k}: time_from_start {t} s is not a time from the start"
            )));
        }
        if let Some(before) = previous.filter(|before| t <= *before) {
            return Err(invalid(format!(
                "point {k}: time_from_start {t} s is not after point {}'s {before} s (times must increase strictly)",
                k - 1
            )));
        }
        previous = Some(t);
        knots.push(knot(k, point, &trajectory.joint_names, &order)?);
    }
    if let Some(i) = last.velocities.iter().position(|v| v.abs() > AT_REST) {
        return Err(invalid(format!(
            "point {}: joint `{}` ends moving at {} (the last point must be at rest)",
            points.len() - 1,
            trajectory.joint_names[i],
            last.velocities[i]
        )));
    }
    let end_secs = trajectory.stamp_secs + last.time_from_start_secs;
    if trajectory.stamp_secs != 0.0 && end_secs < now_secs {
        return Err(GoalError::new(
            ErrorCode::OldHeaderTimestamp,
            format!(
                "the trajectory stamped {:.6} s ends at {end_secs:.6} s, {:.6} s before now ({now_secs:.6} s)",
                trajectory.stamp_secs,
                now_secs - end_secs
            ),
        ));
    }
    Ok(Checked {
        joints: controller_joints.to_vec(),
        knots,
    })
}

/// Point `k` in the controller's joint order (`order`: each controller joint's column in the message).
fn knot(k: usize, point: &TrajectoryPoint, names: &[String], order: &[usize]) -> Result<Knot, GoalError> {
    let n = order.len();
    if !point.effort.is_empty() {
        return Err(invalid(format!(
            "point {k}: effort is given, but this controller commands positions only"
        )));
    }
    let field = |name: &str, values: &[f64], required: bool| -> Result<Option<Vec<f64>>, GoalError> {
        if values.is_empty() && !required {
            return Ok(None);
        }
        if values.len() != n {
            return Err(invalid(format!(
                "point {k}: {} {name} for {n} joints",
                values.len()
            )));
        }
        if let Some(i) = values.iter().position(|x| !x.is_finite()) {
            return Err(invalid(format!(
                "point {k}: joint `{}` {name} is {}",
                names[i], values[i]
            )));
        }
        Ok(Some(order.iter().map(|&i| values[i]).collect()))
    };
    Ok(Knot {
        time_secs: point.time_from_start_secs,
        positions: field("positions", &point.positions, true)?.unwrap_or_default(),
        velocities: field("velocities", &point.velocities, false)?,
        accelerations: field("accelerations", &point.accelerations, false)?,
    })
}

/// For each controller joint, its column in the message.
fn joint_order(names: &[String], controller_joints: &[String]) -> Result<Vec<usize>, GoalError> {
    let bad = |m: String| GoalError::new(ErrorCode::InvalidJoints, m);
    if names.is_empty() {
        return Err(bad("the trajectory names no joints".into()));
    }
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(bad(format!("joint `{name}` is named twice")));
        }
        if !controller_joints.contains(name) {
            return Err(bad(format!(
                "joint `{name}` is not one of the controller's joints ({})",
                controller_joints.join(", ")
            )));
        }
    }
    controller_joints
        .iter()
        .map(|joint| {
            names.iter().position(|n| n == joint).ok_or_else(|| {
                bad(format!(
                    "joint `{joint}` is missing: a goal gives every controller joint ({})",
                    controller_joints.join(", ")
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn joints() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    fn point(positions: &[f64], t: f64) -> TrajectoryPoint {
        TrajectoryPoint {
            positions: positions.to_vec(),
            time_from_start_secs: t,
            ..Default::default()
        }
    }

    fn trajectory(names: &[&str], points: Vec<TrajectoryPoint>) -> JointTrajectory {
        JointTrajectory {
            stamp_secs: 0.0,
            joint_names: names.iter().map(|s| (*s).to_owned()).collect(),
            points,
        }
    }

    #[test]
    fn joints_in_any_order_come_back_in_the_controllers_order() {
        let t = trajectory(
            &["b", "a"],
            vec![point(&[2.0, 1.0], 0.5), point(&[4.0, 3.0], 1.0)],
        );
        let checked = check(&t, &joints(), 0.0).unwrap();
        assert_eq!(checked.knots[0].positions, vec![1.0, 2.0]);
        assert_eq!(checked.knots[1].positions, vec![3.0, 4.0]);
    }

    #[test]
    fn each_bad_trajectory_gets_its_code_and_names_the_joint_or_point() {
        let cases = [
            (
                trajectory(&["a", "c"], vec![point(&[0.0, 0.0], 1.0)]),
                ErrorCode::InvalidJoints,
                "joint `c`",
            ),
            (
                trajectory(&["a"], vec![point(&[0.0], 1.0)]),
                ErrorCode::InvalidJoints,
                "joint `b` is missing",
            ),
            (
                trajectory(
                    &["a", "b"],
                    vec![point(&[0.0, 0.0], 1.0), point(&[0.0, 0.0], 1.0)],
                ),
                ErrorCode::InvalidGoal,
                "point 1: time_from_start 1 s is not after point 0's 1 s",
            ),
            (
                trajectory(&["a", "b"], vec![point(&[0.0], 1.0)]),
                ErrorCode::InvalidGoal,
                "point 0: 1 positions for 2 joints",
            ),
            (
                trajectory(&["a", "b"], vec![point(&[0.0, f64::NAN], 1.0)]),
                ErrorCode::InvalidGoal,
                "joint `b` positions is NaN",
            ),
            (
                trajectory(&["a", "b"], vec![]),
                ErrorCode::InvalidGoal,
                "no points",
            ),
        ];
        for (t, code, words) in cases {
            let e = check(&t, &joints(), 0.0).unwrap_err();
            assert_eq!(e.code, code, "{e}");
            assert!(e.message.contains(words), "{e} lacks {words}");
        }
        let mut moving = trajectory(&["a", "b"], vec![point(&[0.0, 0.0], 1.0)]);
        moving.points[0].velocities = vec![0.0, 0.5];
        let e = check(&moving, &joints(), 0.0).unwrap_err();
        assert!(e.message.contains("joint `b` ends moving"), "{e}");
    }

    #[test]
    fn a_trajectory_over_before_now_is_an_old_header_timestamp() {
        let mut t = trajectory(&["a", "b"], vec![point(&[0.0, 0.0], 1.0)]);
        t.stamp_secs = 100.0;
        assert!(check(&t, &joints(), 100.5).is_ok());
        let e = check(&t, &joints(), 102.0).unwrap_err();
        assert_eq!(e.code, ErrorCode::OldHeaderTimestamp);
        assert_eq!(e.code.value(), -3);
    }
}
