//! m1: fuse the front and rear range sensors into obstacle positions.

use r2r::builtin_interfaces::msg::Time;
use r2r::geometry_msgs::msg::{Point, Pose, PoseArray, Quaternion};
use r2r::sensor_msgs::msg::Range;
use r2r::std_msgs::msg::Header;

/// Frame of the fused obstacles: the robot's base, x forward.
pub const BASE_FRAME: &str = "base_link";

/// Whether a reading is a real detection: finite and within the sensor's own limits (a reading at or beyond
/// `max_range` means "nothing seen", as REP 117 says).
pub fn is_detection(range: &Range) -> bool {
    range.range.is_finite() && range.range >= range.min_range && range.range < range.max_range
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
    if is_detection(front) {
        poses.push(obstacle_at(f64::from(front.range)));
    }
    if is_detection(rear) {
        poses.push(obstacle_at(-f64::from(rear.range)));
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
    fn same_inputs_same_output() {
        assert_eq!(
            fuse(&range(1.0, 1), &range(2.0, 2)),
            fuse(&range(1.0, 1), &range(2.0, 2))
        );
    }
}
