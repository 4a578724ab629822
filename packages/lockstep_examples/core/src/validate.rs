//! Which input messages a module may use, and which outputs it may publish.
//!
//! A module drops an input holding a number it cannot use (NaN, ±inf in a float field, a position or range
//! so large that arithmetic on it overflows, a stamp whose `nanosec` is not below 1e9) and keeps working from
//! its previous valid inputs; it never publishes an output holding a non-finite number. The rules, per
//! message:
//!
//! - every float field is finite, except `sensor_msgs/Range::range`, where REP 117 gives ±inf a meaning
//!   (+inf: nothing within `max_range`; -inf: too close to measure, an obstacle at `min_range` for fusion);
//!   a NaN `range` (REP 117: an erroneous measurement) is dropped like any other NaN;
//! - positions, ranges and range limits are within ±[`MAX_DISTANCE_M`], speeds within ±[`MAX_SPEED`],
//!   variances and covariances within ±[`MAX_VARIANCE`]; `min_range` is not negative and not above
//!   `max_range`; `field_of_view` is within [0, 2π]; a reading's variance is not negative;
//! - a quaternion's norm is at most [`MAX_QUATERNION_NORM`] (no rotation is longer than 1; a zero quaternion
//!   is accepted and read as no rotation).
//!
//! The checks name the offending field (`poses[2].position.x`), so a log line tells what was wrong where.

use std::fmt;
use std::time::{Duration, Instant};

use r2r::builtin_interfaces::msg::Time;
use r2r::geometry_msgs::msg::{
    Point, Pose, PoseArray, PoseStamped, PoseWithCovariance, Quaternion, Twist, TwistWithCovariance, Vector3,
};
use r2r::nav_msgs::msg::Odometry;
use r2r::sensor_msgs::msg::Range;
use r2r::std_msgs::msg::Header;

/// Largest distance (m) a position, a range or a range limit may have: far beyond any map or sensor, and
/// far enough from `f64::MAX` that differences and squares of such values stay finite.
pub const MAX_DISTANCE_M: f64 = 1.0e6;

/// Largest speed (m/s, rad/s) a twist may hold, for the same reason as [`MAX_DISTANCE_M`].
pub const MAX_SPEED: f64 = 1.0e6;

/// Largest variance (m², rad², ...) a reading or a covariance entry may hold: that of a [`MAX_DISTANCE_M`]
/// standard deviation.
pub const MAX_VARIANCE: f64 = MAX_DISTANCE_M * MAX_DISTANCE_M;

/// Largest norm a quaternion may have (a rotation's is 1; publishers' rounding is far below this margin).
pub const MAX_QUATERNION_NORM: f64 = 1.5;

/// A value a module cannot use: which field, its value, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field} = {value}: {problem}")]
pub struct Invalid {
    /// Path of the field in the message, e.g. `pose.pose.orientation` or `poses[2].position.x`.
    pub field: String,
    /// The offending value (a quaternion's norm, a stamp's nanoseconds).
    pub value: f64,
    /// What is wrong with it.
    pub problem: &'static str,
}

/// A message whose numbers can be checked before a module uses or publishes it.
pub trait Validate {
    /// `Ok` if every number in the message is usable (see the module documentation).
    fn validate(&self) -> Result<(), Invalid>;
}

/// Where a field sits in a message; formatted only when a check fails.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Field(&'a Path<'a>, &'static str),
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    fn field(&'a self, name: &'static str) -> Path<'a> {
        Path::Field(self, name)
    }

    fn index(&'a self, index: usize) -> Path<'a> {
        Path::Index(self, index)
    }

    fn invalid(&self, value: f64, problem: &'static str) -> Invalid {
        Invalid {
            field: self.to_string(),
            value,
            problem,
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Field(Path::Root, name) => write!(f, "{name}"),
            Path::Field(parent, name) => write!(f, "{parent}.{name}"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

fn finite(path: Path<'_>, value: f64) -> Result<(), Invalid> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(path.invalid(value, "not a finite number"))
    }
}

fn within(path: Path<'_>, value: f64, max: f64, problem: &'static str) -> Result<(), Invalid> {
    finite(path, value)?;
    if value.abs() <= max {
        Ok(())
    } else {
        Err(path.invalid(value, problem))
    }
}

fn distance(path: Path<'_>, value: f64) -> Result<(), Invalid> {
    within(
        path,
        value,
        MAX_DISTANCE_M,
        "beyond the largest distance a module accepts (1e6 m)",
    )
}

fn speed(path: Path<'_>, value: f64) -> Result<(), Invalid> {
    within(
        path,
        value,
        MAX_SPEED,
        "beyond the largest speed a module accepts (1e6 m/s or rad/s)",
    )
}

fn variance(path: Path<'_>, value: f64) -> Result<(), Invalid> {
    within(
        path,
        value,
        MAX_VARIANCE,
        "beyond the largest variance a module accepts (1e12)",
    )
}

fn stamp(path: Path<'_>, time: &Time) -> Result<(), Invalid> {
    if time.nanosec < 1_000_000_000 {
        Ok(())
    } else {
        Err(path
            .field("nanosec")
            .invalid(f64::from(time.nanosec), "not below 1e9"))
    }
}

fn header(path: Path<'_>, header: &Header) -> Result<(), Invalid> {
    stamp(path.field("stamp"), &header.stamp)
}

type Check = fn(Path<'_>, f64) -> Result<(), Invalid>;

/// `check` on the fields `x`, `y`, `z` of `path`.
fn axes(path: Path<'_>, (x, y, z): (f64, f64, f64), check: Check) -> Result<(), Invalid> {
    check(path.field("x"), x)?;
    check(path.field("y"), y)?;
    check(path.field("z"), z)
}

fn point(path: Path<'_>, p: &Point) -> Result<(), Invalid> {
    axes(path, (p.x, p.y, p.z), distance)
}

fn quaternion(path: Path<'_>, q: &Quaternion) -> Result<(), Invalid> {
    for (name, value) in [("x", q.x), ("y", q.y), ("z", q.z), ("w", q.w)] {
        finite(path.field(name), value)?;
    }
    let norm = (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w).sqrt();
    if norm <= MAX_QUATERNION_NORM {
        Ok(())
    } else {
        Err(path.invalid(norm, "norm too large for a rotation"))
    }
}

fn pose(path: Path<'_>, p: &Pose) -> Result<(), Invalid> {
    point(path.field("position"), &p.position)?;
    quaternion(path.field("orientation"), &p.orientation)
}

fn velocity(path: Path<'_>, v: &Vector3) -> Result<(), Invalid> {
    axes(path, (v.x, v.y, v.z), speed)
}

fn twist(path: Path<'_>, t: &Twist) -> Result<(), Invalid> {
    velocity(path.field("linear"), &t.linear)?;
    velocity(path.field("angular"), &t.angular)
}

fn covariance(path: Path<'_>, values: &[f64]) -> Result<(), Invalid> {
    values
        .iter()
        .enumerate()
        .try_for_each(|(i, &value)| variance(path.index(i), value))
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
        let root = Path::Root;
        header(root.field("header"), &self.header)?;
        let field_of_view = f64::from(self.field_of_view);
        finite(root.field("field_of_view"), field_of_view)?;
        if !(0.0..=std::f64::consts::TAU).contains(&field_of_view) {
            return Err(root
                .field("field_of_view")
                .invalid(field_of_view, "outside [0, 2π]"));
        }
        let (min, max) = (f64::from(self.min_range), f64::from(self.max_range));
        distance(root.field("min_range"), min)?;
        distance(root.field("max_range"), max)?;
        if min < 0.0 {
            return Err(root.field("min_range").invalid(min, "negative"));
        }
        if max < min {
            return Err(root.field("max_range").invalid(max, "below min_range"));
        }
        let reading_variance = f64::from(self.variance);
        variance(root.field("variance"), reading_variance)?;
        if reading_variance < 0.0 {
            return Err(root.field("variance").invalid(reading_variance, "negative"));
        }
        let range = f64::from(self.range);
        if range.is_nan() {
            return Err(root
                .field("range")
                .invalid(range, "NaN (REP 117: an erroneous reading)"));
        }
        if range.is_finite() {
            // ±inf have their REP 117 meanings; a finite reading outside [min, max] is no detection (see
            // `fusion::obstacle_distance`).
            distance(root.field("range"), range)?;
        }
        Ok(())
    }
}

impl Validate for PoseArray {
    fn validate(&self) -> Result<(), Invalid> {
        let root = Path::Root;
        header(root.field("header"), &self.header)?;
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
        header(root.field("header"), &self.header)?;
        pose(root.field("pose"), &self.pose)
    }
}

impl Validate for Odometry {
    fn validate(&self) -> Result<(), Invalid> {
        let root = Path::Root;
        header(root.field("header"), &self.header)?;
        pose_with_covariance(root.field("pose"), &self.pose)?;
        twist_with_covariance(root.field("twist"), &self.twist)
    }
}

impl Validate for Twist {
    fn validate(&self) -> Result<(), Invalid> {
        twist(Path::Root, self)
    }
}

/// How often [`DropCounter`] reports at most, after its first report.
pub const DROP_REPORT_INTERVAL: Duration = Duration::from_secs(5);

/// Counts the messages a module dropped and says when to log about it: the first drop at once, then at most
/// one line per interval, each with the running count, so a flood of bad input cannot flood the log.
#[derive(Debug, Clone)]
pub struct DropCounter {
    /// What is dropped: "input" or "output".
    what: &'static str,
    interval: Duration,
    total: u64,
    since_report: u64,
    last_report: Option<Instant>,
}

impl DropCounter {
    /// A counter of dropped inputs reporting at most once per [`DROP_REPORT_INTERVAL`].
    pub fn inputs() -> Self {
        Self::new("input", DROP_REPORT_INTERVAL)
    }

    /// A counter of withheld outputs reporting at most once per [`DROP_REPORT_INTERVAL`].
    pub fn outputs() -> Self {
        Self::new("output", DROP_REPORT_INTERVAL)
    }

    /// A counter of dropped `what`s ("input", "output") reporting at most once per `interval`.
    pub fn new(what: &'static str, interval: Duration) -> Self {
        Self {
            what,
            interval,
            total: 0,
            since_report: 0,
            last_report: None,
        }
    }

    /// Count one message dropped on `topic` at `now` because of `why`; the line to log if it is time to
    /// report.
    pub fn count(&mut self, now: Instant, topic: &str, why: &Invalid) -> Option<String> {
        self.total += 1;
        self.since_report += 1;
        let due = self
            .last_report
            .is_none_or(|last| now.saturating_duration_since(last) >= self.interval);
        if !due {
            return None;
        }
        let line = format!(
            "dropped an invalid {what} on {topic} ({why}); {total} invalid {what}(s) dropped so far, {since} \
             since the last report",
            what = self.what,
            total = self.total,
            since = self.since_report
        );
        self.last_report = Some(now);
        self.since_report = 0;
        Some(line)
    }

    /// How many messages were dropped so far.
    pub fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use r2r::geometry_msgs::msg::{Point, Pose};

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
        use crate::control::{command, Gains};
        use crate::fusion::fuse;
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

    fn invalid() -> Invalid {
        range(f32::NAN).validate().unwrap_err()
    }

    #[test]
    fn drops_are_counted_and_reported_at_most_once_per_interval() {
        let start = Instant::now();
        let mut drops = DropCounter::new("input", Duration::from_secs(5));
        let first = drops.count(start, "/scan_front", &invalid()).unwrap();
        assert!(
            first.contains("/scan_front") && first.contains("range = NaN"),
            "{first}"
        );
        assert!(first.contains("1 invalid input(s) dropped so far"), "{first}");
        for i in 1..=9 {
            let later = start + Duration::from_millis(400 * i);
            assert_eq!(drops.count(later, "/scan_rear", &invalid()), None);
        }
        let line = drops
            .count(start + Duration::from_secs(5), "/scan_rear", &invalid())
            .unwrap();
        assert!(
            line.contains("11 invalid input(s) dropped so far, 10 since the last report"),
            "{line}"
        );
        assert_eq!(drops.total(), 11);
        assert_eq!(
            drops.count(start + Duration::from_secs(6), "/x", &invalid()),
            None
        );
    }
}
