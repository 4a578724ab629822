//! The input and output checks of `lockstep_examples::validate` applied to whole ROS messages: [`Validate`]
//! walks each message's numbers through the rules, naming each field by its path in the message.

pub use lockstep_examples::validate::*;

use r2r::geometry_msgs::msg::{
    Point, Pose, PoseArray, PoseStamped, PoseWithCovariance, Quaternion, Twist, TwistWithCovariance, Vector3,
};
use r2r::nav_msgs::msg::Odometry;
use r2r::sensor_msgs::msg::Range;

/// A message whose numbers can be checked before a module uses or publishes it.
pub trait Validate {
    /// `Ok` if every number in the message is usable (see `lockstep_examples::validate`).
    fn validate(&self) -> Result<(), Invalid>;
}

fn xyz(p: &Point) -> [f64; 3] {
    [p.x, p.y, p.z]
}

fn vector(v: &Vector3) -> [f64; 3] {
    [v.x, v.y, v.z]
}

fn xyzw(q: &Quaternion) -> [f64; 4] {
    [q.x, q.y, q.z, q.w]
}

fn pose(path: Path<'_>, p: &Pose) -> Result<(), Invalid> {
    point(path.field("position"), xyz(&p.position))?;
    quaternion(path.field("orientation"), xyzw(&p.orientation))
}

fn twist(path: Path<'_>, t: &Twist) -> Result<(), Invalid> {
    velocity(path.field("linear"), vector(&t.linear))?;
    velocity(path.field("angular"), vector(&t.angular))
}

fn pose_with_covariance(path: Path<'_>, p: &PoseWithCovariance) -> Result<(), Invalid> {
    pose(path.field("pose"), &p.pose)?;
    covariance(path.field("covariance"), &p.covariance)
}

fn twist_with_covariance(path: Path<'_>, t: &TwistWithCovariance) -> Result<(), Invalid> {
    twist(path.field("twist"), &t.twist)?;
    covariance(path.field("covariance"), &t.covariance)
}

impl Validate for Range {
    fn validate(&self) -> Result<(), Invalid> {
        range_message(&RangeNumbers {
            nanosec: self.header.stamp.nanosec,
            field_of_view: self.field_of_view,
            min_range: self.min_range,
            max_range: self.max_range,
            variance: self.variance,
            range: self.range,
        })
    }
}

impl Validate for PoseArray {
    fn validate(&self) -> Result<(), Invalid> {
        let root = Path::Root;
        header(root.field("header"), self.header.stamp.nanosec)?;
        let poses = root.field("poses");
        self.poses
            .iter()
            .enumerate()
            .try_for_each(|(i, p)| pose(poses.index(i), p))
    }
}

impl Validate for PoseStamped {
    fn validate(&self) -> Result<(), Invalid> {
        let root = Path::Root;
        header(root.field("header"), self.header.stamp.nanosec)?;
        pose(root.field("pose"), &self.pose)
    }
}

impl Validate for Odometry {
    fn validate(&self) -> Result<(), Invalid> {
        let root = Path::Root;
        header(root.field("header"), self.header.stamp.nanosec)?;
        pose_with_covariance(root.field("pose"), &self.pose)?;
        twist_with_covariance(root.field("twist"), &self.twist)
    }
}

impl Validate for Twist {
    fn validate(&self) -> Result<(), Invalid> {
        twist(Path::Root, self)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::convert::{command, fuse};
    use lockstep_examples::control::Gains;

    fn range(value: f32) -> Range {
        Range {
            min_range: 0.1,
            max_range: 5.0,
            field_of_view: 0.5,
            range: value,
            ..Range::default()
        }
    }

    fn unit_pose(x: f64) -> Pose {
        let mut p = Pose {
            position: Point { x, y: 0.0, z: 0.0 },
            ..Pose::default()
        };
        p.orientation.w = 1.0;
        p
    }

    fn odom() -> Odometry {
        let mut o = Odometry::default();
        o.pose.pose = unit_pose(1.0);
        o
    }

    #[test]
    fn good_messages_pass() {
        for value in [0.05, 1.0, 5.0, 7.0, f32::INFINITY, f32::NEG_INFINITY] {
            assert_eq!(range(value).validate(), Ok(()), "{value}");
        }
        let obstacles = PoseArray {
            poses: vec![unit_pose(1.0), unit_pose(-MAX_DISTANCE_M)],
            ..PoseArray::default()
        };
        assert_eq!(obstacles.validate(), Ok(()));
        assert_eq!(odom().validate(), Ok(()));
        // A zero quaternion (some publishers leave it unset) reads as no rotation.
        assert_eq!(Odometry::default().validate(), Ok(()));
        assert_eq!(Twist::default().validate(), Ok(()));
    }

    #[test]
    fn nan_range_is_dropped_but_infinite_range_is_no_return() {
        let err = range(f32::NAN).validate().unwrap_err();
        assert_eq!(err.field, "range");
        assert!(err.value.is_nan());
        assert!(range(f32::INFINITY).validate().is_ok());
    }

    #[test]
    fn range_limits_and_angles_must_make_sense() {
        type Spoil = fn(&mut Range);
        let cases: [(Spoil, &str); 10] = [
            (|r| r.field_of_view = f32::NAN, "field_of_view"),
            (|r| r.field_of_view = -0.1, "field_of_view"),
            (|r| r.min_range = f32::INFINITY, "min_range"),
            (|r| r.min_range = -1.0, "min_range"),
            (|r| r.max_range = f32::NAN, "max_range"),
            (|r| r.max_range = 0.05, "max_range"),
            (|r| r.range = 3.4e38, "range"),
            (|r| r.variance = f32::NAN, "variance"),
            (|r| r.variance = -1.0, "variance"),
            (|r| r.variance = 3.4e38, "variance"),
        ];
        for (spoil, field) in cases {
            let mut r = range(1.0);
            spoil(&mut r);
            assert_eq!(r.validate().unwrap_err().field, field, "{r:?}");
        }
        let mut r = range(1.0);
        r.header.stamp.nanosec = 1_000_000_000;
        let err = r.validate().unwrap_err();
        assert_eq!((err.field.as_str(), err.value), ("header.stamp.nanosec", 1e9));
    }

    #[test]
    fn errors_name_the_field_inside_sequences_and_nested_messages() {
        let mut obstacles = PoseArray {
            poses: vec![unit_pose(1.0), unit_pose(2.0), unit_pose(3.0)],
            ..PoseArray::default()
        };
        obstacles.poses[2].position.y = f64::NEG_INFINITY;
        let err = obstacles.validate().unwrap_err();
        assert_eq!(err.field, "poses[2].position.y");
        assert_eq!(err.to_string(), "poses[2].position.y = -inf: not a finite number");

        let mut o = odom();
        o.twist.covariance[35] = f64::NAN;
        assert_eq!(o.validate().unwrap_err().field, "twist.covariance[35]");
        let mut o = odom();
        o.pose.covariance[7] = -1e308;
        assert_eq!(o.validate().unwrap_err().field, "pose.covariance[7]");
        let mut o = odom();
        o.twist.twist.linear.y = 1e308;
        assert_eq!(o.validate().unwrap_err().field, "twist.twist.linear.y");
        let mut o = odom();
        o.pose.pose.orientation.z = 1e308;
        assert_eq!(o.validate().unwrap_err().field, "pose.pose.orientation");
        let mut o = odom();
        o.pose.pose.position.x = -1e308;
        assert_eq!(o.validate().unwrap_err().field, "pose.pose.position.x");

        let mut goal = PoseStamped::default();
        goal.pose.position.z = f64::NAN;
        assert_eq!(goal.validate().unwrap_err().field, "pose.position.z");
        let mut cmd = Twist::default();
        cmd.angular.z = f64::INFINITY;
        assert_eq!(cmd.validate().unwrap_err().field, "angular.z");
    }

    #[test]
    fn accepted_extremes_give_finite_outputs() {
        let far = [-MAX_DISTANCE_M, 0.0, MAX_DISTANCE_M];
        let rotations = [(0.0, 0.0), (0.0, 1.0), (MAX_QUATERNION_NORM, 0.0), (-1.0, 1.0)];
        for (gx, ox) in far.iter().flat_map(|g| far.iter().map(move |o| (*g, *o))) {
            for (z, w) in rotations {
                let mut goal = PoseStamped::default();
                goal.pose.position.x = gx;
                goal.pose.position.y = -gx;
                let mut o = odom();
                o.pose.pose.position.x = ox;
                o.pose.pose.position.y = ox;
                (o.pose.pose.orientation.z, o.pose.pose.orientation.w) = (z, w);
                let obstacles = PoseArray {
                    poses: vec![unit_pose(ox), unit_pose(MAX_DISTANCE_M)],
                    ..PoseArray::default()
                };
                for input in [&goal as &dyn Validate, &o, &obstacles] {
                    assert_eq!(input.validate(), Ok(()));
                }
                let cmd = command(&obstacles, &goal, &o, &Gains::default());
                assert_eq!(cmd.validate(), Ok(()), "{gx} {ox} {z} {w}");
            }
        }
        let mut wide = range(0.9e6);
        wide.max_range = MAX_DISTANCE_M as f32;
        assert_eq!(wide.validate(), Ok(()));
        assert_eq!(fuse(&wide, &wide).validate(), Ok(()));
    }
}
