//! The navigation kind's progress along a goal, beyond the [`Follower`]'s commands: the distance driven
//! (summed over the poses), waiting for the first pose, aborting when the poses stop, arriving, when the
//! path ahead must be published again, and the estimate of the time left.

use std::time::Duration;

use super::follower::{Follower, Gains, Pose, Step};

/// Distance travelled, summed over consecutive poses (a step to or from a non-finite pose is left out).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Odometer {
    last: Option<Pose>,
    total_m: f64,
}

impl Odometer {
    /// A new pose: the distance from the previous one is added.
    pub fn add(&mut self, pose: Pose) {
        if let Some(last) = self.last {
            let step = (pose.x - last.x).hypot(pose.y - last.y);
            if step.is_finite() {
                self.total_m += step;
            }
        }
        self.last = Some(pose);
    }

    /// The distance so far [m].
    pub fn total_m(&self) -> f64 {
        self.total_m
    }
}

/// What to do at one control step.
#[derive(Debug, Clone, PartialEq)]
pub enum Tick {
    /// No pose yet, and the wait for the first one is not over.
    Wait,
    /// The poses stopped (or never came): abort with `message`; `stop` the vehicle if it was driving.
    Lost {
        travelled_m: f64,
        stop: bool,
        message: String,
    },
    /// Within the tolerance of the last waypoint at `pose`: stop and succeed.
    Arrived { pose: Pose, travelled_m: f64 },
    /// Drive: send `step`'s command; publish the path ahead again if `replan`; the goal should end in about
    /// `estimate_s`.
    Drive {
        pose: Pose,
        step: Step,
        travelled_m: f64,
        replan: bool,
        estimate_s: f64,
    },
}

/// One Navigate goal under way.
#[derive(Debug, Clone)]
pub struct Drive {
    follower: Follower,
    pose_timeout_s: f64,
    /// The odometer at the first pose of this goal.
    odometer_start: Option<f64>,
    /// Waypoints left when the path ahead was last published.
    planned: Option<usize>,
}

impl Drive {
    /// A goal along `route` (checked) at `speed_mps`; it aborts when no pose came for `pose_timeout_s`.
    pub fn new(route: Vec<(f64, f64)>, speed_mps: f64, gains: Gains, pose_timeout_s: f64) -> Self {
        Self {
            follower: Follower::new(route, speed_mps, gains),
            pose_timeout_s,
            odometer_start: None,
            planned: None,
        }
    }

    /// The route follower (the route ahead, the cruise speed).
    pub fn follower(&self) -> &Follower {
        &self.follower
    }

    /// Distance driven since the goal's first pose, given the odometer now [m].
    pub fn travelled_m(&self, odometer_m: f64) -> f64 {
        self.odometer_start.map_or(0.0, |s| odometer_m - s)
    }

    /// One control step: `latest` is the latest pose and its age, `odometer_m` the odometer now, `elapsed`
    /// the time since the goal started, `pose_topic` names the pose topic in messages.
    pub fn tick(
        &mut self,
        latest: Option<(Pose, Duration)>,
        odometer_m: f64,
        elapsed: Duration,
        pose_topic: &str,
    ) -> Tick {
        let pose_timeout = Duration::from_secs_f64(self.pose_timeout_s);
        let pose = match latest {
            Some((pose, age)) if age <= pose_timeout => pose,
            _ if self.odometer_start.is_none() && elapsed <= pose_timeout => return Tick::Wait,
            _ => {
                return Tick::Lost {
                    travelled_m: self.travelled_m(odometer_m),
                    stop: self.odometer_start.is_some(),
                    message: format!("no pose on {pose_topic} for {} s", self.pose_timeout_s),
                };
            }
        };
        let start = *self.odometer_start.get_or_insert(odometer_m);
        let travelled_m = odometer_m - start;
        let step = self.follower.step(pose);
        if step.arrived {
            return Tick::Arrived { pose, travelled_m };
        }
        let left = self.follower.remaining_route().len();
        let replan = self.planned != Some(left);
        self.planned = Some(left);
        Tick::Drive {
            pose,
            step,
            travelled_m,
            replan,
            estimate_s: (step.remaining_m / self.follower.cruise_mps()).min(1e6),
        }
    }
}

/// The result message of a goal that arrived at `pose`.
pub fn arrived_message(pose: Pose, travelled_m: f64, took_s: f64) -> String {
    format!(
        "arrived at ({:.2}, {:.2}) after {travelled_m:.2} m in {took_s:.2} s",
        pose.x, pose.y
    )
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

    fn at(x: f64, y: f64) -> Pose {
        Pose { x, y, yaw: 0.0 }
    }

    const FRESH: Duration = Duration::from_millis(10);

    #[test]
    fn the_odometer_sums_finite_steps() {
        let mut odometer = Odometer::default();
        odometer.add(at(0.0, 0.0));
        odometer.add(at(3.0, 4.0));
        odometer.add(at(f64::INFINITY, 4.0));
        odometer.add(at(3.0, 5.0));
        odometer.add(at(3.0, 6.0));
        // The steps to and from the non-finite pose are left out.
        assert_eq!(odometer.total_m(), 5.0 + 1.0);
    }

    #[test]
    fn waits_for_the_first_pose_then_aborts_without_one() {
        let mut drive = Drive::new(vec![(5.0, 0.0)], 0.5, gains(), 2.0);
        assert_eq!(drive.tick(None, 0.0, Duration::from_secs(1), "/gt"), Tick::Wait);
        let lost = drive.tick(None, 0.0, Duration::from_millis(2001), "/gt");
        assert_eq!(
            lost,
            Tick::Lost {
                travelled_m: 0.0,
                stop: false,
                message: "no pose on /gt for 2 s".to_owned()
            }
        );
    }

    #[test]
    fn a_pose_that_gets_old_stops_the_vehicle_and_aborts() {
        let mut drive = Drive::new(vec![(5.0, 0.0)], 0.5, gains(), 2.0);
        let start = drive.tick(Some((at(0.0, 0.0), FRESH)), 10.0, FRESH, "/gt");
        assert!(matches!(start, Tick::Drive { travelled_m, .. } if travelled_m == 0.0));
        let stale = Some((at(1.0, 0.0), Duration::from_millis(2500)));
        // Once driving, an old pose aborts at once, however short the goal's time so far.
        let lost = drive.tick(stale, 11.0, Duration::from_millis(100), "/gt");
        assert!(matches!(lost, Tick::Lost { travelled_m, stop: true, .. } if travelled_m == 1.0));
    }

    #[test]
    fn drives_replans_at_each_waypoint_and_arrives() {
        let mut drive = Drive::new(vec![(5.0, 0.0), (5.0, 5.0)], 0.5, gains(), 2.0);
        let first = drive.tick(Some((at(0.0, 0.0), FRESH)), 0.0, FRESH, "/gt");
        let Tick::Drive {
            replan, estimate_s, ..
        } = first
        else {
            panic!("{first:?}")
        };
        assert!(replan, "the first step publishes the path");
        assert_eq!(estimate_s, 10.0 / 0.5);
        let same = drive.tick(Some((at(1.0, 0.0), FRESH)), 1.0, FRESH, "/gt");
        assert!(matches!(same, Tick::Drive { replan: false, .. }), "{same:?}");
        let corner = drive.tick(Some((at(5.0, 0.05), FRESH)), 5.0, FRESH, "/gt");
        assert!(matches!(corner, Tick::Drive { replan: true, .. }), "{corner:?}");
        let end = drive.tick(Some((at(5.0, 4.9), FRESH)), 9.9, FRESH, "/gt");
        assert_eq!(
            end,
            Tick::Arrived {
                pose: at(5.0, 4.9),
                travelled_m: 9.9
            }
        );
        assert_eq!(drive.travelled_m(10.0), 10.0);
        assert_eq!(
            arrived_message(at(5.0, 4.9), 9.9, 20.0),
            "arrived at (5.00, 4.90) after 9.90 m in 20.00 s"
        );
    }
}
