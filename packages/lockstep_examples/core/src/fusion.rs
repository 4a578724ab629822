//! m1: fuse the front and rear range sensors into obstacle positions.

use r2r::builtin_interfaces::msg::Time;
use r2r::geometry_msgs::msg::{Point, Pose, PoseArray, Quaternion};
use r2r::sensor_msgs::msg::Range;
use r2r::std_msgs::msg::Header;

/// Frame of the fused obstacles: the robot's base, x forward.
pub const BASE_FRAME: &str = "base_link";

/// The distance of the obstacle a reading shows, if it shows one (REP 117): a finite reading within the
/// sensor's limits is one at that distance; `-inf` ("too close to measure") is one at `min_range`, the
/// closest the sensor can tell; `+inf`, a reading at or beyond `max_range` and one below `min_range` show
/// none; NaN (an erroneous reading) is none either (the module drops such messages before they get here).
pub fn obstacle_distance(range: &Range) -> Option<f32> {
    let r = range.range;
    if r == f32::NEG_INFINITY {
        Some(range.min_range)
    } else if r.is_finite() && r >= range.min_range && r < range.max_range {
        Some(r)
    } else {
        None
    }
}

fn later(a: &Time, b: &Time) -> Time {
    if (a.sec, a.nanosec) >= (b.sec, b.nanosec) {
        a.clone()
    } else {
        b.clone()
    }
}

fn obstacle_at(x: f64) -> Pose {
    Pose {
        position: Point { x, y: 0.0, z: 0.0 },
        orientation: Quaternion {
            x: 0.0,
            y: 0.0,
            z: 0.0,
            w: 1.0,
        },
    }
}

/// Obstacles in the base frame: a front detection at `+range` on x, a rear one at `-range` (front first).
/// Stamped with the later of the two sensor stamps, so the output depends on the inputs only.
pub fn fuse(front: &Range, rear: &Range) -> PoseArray {
    let mut poses = Vec::new();
    if let Some(d) = obstacle_distance(front) {
        poses.push(obstacle_at(f64::from(d)));
    }
    if let Some(d) = obstacle_distance(rear) {
        poses.push(obstacle_at(-f64::from(d)));
    }
    PoseArray {
        header: Header {
            stamp: later(&front.header.stamp, &rear.header.stamp),
            frame_id: BASE_FRAME.to_owned(),
        },
        poses,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn range(value: f32, sec: i32) -> Range {
        Range {
            header: Header {
                stamp: Time { sec, nanosec: 0 },
                frame_id: "s".into(),
            },
            min_range: 0.1,
            max_range: 5.0,
            range: value,
            ..Range::default()
        }
    }

    #[test]
    fn detections_become_obstacles_front_positive_rear_negative() {
        let fused = fuse(&range(1.5, 3), &range(2.0, 4));
        let xs: Vec<f64> = fused.poses.iter().map(|p| p.position.x).collect();
        assert_eq!(xs, vec![1.5, -2.0]);
        assert_eq!(fused.header.stamp.sec, 4);
        assert_eq!(fused.header.frame_id, BASE_FRAME);
    }

    #[test]
    fn out_of_range_and_nan_are_not_obstacles() {
        assert!(fuse(&range(5.0, 0), &range(f32::NAN, 0)).poses.is_empty());
        assert!(fuse(&range(0.05, 0), &range(f32::INFINITY, 0)).poses.is_empty());
    }

    #[test]
    fn too_close_to_measure_is_an_obstacle_at_min_range() {
        // REP 117: -inf means something is closer than the sensor can measure: the worst case, not nothing.
        let fused = fuse(&range(f32::NEG_INFINITY, 0), &range(f32::NEG_INFINITY, 0));
        let xs: Vec<f64> = fused.poses.iter().map(|p| p.position.x).collect();
        assert_eq!(xs, vec![f64::from(0.1f32), -f64::from(0.1f32)]);
    }

    /// An obstacle as the expected output has it: on the x axis, unit orientation.
    fn pose(x: f64) -> Pose {
        let orientation = Quaternion {
            w: 1.0,
            ..Quaternion::default()
        };
        let position = Point {
            x,
            ..Point::default()
        };
        Pose {
            position,
            orientation,
        }
    }

    #[test]
    fn output_is_the_expected_message_whatever_else_the_inputs_hold() {
        // Written out by hand, not through `fuse`'s helpers: front obstacle first at +range, rear at -range,
        // unit orientation, base frame, the later stamp, compared by (sec, nanosec) and not by sec alone.
        let expected = PoseArray {
            header: Header {
                stamp: Time { sec: 7, nanosec: 5 },
                frame_id: "base_link".to_owned(),
            },
            poses: vec![pose(1.25), pose(-2.5)],
        };
        let mut front = range(1.25, 7);
        front.header.stamp.nanosec = 5;
        let mut rear = range(2.5, 6);
        rear.header.stamp.nanosec = 999_999_999;
        assert_eq!(fuse(&front, &rear), expected);

        // Fields the fusion must not read (frame ids, radiation type, field of view) and inputs re-created
        // from scratch give the same message, byte for byte once serialized.
        let mut front2 = range(1.25, 7);
        front2.header.stamp.nanosec = 5;
        front2.header.frame_id = "front_sonar".into();
        front2.radiation_type = Range::INFRARED as u8;
        front2.field_of_view = 1.0;
        let mut rear2 = range(2.5, 6);
        rear2.header.stamp.nanosec = 999_999_999;
        rear2.header.frame_id = "rear_sonar".into();
        let again = fuse(&front2, &rear2);
        assert_eq!(again, expected);
        use r2r::WrappedTypesupport as _;
        assert_eq!(
            again.to_serialized_bytes().unwrap(),
            expected.to_serialized_bytes().unwrap()
        );

        // Which sensor is front matters: swapping them moves the obstacles, and the stamp stays the later.
        let swapped = fuse(&rear, &front);
        let xs: Vec<f64> = swapped.poses.iter().map(|p| p.position.x).collect();
        assert_eq!(xs, vec![2.5, -1.25]);
        assert_eq!(swapped.header.stamp, expected.header.stamp);
    }
}
