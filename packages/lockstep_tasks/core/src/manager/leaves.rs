//! A task's actuator goals: sending one (tagged so its events find their way back), cancelling one (now if
//! accepted, else the moment it is), pausing one, and what becomes of each as its actuator reports.

use serde_json::Value;

use super::environment::Environment;
use super::goals::actuator_goal;
use super::io::{Command, Setup};
use super::task::{LeafGoal, Task};
use super::Manager;
use crate::params::Params;
use crate::scheduler::Conditions as _;
use crate::tree::Id;

impl<S: Setup> Manager<S> {
    /// Send a leaf's goal; its events come back tagged with the task, leaf and generation.
    pub(crate) fn send_goal(
        task: &mut Task<S>,
        leaf: Id,
        path: &str,
        actuator: &str,
        server: &str,
        params: &Params,
        out: &mut Vec<Command<S>>,
    ) -> Result<(), String> {
        let config = (task.setup.config().actuators.get(actuator))
            .ok_or_else(|| format!("actuator `{actuator}` is not configured"))?;
        let mut goal = actuator_goal(path, config, params)?;
        if let (Some(fields), Value::Object(goal)) = (task.resume_with.remove(&leaf), &mut goal) {
            goal.extend(fields);
        }
        task.generation += 1;
        let generation = task.generation;
        task.goals.insert(
            leaf,
            LeafGoal {
                generation,
                accepted: None,
                cancel_pending: false,
                feedback: None,
                actuator: actuator.to_owned(),
                server: server.to_owned(),
            },
        );
        out.push(Command::SendGoal {
            task: task.id.clone(),
            leaf,
            generation,
            robot: task.robot.clone(),
            actuator: actuator.to_owned(),
            goal,
            setup: task.setup.clone(),
        });
        Ok(())
    }

    /// Cancel a leaf's goal: now if accepted, else the moment it is. Its actuator gets no new goal until this
    /// one has ended. A navigation cancelled part way is sent again (after a resume) with the route it had left.
    pub(crate) fn cancel_goal(
        task: &mut Task<S>,
        leaf: Id,
        env: &mut Environment,
        now: f64,
        out: &mut Vec<Command<S>>,
    ) {
        let Some(g) = task.goals.get_mut(&leaf) else {
            return;
        };
        task.cancelled.insert(g.generation, g.server.clone());
        env.draining(&g.server, now);
        let remaining = (g.feedback.as_ref())
            .and_then(|f| f.get("remaining_route"))
            .filter(|r| r.as_array().is_some_and(|a| !a.is_empty()));
        if let Some(route) = remaining {
            let mut fields = serde_json::Map::new();
            fields.insert("route".into(), route.clone());
            task.resume_with.insert(leaf, fields);
        }
        if g.accepted.is_some() {
            out.push(Command::CancelGoal {
                task: task.id.clone(),
                generation: g.generation,
            });
            task.goals.remove(&leaf);
        } else {
            g.cancel_pending = true;
        }
    }

    /// Pause (or resume) a pausable actuator's goal along its path; if it cannot, the node reports
    /// [`super::Event::PauseFailed`] and the goal is cancelled instead.
    pub(crate) fn pause_goal(task: &Task<S>, leaf: Id, resume: bool, out: &mut Vec<Command<S>>) {
        let Some(g) = task.goals.get(&leaf) else { return };
        out.push(Command::PauseGoal {
            task: task.id.clone(),
            leaf,
            robot: task.robot.clone(),
            actuator: g.actuator.clone(),
            resume,
            setup: task.setup.clone(),
        });
    }

    /// A leaf's goal was accepted. One cancelled before that (or a goal of an earlier send) is cancelled now.
    pub(crate) fn accepted(&mut self, id: &str, leaf: Id, generation: u64, goal_id: [u8; 16]) {
        let Some(task) = self.tasks.get_mut(id) else {
            // Cancelled before it was accepted, and its task forgotten since: cancel it now.
            if self.orphans.contains_key(&(id.to_owned(), generation)) {
                let task = id.to_owned();
                self.out.push(Command::CancelGoal { task, generation });
            }
            return;
        };
        let current = task.goals.get(&leaf).is_some_and(|g| g.generation == generation);
        match task.goals.get_mut(&leaf).filter(|_| current) {
            Some(g) if !g.cancel_pending => {
                g.accepted = Some(goal_id);
                // Its goal id goes into the state file: a restart asks the actuator how it ended.
                self.unsaved = true;
            }
            _ => {
                let task_id = id.to_owned();
                self.out.push(Command::CancelGoal {
                    task: task_id,
                    generation,
                });
                task.goals.remove(&leaf);
            }
        }
    }

    /// The latest feedback of a leaf's goal is kept (an interrupted drive goes on with its remaining route).
    pub(crate) fn leaf_feedback(&mut self, id: &str, leaf: Id, generation: u64, feedback: Value) {
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        if let Some(g) = task.goals.get_mut(&leaf).filter(|g| g.generation == generation) {
            g.feedback = Some(feedback);
        }
    }

    /// A leaf's goal ended: `Err` refused (or never sent), `Ok((success, message))` finished. A cancelled
    /// goal that ended frees its actuator.
    pub(crate) fn leaf_ended(
        &mut self,
        id: &str,
        leaf: Id,
        generation: u64,
        end: Result<(bool, String), String>,
    ) {
        let Some(task) = self.tasks.get_mut(id) else {
            if let Some(server) = self.orphans.remove(&(id.to_owned(), generation)) {
                self.env.drained(&server);
            }
            return;
        };
        if let Some(server) = task.cancelled.remove(&generation) {
            self.env.drained(&server);
        }
        if task.goals.get(&leaf).is_none_or(|g| g.generation != generation) {
            return;
        }
        // A stretch of a drive on the shared floor: it goes on unless that was the last one.
        if matches!(end, Ok((true, _))) {
            task.goals.remove(&leaf);
            self.unsaved = true;
            if self.stretch_done(id, leaf) {
                return;
            }
        } else {
            self.drive_ended(id, leaf);
        }
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        let out = match end {
            Err(reason) => {
                let Some(g) = task.goals.remove(&leaf) else { return };
                if g.cancel_pending {
                    return;
                }
                let reason = match self.env.for_robot(&task.robot, self.now).busy_secs(&g.actuator) {
                    Some(secs) => format!("{reason} (it reports busy for another {secs:.2} s)"),
                    None => reason,
                };
                task.sched.leaf_failed(leaf, &reason)
            }
            Ok((success, message)) => {
                task.goals.remove(&leaf);
                self.unsaved = true;
                if success {
                    task.leaves_executed += 1;
                    // A drive that completed leaves the robot at the route's last station.
                    let arrived = (task.sched.tree().nodes[leaf].params.get("route_stations"))
                        .and_then(|s| s.as_array()?.last()?.as_str().map(str::to_owned));
                    if let (Some(station), Some(robot)) = (arrived, self.robots.get_mut(&task.robot)) {
                        robot.station = Some(station);
                    }
                    task.sched.leaf_succeeded(leaf)
                } else {
                    task.sched.leaf_failed(leaf, &message)
                }
            }
        };
        self.apply(id, out);
    }
}
