//! ROS messages to and from the plain values of `lockstep_examples::types`, field for field (no arithmetic,
//! so the outputs are bit for bit those of the computations), and the computations on whole messages, as the
//! nodes and `lockstep replay --in-process` run them.

use lockstep_examples::control::{self, Gains};
use lockstep_examples::fusion::{self, BASE_FRAME};
use lockstep_examples::mission::{self, MAP_FRAME};
use lockstep_examples::split;
use lockstep_examples::types::{Goal, Obstacles, OdomPose, RangeReading, Stamp, Velocity};
use r2r::builtin_interfaces::msg::Time;
use r2r::geometry_msgs::msg::{Point, Pose, PoseArray, PoseStamped, Quaternion, Twist, Vector3};
use r2r::nav_msgs::msg::Odometry;
use r2r::sensor_msgs::msg::Range;
use r2r::std_msgs::msg::{Float64, Header};

/// A message stamp as a plain one.
pub fn stamp(time: &Time) -> Stamp {
    Stamp {
        sec: time.sec,
        nanosec: time.nanosec,
    }
}

/// A plain stamp as a message one.
pub fn time(stamp: Stamp) -> Time {
    Time {
        sec: stamp.sec,
        nanosec: stamp.nanosec,
    }
}

/// The fields of a range message the computations read.
pub fn range_reading(range: &Range) -> RangeReading {
    RangeReading {
        stamp: stamp(&range.header.stamp),
        min_range: range.min_range,
        max_range: range.max_range,
        range: range.range,
    }
}

/// The obstacles' x positions (the controller reads nothing else).
pub fn obstacles(poses: &PoseArray) -> Obstacles {
    Obstacles {
        stamp: stamp(&poses.header.stamp),
        xs: poses.poses.iter().map(|p| p.position.x).collect(),
    }
}

fn unit_pose(x: f64, y: f64) -> Pose {
    Pose {
        position: Point { x, y, z: 0.0 },
        orientation: Quaternion {
            x: 0.0,
            y: 0.0,
            z: 0.0,
            w: 1.0,
        },
    }
}

/// Obstacles as m1 publishes them: on the x axis, unit orientation, in the base frame.
pub fn pose_array(obstacles: &Obstacles) -> PoseArray {
    PoseArray {
        header: Header {
            stamp: time(obstacles.stamp),
            frame_id: BASE_FRAME.to_owned(),
        },
        poses: obstacles.xs.iter().map(|&x| unit_pose(x, 0.0)).collect(),
    }
}

/// A goal message's position.
pub fn goal(goal: &PoseStamped) -> Goal {
    Goal {
        x: goal.pose.position.x,
        y: goal.pose.position.y,
    }
}

/// A goal as m3 publishes it: unit orientation, in the map frame, zero stamp.
pub fn pose_stamped(goal: &Goal) -> PoseStamped {
    PoseStamped {
        header: Header {
            frame_id: MAP_FRAME.to_owned(),
            ..Header::default()
        },
        pose: unit_pose(goal.x, goal.y),
    }
}

/// The pose of an odometry message.
pub fn odom_pose(odom: &Odometry) -> OdomPose {
    let p = &odom.pose.pose;
    OdomPose {
        x: p.position.x,
        y: p.position.y,
        orientation: [p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w],
    }
}

/// A velocity command as a twist, its other axes zero.
pub fn twist(v: &Velocity) -> Twist {
    Twist {
        linear: Vector3 {
            x: v.linear_x,
            y: 0.0,
            z: 0.0,
        },
        angular: Vector3 {
            x: 0.0,
            y: 0.0,
            z: v.angular_z,
        },
    }
}

/// m1's output from two range messages ([`fusion::fuse`]).
pub fn fuse(front: &Range, rear: &Range) -> PoseArray {
    pose_array(&fusion::fuse(&range_reading(front), &range_reading(rear)))
}

/// m2's output from its three input messages ([`control::command`]).
pub fn command(obstacles_in: &PoseArray, goal_in: &PoseStamped, odom: &Odometry, gains: &Gains) -> Twist {
    twist(&control::command(
        &obstacles(obstacles_in),
        &goal(goal_in),
        &odom_pose(odom),
        gains,
    ))
}

/// m3's output number `sequence` ([`mission::goal`]).
pub fn mission_goal(sequence: u32, hold: u32) -> PoseStamped {
    pose_stamped(&mission::goal(sequence, hold))
}

/// The split module's `range_clamped` output: the reading with its range clamped ([`split::clamped`]).
pub fn clamped(reading: &Range) -> Range {
    Range {
        range: split::clamped(&range_reading(reading)),
        ..reading.clone()
    }
}

/// The split module's `range_margin` output ([`split::margin`]).
pub fn margin(reading: &Range, stop_distance_m: f64) -> Float64 {
    Float64 {
        data: split::margin(&range_reading(reading), stop_distance_m),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use r2r::WrappedTypesupport as _;

    fn range(value: f32, sec: i32, nanosec: u32) -> Range {
        Range {
            header: Header {
                stamp: Time { sec, nanosec },
                frame_id: "s".into(),
            },
            min_range: 0.1,
            max_range: 5.0,
            range: value,
            ..Range::default()
        }
    }

    #[test]
    fn fused_output_is_the_expected_message_whatever_else_the_inputs_hold() {
        // Written out by hand: front obstacle first at +range, rear at -range, unit orientation, base frame,
        // the later stamp.
        let expected = PoseArray {
            header: Header {
                stamp: Time { sec: 7, nanosec: 5 },
                frame_id: "base_link".to_owned(),
            },
            poses: vec![unit_pose(1.25, 0.0), unit_pose(-2.5, 0.0)],
        };
        assert_eq!(fuse(&range(1.25, 7, 5), &range(2.5, 6, 999_999_999)), expected);
        // Fields the fusion must not read give the same message, byte for byte once serialized.
        let mut front = range(1.25, 7, 5);
        front.header.frame_id = "front_sonar".into();
        front.radiation_type = Range::INFRARED as u8;
        front.field_of_view = 1.0;
        let again = fuse(&front, &range(2.5, 6, 999_999_999));
        assert_eq!(
            again.to_serialized_bytes().unwrap(),
            expected.to_serialized_bytes().unwrap()
        );
    }

    #[test]
    fn goals_commands_and_split_outputs_keep_their_fields() {
        let g = mission_goal(4, 4);
        assert_eq!((g.pose.position.x, g.pose.position.y), (2.0, 2.0));
        assert_eq!((g.header.frame_id.as_str(), g.pose.orientation.w), ("map", 1.0));
        let mut odom = Odometry::default();
        odom.pose.pose.orientation.w = 1.0;
        let cmd = command(&PoseArray::default(), &g, &odom, &Gains::default());
        assert_eq!((cmd.linear.y, cmd.linear.z, cmd.angular.x), (0.0, 0.0, 0.0));
        let out = clamped(&range(7.0, 3, 0));
        assert_eq!((out.range, out.header.frame_id.as_str()), (5.0, "s"));
        assert_eq!(margin(&range(2.5, 0, 0), 0.5).data, 2.0);
    }
}
