//! m3: the mission planner's goals, a fixed patrol of waypoints.

use r2r::geometry_msgs::msg::{Point, Pose, PoseStamped, Quaternion};
use r2r::std_msgs::msg::Header;

/// Frame of mission goals.
pub const MAP_FRAME: &str = "map";

/// The patrol: the corners of a 2 m square, counter-clockwise from the origin's neighbour.
pub const WAYPOINTS_M: [(f64, f64); 4] = [(2.0, 0.0), (2.0, 2.0), (0.0, 2.0), (0.0, 0.0)];

/// The goal of output number `sequence`: each waypoint is held for `hold` outputs (at least 1), then the
/// next. A function of the sequence number only, so a replayed planner emits the recorded goals.
pub fn goal(sequence: u32, hold: u32) -> PoseStamped {
    let index = (sequence / hold.max(1)) as usize % WAYPOINTS_M.len();
    let (x, y) = WAYPOINTS_M[index];
    PoseStamped {
        header: Header {
            frame_id: MAP_FRAME.to_owned(),
            ..Header::default()
        },
        pose: Pose {
            position: Point { x, y, z: 0.0 },
            orientation: Quaternion {
                x: 0.0,
                y: 0.0,
                z: 0.0,
                w: 1.0,
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waypoints_cycle_with_hold() {
        let xs: Vec<(f64, f64)> = (0..10)
            .map(|s| goal(s, 2))
            .map(|g| (g.pose.position.x, g.pose.position.y))
            .collect();
        assert_eq!(xs[0], (2.0, 0.0));
        assert_eq!(xs[1], (2.0, 0.0));
        assert_eq!(xs[2], (2.0, 2.0));
        assert_eq!(xs[8], (2.0, 0.0));
        assert_eq!(goal(3, 0), goal(3, 1));
    }
}
