//! m1: fuse the front and rear range sensors into obstacle positions.

use crate::types::{Obstacles, RangeReading};

/// Frame of the fused obstacles: the robot's base, x forward.
pub const BASE_FRAME: &str = "base_link";

/// The distance of the obstacle a reading shows, if it shows one (REP 117): a finite reading within the
/// sensor's limits is one at that distance; `-inf` ("too close to measure") is one at `min_range`, the
/// closest the sensor can tell; `+inf`, a reading at or beyond `max_range` and one below `min_range` show
/// none; NaN (an erroneous reading) is none either (the module drops such messages before they get here).
pub fn obstacle_distance(range: &RangeReading) -> Option<f32> {
    let r = range.range;
    if r == f32::NEG_INFINITY {
        Some(range.min_range)
    } else if r.is_finite() && r >= range.min_range && r < range.max_range {
        Some(r)
    } else {
        None
    }
}

/// Obstacles in the base frame: a front detection at `+range` on x, a rear one at `-range` (front first).
/// Stamped with the later of the two sensor stamps, so the output depends on the inputs only.
pub fn fuse(front: &RangeReading, rear: &RangeReading) -> Obstacles {
    let mut xs = Vec::new();
    if let Some(d) = obstacle_distance(front) {
        xs.push(f64::from(d));
    }
    if let Some(d) = obstacle_distance(rear) {
        xs.push(-f64::from(d));
    }
    Obstacles {
        stamp: front.stamp.max(rear.stamp),
        xs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Stamp;

    fn range(value: f32, sec: i32) -> RangeReading {
        RangeReading {
            stamp: Stamp { sec, nanosec: 0 },
            min_range: 0.1,
            max_range: 5.0,
            range: value,
        }
    }

    #[test]
    fn detections_become_obstacles_front_positive_rear_negative() {
        let fused = fuse(&range(1.5, 3), &range(2.0, 4));
        assert_eq!(fused.xs, vec![1.5, -2.0]);
        assert_eq!(fused.stamp.sec, 4);
    }

    #[test]
    fn out_of_range_and_nan_are_not_obstacles() {
        assert!(fuse(&range(5.0, 0), &range(f32::NAN, 0)).xs.is_empty());
        assert!(fuse(&range(0.05, 0), &range(f32::INFINITY, 0)).xs.is_empty());
    }

    #[test]
    fn too_close_to_measure_is_an_obstacle_at_min_range() {
        // REP 117: -inf means something is closer than the sensor can measure: the worst case, not nothing.
        let fused = fuse(&range(f32::NEG_INFINITY, 0), &range(f32::NEG_INFINITY, 0));
        assert_eq!(fused.xs, vec![f64::from(0.1f32), -f64::from(0.1f32)]);
    }

    #[test]
    fn the_later_stamp_is_compared_by_seconds_then_nanoseconds() {
        let mut front = range(1.25, 7);
        front.stamp.nanosec = 5;
        let mut rear = range(2.5, 6);
        rear.stamp.nanosec = 999_999_999;
        let fused = fuse(&front, &rear);
        assert_eq!(fused.stamp, Stamp { sec: 7, nanosec: 5 });
        assert_eq!(fused.xs, vec![1.25, -2.5]);
        // Which sensor is front matters: swapping them moves the obstacles, and the stamp stays the later.
        let swapped = fuse(&rear, &front);
        assert_eq!(swapped.xs, vec![2.5, -1.25]);
        assert_eq!(swapped.stamp, fused.stamp);
    }
}
