//! Path and goal tolerances of a trajectory goal, resolved and judged as a joint_trajectory_controller does:
//!
//! - defaults come from the node's parameters; a goal's `path_tolerance` / `goal_tolerance` entry overrides
//!   its joint's: a value > 0 replaces the default, 0 keeps it, -1 removes the check; any other negative
//!   value, or a joint the controller does not have, makes the whole goal use the defaults (with a warning
//!   saying why). `goal_time_tolerance` the same way (0 keeps the default).
//! - A tolerance of 0 is not checked. Path tolerances hold while the motion moves: a joint further than its
//!   path tolerance from the command ends the goal with `PATH_TOLERANCE_VIOLATED`. At the end every joint
//!   must be within its goal tolerance of the last point (and, when /joint_states carries velocities, slower
//!   than the stopped-velocity tolerance); a goal time tolerance of 0 waits for that forever, a longer one
//!   ends the goal with `GOAL_TOLERANCE_VIOLATED` once it has passed.
//!
//! Positions are checked (the commands are positions; velocity and acceleration path tolerances are
//! accepted and not checked, as a position-commanded joint_trajectory_controller does).

use crate::trajectory::{ErrorCode, GoalError};

/// One `control_msgs/JointTolerance` of a goal.
#[derive(Debug, Clone, PartialEq)]
pub struct JointTolerance {
    pub name: String,
    pub position: f64,
    pub velocity: f64,
    pub acceleration: f64,
}

/// The tolerances a goal is judged by, per controller joint (0: not checked).
#[derive(Debug, Clone, PartialEq)]
pub struct Tolerances {
    pub joints: Vec<String>,
    pub path_position: Vec<f64>,
    pub goal_position: Vec<f64>,
    /// Largest |velocity| at the end (checked only when the joint states carry velocities).
    pub goal_velocity: Vec<f64>,
    /// Seconds after the end within which the goal tolerances must be met (0: no limit).
    pub goal_time_secs: f64,
}

/// How a goal stands once its motion has ended.
#[derive(Debug, Clone, PartialEq)]
pub enum AtEnd {
    Reached,
    Waiting,
    Violated(GoalError),
}

/// A goal value over a default: > 0 replaces, 0 keeps, -1 removes; anything else is refused.
fn over(default: f64, goal: f64) -> Option<f64> {
    if goal > 0.0 && goal.is_finite() {
        Some(goal)
    } else if goal == 0.0 {
        Some(default)
    } else if (goal + 1.0).abs() < f64::from(f32::EPSILON) {
        Some(0.0)
    } else {
        None
    }
}

impl Tolerances {
    /// The same defaults for every joint.
    pub fn uniform(
        joints: &[String],
        path: f64,
        goal: f64,
        stopped_velocity: f64,
        goal_time_secs: f64,
    ) -> Self {
        let n = joints.len();
        Self {
            joints: joints.to_vec(),
            path_position: vec![path; n],
            goal_position: vec![goal; n],
            goal_velocity: vec![stopped_velocity; n],
            goal_time_secs,
        }
    }

    /// These defaults with a goal's tolerances over them, and a warning when the goal's were refused.
    pub fn with_goal(
        &self,
        path: &[JointTolerance],
        goal: &[JointTolerance],
        goal_time_secs: f64,
    ) -> (Self, Option<String>) {
        let mut out = self.clone();
        let apply = |list: &[JointTolerance], which: &str, out: &mut Self| -> Result<(), String> {
            for t in list {
                let i = (self.joints.iter().position(|j| *j == t.name)).ok_or_else(|| {
                    format!(
                        "joint `{}` in the goal's {which} is not a controller joint",
                        t.name
                    )
                })?;
                let (position, velocity) = if which == "path_tolerance" {
                    (&mut out.path_position[i], None)
                } else {
                    (&mut out.goal_position[i], Some(&mut out.goal_velocity[i]))
                };
                *position = over(*position, t.position).ok_or_else(|| {
                    format!(
                        "joint `{}` has position {} in the goal's {which}",
                        t.name, t.position
                    )
                })?;
                if let Some(velocity) = velocity {
                    *velocity = over(*velocity, t.velocity).ok_or_else(|| {
                        format!(
                            "joint `{}` has velocity {} in the goal's {which}",
                            t.name, t.velocity
                        )
                    })?;
                }
            }
            Ok(())
        };
        let resolved = apply(path, "path_tolerance", &mut out)
            .and_then(|()| apply(goal, "goal_tolerance", &mut out))
            .and_then(|()| {
                out.goal_time_secs = over(self.goal_time_secs, goal_time_secs)
                    .ok_or_else(|| format!("goal_time_tolerance is {goal_time_secs} s"))?;
                Ok(())
            });
        match resolved {
            Ok(()) => (out, None),
            Err(why) => (self.clone(), Some(format!("{why}: the default tolerances apply"))),
        }
    }

    /// The first joint further than its path tolerance from `desired`, as the error that ends the goal.
    pub fn path_violation(&self, desired: &[f64], actual: &[f64]) -> Option<GoalError> {
        let i = (0..self.joints.len()).find(|&i| {
            let tolerance = self.path_position[i];
            tolerance > 0.0 && (desired[i] - actual[i]).abs() > tolerance
        })?;
        Some(GoalError::new(
            ErrorCode::PathToleranceViolated,
            format!(
                "Aborted due to path tolerance violation: joint `{}` is {:.6} from its command {:.6}, over its path tolerance {}",
                self.joints[i],
                (desired[i] - actual[i]).abs(),
                desired[i],
                self.path_position[i]
            ),
        ))
    }

    /// `secs_since_end` after the motion ended on `last`: reached, still waiting, or out of time.
    pub fn at_end(
        &self,
        last: &[f64],
        actual: &[f64],
        velocity: Option<&[f64]>,
        secs_since_end: f64,
    ) -> AtEnd {
        let outside = (0..self.joints.len()).find_map(|i| {
            let (tolerance, error) = (self.goal_position[i], (last[i] - actual[i]).abs());
            if tolerance > 0.0 && error > tolerance {
                return Some(format!(
                    "joint `{}` is {error:.6} from the last point, over its goal tolerance {tolerance}",
                    self.joints[i]
                ));
            }
            let speed = velocity.map_or(0.0, |v| v[i].abs());
            let stopped = self.goal_velocity[i];
            (stopped > 0.0 && speed > stopped).then(|| {
                format!(
                    "joint `{}` still moves at {speed:.6}, over its stopped-velocity tolerance {stopped}",
                    self.joints[i]
                )
            })
        });
        match outside {
            None => AtEnd::Reached,
            Some(why) if self.goal_time_secs > 0.0 && secs_since_end > self.goal_time_secs => {
                AtEnd::Violated(GoalError::new(
                    ErrorCode::GoalToleranceViolated,
                    format!(
                        "Aborted due to goal_time_tolerance exceeding by {:.6} seconds: {why}",
                        secs_since_end - self.goal_time_secs
                    ),
                ))
            }
            Some(_) => AtEnd::Waiting,
        }
    }
}

/// Where a trajectory goal's motion is after a tick, to judge it by.
#[derive(Debug, Clone, Copy)]
pub struct Motion<'a> {
    /// The motion reached its end, or the stop of a cancel completed.
    pub done: bool,
    /// It was a cancel's stop.
    pub cancelled: bool,
    /// The last point (where the motion ends).
    pub last: &'a [f64],
    /// The command the measurement answers.
    pub previous: &'a [f64],
    pub measured: Option<&'a [f64]>,
    pub velocity: Option<&'a [f64]>,
    /// Seconds since the motion ended.
    pub secs_since_end: f64,
}

/// How a trajectory goal stands after a tick.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// Moving within the path tolerances, or done and waiting for the goal tolerances.
    Going,
    Reached,
    Cancelled,
    /// A path tolerance broken while moving, or the goal tolerances not met in time.
    Violated(GoalError),
}

impl Tolerances {
    /// Judge a goal after a tick: path tolerances while it moves, goal tolerances once it is done.
    pub fn judge(&self, m: Motion<'_>) -> Standing {
        if m.done && m.cancelled {
            return Standing::Cancelled;
        }
        let Some(measured) = m.measured else {
            return Standing::Going;
        };
        if !m.done {
            return self
                .path_violation(m.previous, measured)
                .map_or(Standing::Going, Standing::Violated);
        }
        match self.at_end(m.last, measured, m.velocity, m.secs_since_end) {
            AtEnd::Reached => Standing::Reached,
            AtEnd::Waiting => Standing::Going,
            AtEnd::Violated(e) => Standing::Violated(e),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn defaults() -> Tolerances {
        Tolerances::uniform(&["a".into(), "b".into()], 0.1, 0.01, 0.0, 0.5)
    }

    fn tol(name: &str, position: f64) -> JointTolerance {
        JointTolerance {
            name: name.into(),
            position,
            velocity: 0.0,
            acceleration: 0.0,
        }
    }

    #[test]
    fn a_goal_overrides_keeps_or_removes_each_default() {
        let (t, warning) = defaults().with_goal(&[tol("a", 0.2), tol("b", -1.0)], &[tol("a", 0.0)], 0.0);
        assert_eq!(warning, None);
        assert_eq!(t.path_position, vec![0.2, 0.0]);
        assert_eq!(t.goal_position, vec![0.01, 0.01]);
        assert_eq!(t.goal_time_secs, 0.5);
    }

    #[test]
    fn a_bad_entry_falls_back_to_every_default_with_a_reason() {
        let (t, warning) = defaults().with_goal(&[tol("a", 0.2), tol("c", 0.3)], &[], 0.0);
        assert_eq!(t, defaults());
        assert!(warning.unwrap().contains("joint `c`"));
        let (_, warning) = defaults().with_goal(&[tol("a", -2.0)], &[], 0.0);
        assert!(warning.unwrap().contains("position -2"));
    }

    #[test]
    fn path_and_goal_checks() {
        let t = defaults();
        assert!(t.path_violation(&[0.0, 0.0], &[0.05, 0.0]).is_none());
        let e = t.path_violation(&[0.0, 0.0], &[0.0, 0.15]).unwrap();
        assert_eq!(e.code, ErrorCode::PathToleranceViolated);
        assert!(e.message.contains("joint `b`"));
        assert_eq!(t.at_end(&[1.0, 1.0], &[1.005, 1.0], None, 0.0), AtEnd::Reached);
        assert_eq!(t.at_end(&[1.0, 1.0], &[1.05, 1.0], None, 0.4), AtEnd::Waiting);
        match t.at_end(&[1.0, 1.0], &[1.05, 1.0], None, 0.6) {
            AtEnd::Violated(e) => assert_eq!(e.code, ErrorCode::GoalToleranceViolated),
            other => panic!("{other:?}"),
        }
    }
}
