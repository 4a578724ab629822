//! m3: the mission planner's goals, a fixed patrol of waypoints.

use crate::types::Goal;

/// Frame of mission goals.
pub const MAP_FRAME: &str = "map";

/// The patrol: the corners of a 2 m square, counter-clockwise from the origin's neighbour.
pub const WAYPOINTS_M: [(f64, f64); 4] = [(2.0, 0.0), (2.0, 2.0), (0.0, 2.0), (0.0, 0.0)];

/// The goal of output number `sequence`: each waypoint is held for `hold` outputs (at least 1), then the
/// next. A function of the sequence number only, so a replayed planner emits the recorded goals.
pub fn goal(sequence: u32, hold: u32) -> Goal {
    let index = (sequence / hold.max(1)) as usize % WAYPOINTS_M.len();
    let (x, y) = WAYPOINTS_M[index];
    Goal { x, y }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waypoints_cycle_with_hold() {
        let xs: Vec<(f64, f64)> = (0..10).map(|s| goal(s, 2)).map(|g| (g.x, g.y)).collect();
        assert_eq!(xs[0], (2.0, 0.0));
        assert_eq!(xs[1], (2.0, 0.0));
        assert_eq!(xs[2], (2.0, 2.0));
        assert_eq!(xs[8], (2.0, 0.0));
        assert_eq!(goal(3, 0), goal(3, 1));
    }
}
