//! The navigation kind's route follower, free of ROS: turn toward the current waypoint, drive at most the
//! goal's speed (less when the heading is off, and on the approach to the last waypoint), and move on to the
//! next waypoint within the tolerance.

use std::f64::consts::PI;

use crate::map::MAX_COORDINATE_M;

/// Beyond this heading error the vehicle turns on the spot (no linear command).
pub const MAX_DRIVING_HEADING_ERROR: f64 = PI / 3.0;

/// A planar pose in the map frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    pub x: f64,
    pub y: f64,
    /// Heading [rad], counter-clockwise from +x.
    pub yaw: f64,
}

/// The heading of a unit quaternion (rotation about z; roll and pitch ignored).
pub fn yaw_of(x: f64, y: f64, z: f64, w: f64) -> f64 {
    (2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z))
}

/// An angle in (-pi, pi].
pub fn wrap(angle: f64) -> f64 {
    let a = (angle + PI).rem_euclid(2.0 * PI) - PI;
    if a <= -PI {
        a + 2.0 * PI
    } else {
        a
    }
}

/// The controller's settings (from the node's parameters).
#[derive(Debug, Clone, Copy)]
pub struct Gains {
    pub k_heading: f64,
    pub max_angular_radps: f64,
    pub max_linear_mps: f64,
    pub tolerance_m: f64,
    pub approach_decel_mps2: f64,
}

/// One control step's command and where the follower stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub linear: f64,
    pub angular: f64,
    /// The waypoint being driven to (the route's length once arrived).
    pub index: usize,
    /// Distance along the rest of the route from the pose [m].
    pub remaining_m: f64,
    pub arrived: bool,
}

/// Check a Navigate goal: the route (x, y) or the bad field and why. Coordinates beyond +-1e7 m are
/// refused, as in a station map: surely a typo, and distances along the route stay finite.
pub fn check_goal(route: &[(f64, f64, f64)], speed_mps: f64) -> Result<Vec<(f64, f64)>, String> {
    if !speed_mps.is_finite() || speed_mps <= 0.0 {
        return Err(format!(
            "speed_mps is {speed_mps}; it must be a finite number > 0"
        ));
    }
    if route.is_empty() {
        return Err("route is empty; it needs at least one waypoint".to_owned());
    }
    let bounded = |c: f64| c.is_finite() && c.abs() <= MAX_COORDINATE_M;
    if let Some((i, p)) = route
        .iter()
        .enumerate()
        .find(|(_, p)| !(bounded(p.0) && bounded(p.1) && bounded(p.2)))
    {
        return Err(format!(
            "route[{i}] is ({}, {}, {}); every coordinate must be finite and within +-{MAX_COORDINATE_M} m",
            p.0, p.1, p.2
        ));
    }
    Ok(route.iter().map(|p| (p.0, p.1)).collect())
}

/// Follows one route.
#[derive(Debug, Clone)]
pub struct Follower {
    route: Vec<(f64, f64)>,
    /// The goal's speed: no linear command exceeds it.
    speed_mps: f64,
    gains: Gains,
    index: usize,
}

fn dist(a: (f64, f64), b: (f64, f64)) -> f64 {
    (a.0 - b.0).hypot(a.1 - b.1)
}

impl Follower {
    pub fn new(route: Vec<(f64, f64)>, speed_mps: f64, gains: Gains) -> Self {
        Self {
            route,
            speed_mps,
            gains,
            index: 0,
        }
    }

    /// The top speed: the goal's, capped by the parameter.
    pub fn cruise_mps(&self) -> f64 {
        self.speed_mps.min(self.gains.max_linear_mps)
    }

    /// The waypoints still ahead.
    pub fn remaining_route(&self) -> &[(f64, f64)] {
        &self.route[self.index.min(self.route.len())..]
    }

    /// Distance from `at` along the rest of the route [m].
    pub fn remaining_m(&self, at: (f64, f64)) -> f64 {
        let ahead = self.remaining_route();
        let Some(first) = ahead.first() else {
            return 0.0;
        };
        dist(at, *first) + ahead.windows(2).map(|w| dist(w[0], w[1])).sum::<f64>()
    }

    /// The command for the vehicle at `pose`.
    pub fn step(&mut self, pose: Pose) -> Step {
        let at = (pose.x, pose.y);
        while self.index < self.route.len() && dist(at, self.route[self.index]) <= self.gains.tolerance_m {
            self.index += 1;
        }
        let remaining_m = self.remaining_m(at);
        let Some(&target) = self.route.get(self.index) else {
            return Step {
                linear: 0.0,
                angular: 0.0,
                index: self.route.len(),
                remaining_m: 0.0,
                arrived: true,
            };
        };
        let error = wrap((target.1 - pose.y).atan2(target.0 - pose.x) - pose.yaw);
        let g = &self.gains;
        let angular = (g.k_heading * error).clamp(-g.max_angular_radps, g.max_angular_radps);
        // On the approach to the last waypoint: no faster than what stops within the remaining distance.
        let approach = (2.0 * g.approach_decel_mps2 * remaining_m).sqrt();
        let speed = self.cruise_mps().min(approach);
        let linear = if error.abs() > MAX_DRIVING_HEADING_ERROR {
            0.0
        } else {
            speed * error.cos()
        };
        Step {
            linear: linear.clamp(0.0, self.speed_mps),
            angular,
            index: self.index,
            remaining_m,
            arrived: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gains() -> Gains {
        Gains {
            k_heading: 2.0,
            max_angular_radps: 1.5,
            max_linear_mps: 1.0,
            tolerance_m: 0.15,
            approach_decel_mps2: 0.5,
        }
    }

    #[test]
    fn bad_goals_name_the_field() {
        assert!(check_goal(&[(1.0, 2.0, 0.0)], 0.5).is_ok());
        assert!(check_goal(&[], 0.5)
            .err()
            .is_some_and(|e| e.starts_with("route is empty")));
        assert!(check_goal(&[(1.0, 2.0, 0.0)], 0.0)
            .err()
            .is_some_and(|e| e.starts_with("speed_mps")));
        assert!(check_goal(&[(1.0, 2.0, 0.0)], f64::NAN)
            .err()
            .is_some_and(|e| e.starts_with("speed_mps")));
        let bad = check_goal(&[(1.0, 2.0, 0.0), (f64::INFINITY, 0.0, 0.0)], 0.5);
        assert!(bad.err().is_some_and(|e| e.starts_with("route[1]")));
    }

    #[test]
    fn yaw_and_wrap() {
        let half = (PI / 4.0).sin();
        assert!((yaw_of(0.0, 0.0, half, half) - PI / 2.0).abs() < 1e-12);
        assert!((wrap(3.0 * PI / 2.0) + PI / 2.0).abs() < 1e-12);
        assert!((wrap(-PI) - PI).abs() < 1e-12);
    }

    #[test]
    fn drives_no_faster_than_the_goal_and_turns_on_the_spot_when_far_off() {
        let mut f = Follower::new(vec![(5.0, 0.0), (5.0, 5.0)], 0.8, gains());
        let ahead = f.step(Pose {
            x: 0.0,
            y: 0.0,
            yaw: 0.0,
        });
        assert_eq!(ahead.linear, 0.8);
        assert_eq!(ahead.angular, 0.0);
        assert!((ahead.remaining_m - 10.0).abs() < 1e-12);
        let off = f.step(Pose {
            x: 0.0,
            y: 0.0,
            yaw: PI / 2.0,
        });
        assert_eq!(off.linear, 0.0);
        assert_eq!(off.angular, -1.5);
        let slight = f.step(Pose {
            x: 0.0,
            y: 0.0,
            yaw: 0.2,
        });
        assert!((slight.linear - 0.8 * 0.2f64.cos()).abs() < 1e-12 && slight.angular < 0.0);
        // Goal slower than the parameter: the goal's; faster: the parameter's.
        let mut fast = Follower::new(vec![(5.0, 0.0)], 3.0, gains());
        assert_eq!(
            fast.step(Pose {
                x: 0.0,
                y: 0.0,
                yaw: 0.0
            })
            .linear,
            1.0
        );
    }

    #[test]
    fn waypoints_are_passed_within_the_tolerance_and_the_end_slows_and_arrives() {
        let mut f = Follower::new(vec![(5.0, 0.0), (5.0, 5.0)], 0.8, gains());
        let corner = f.step(Pose {
            x: 4.9,
            y: 0.0,
            yaw: 0.0,
        });
        assert_eq!(corner.index, 1);
        assert_eq!(corner.linear, 0.0, "a 90 degree turn first");
        assert_eq!(f.remaining_route(), &[(5.0, 5.0)]);
        let near = f.step(Pose {
            x: 5.0,
            y: 4.7,
            yaw: PI / 2.0,
        });
        assert!(near.linear < 0.8 && near.linear > 0.0, "{near:?}");
        let done = f.step(Pose {
            x: 5.0,
            y: 4.9,
            yaw: PI / 2.0,
        });
        assert!(done.arrived && done.linear == 0.0 && done.index == 2, "{done:?}");
    }
}
