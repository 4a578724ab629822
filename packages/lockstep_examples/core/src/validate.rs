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
//! The rules live here, on plain numbers; the node crate walks each ROS message through them.

use std::fmt;
use std::time::{Duration, Instant};

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

/// Where a field sits in a message; formatted only when a check fails.
#[derive(Clone, Copy)]
pub enum Path<'a> {
    /// The message itself.
    Root,
    /// A named field of the parent.
    Field(&'a Path<'a>, &'static str),
    /// An element of the parent sequence.
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    /// The field `name` of this one.
    pub fn field(&'a self, name: &'static str) -> Path<'a> {
        Path::Field(self, name)
    }

    /// Element `index` of this sequence.
    pub fn index(&'a self, index: usize) -> Path<'a> {
        Path::Index(self, index)
    }

    /// The error for `value` at this field.
    pub fn invalid(&self, value: f64, problem: &'static str) -> Invalid {
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

/// `value` is a finite number.
pub fn finite(path: Path<'_>, value: f64) -> Result<(), Invalid> {
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

/// `value` is a usable distance: finite, within ±[`MAX_DISTANCE_M`].
pub fn distance(path: Path<'_>, value: f64) -> Result<(), Invalid> {
    within(
        path,
        value,
        MAX_DISTANCE_M,
        "beyond the largest distance a module accepts (1e6 m)",
    )
}

/// `value` is a usable speed: finite, within ±[`MAX_SPEED`].
pub fn speed(path: Path<'_>, value: f64) -> Result<(), Invalid> {
    within(
        path,
        value,
        MAX_SPEED,
        "beyond the largest speed a module accepts (1e6 m/s or rad/s)",
    )
}

/// `value` is a usable variance: finite, within ±[`MAX_VARIANCE`].
pub fn variance(path: Path<'_>, value: f64) -> Result<(), Invalid> {
    within(
        path,
        value,
        MAX_VARIANCE,
        "beyond the largest variance a module accepts (1e12)",
    )
}

/// A stamp at `path` is usable if its `nanosec` is below 1e9.
pub fn stamp(path: Path<'_>, nanosec: u32) -> Result<(), Invalid> {
    if nanosec < 1_000_000_000 {
        Ok(())
    } else {
        Err(path.field("nanosec").invalid(f64::from(nanosec), "not below 1e9"))
    }
}

/// A header at `path` is usable if its stamp is.
pub fn header(path: Path<'_>, nanosec: u32) -> Result<(), Invalid> {
    stamp(path.field("stamp"), nanosec)
}

/// A check of one number.
pub type Check = fn(Path<'_>, f64) -> Result<(), Invalid>;

/// `check` on the fields `x`, `y`, `z` of `path`.
pub fn axes(path: Path<'_>, [x, y, z]: [f64; 3], check: Check) -> Result<(), Invalid> {
    check(path.field("x"), x)?;
    check(path.field("y"), y)?;
    check(path.field("z"), z)
}

/// A point `[x, y, z]`: each a usable distance.
pub fn point(path: Path<'_>, p: [f64; 3]) -> Result<(), Invalid> {
    axes(path, p, distance)
}

/// A velocity `[x, y, z]`: each a usable speed.
pub fn velocity(path: Path<'_>, v: [f64; 3]) -> Result<(), Invalid> {
    axes(path, v, speed)
}

/// A quaternion `[x, y, z, w]`: finite, norm at most [`MAX_QUATERNION_NORM`].
pub fn quaternion(path: Path<'_>, [x, y, z, w]: [f64; 4]) -> Result<(), Invalid> {
    for (name, value) in [("x", x), ("y", y), ("z", z), ("w", w)] {
        finite(path.field(name), value)?;
    }
    let norm = (x * x + y * y + z * z + w * w).sqrt();
    if norm <= MAX_QUATERNION_NORM {
        Ok(())
    } else {
        Err(path.invalid(norm, "norm too large for a rotation"))
    }
}

/// A covariance matrix: each entry a usable variance.
pub fn covariance(path: Path<'_>, values: &[f64]) -> Result<(), Invalid> {
    values
        .iter()
        .enumerate()
        .try_for_each(|(i, &value)| variance(path.index(i), value))
}

/// The numbers of a `sensor_msgs/Range` message the rules check.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RangeNumbers {
    /// `header.stamp.nanosec`.
    pub nanosec: u32,
    /// `field_of_view` (rad).
    pub field_of_view: f32,
    /// `min_range` (m).
    pub min_range: f32,
    /// `max_range` (m).
    pub max_range: f32,
    /// `variance` of the reading (m²).
    pub variance: f32,
    /// `range` (m).
    pub range: f32,
}

/// `Ok` if a range message with these numbers is usable (see the module documentation).
pub fn range_message(r: &RangeNumbers) -> Result<(), Invalid> {
    let root = Path::Root;
    header(root.field("header"), r.nanosec)?;
    let field_of_view = f64::from(r.field_of_view);
    finite(root.field("field_of_view"), field_of_view)?;
    if !(0.0..=std::f64::consts::TAU).contains(&field_of_view) {
        return Err(root
            .field("field_of_view")
            .invalid(field_of_view, "outside [0, 2π]"));
    }
    let (min, max) = (f64::from(r.min_range), f64::from(r.max_range));
    distance(root.field("min_range"), min)?;
    distance(root.field("max_range"), max)?;
    if min < 0.0 {
        return Err(root.field("min_range").invalid(min, "negative"));
    }
    if max < min {
        return Err(root.field("max_range").invalid(max, "below min_range"));
    }
    let reading_variance = f64::from(r.variance);
    variance(root.field("variance"), reading_variance)?;
    if reading_variance < 0.0 {
        return Err(root.field("variance").invalid(reading_variance, "negative"));
    }
    let range = f64::from(r.range);
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

    fn range(value: f32) -> RangeNumbers {
        RangeNumbers {
            min_range: 0.1,
            max_range: 5.0,
            field_of_view: 0.5,
            range: value,
            ..RangeNumbers::default()
        }
    }

    #[test]
    fn range_rules() {
        for value in [0.05, 1.0, 5.0, 7.0, f32::INFINITY, f32::NEG_INFINITY] {
            assert_eq!(range_message(&range(value)), Ok(()), "{value}");
        }
        let err = range_message(&range(f32::NAN)).unwrap_err();
        assert_eq!(err.field, "range");
        let mut r = range(1.0);
        r.nanosec = 1_000_000_000;
        let err = range_message(&r).unwrap_err();
        assert_eq!((err.field.as_str(), err.value), ("header.stamp.nanosec", 1e9));
    }

    #[test]
    fn quaternions_may_be_zero_but_not_long() {
        assert_eq!(quaternion(Path::Root, [0.0; 4]), Ok(()));
        assert!(quaternion(Path::Root, [0.0, 0.0, 1e308, 1.0]).is_err());
    }

    fn invalid() -> Invalid {
        range_message(&range(f32::NAN)).unwrap_err()
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
