//! One task in the manager: its scheduler, where it is in its robot's queue, and the actuator goals it has out.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use serde_json::Value;

use super::io::{Feedback, Setup, TaskInfo, TaskResult};
use crate::journal::{hex, InFlight, TaskRecord};
use crate::scheduler::{Outcome, Scheduler};
use crate::status::Status;
use crate::tree::Id;

/// Where a task is in the manager's queue.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Waiting for the running task (of equal or higher priority) to end.
    Queued,
    Running,
    /// Paused by an operator (PauseTask); holds the robot until resumed or cancelled.
    Paused,
    /// Paused by a task of higher priority; resumes when that one ends.
    Preempted,
    /// Found unfinished in the state file after a restart; waits for `resume_task`.
    Restored,
    Finished(Outcome),
}

impl State {
    pub fn name(&self) -> &'static str {
        match self {
            State::Queued => "queued",
            State::Running => "running",
            State::Paused => "paused",
            State::Preempted => "preempted",
            State::Restored => "interrupted",
            State::Finished(Outcome::Completed) => "completed",
            State::Finished(Outcome::Failed { .. }) => "failed",
            State::Finished(Outcome::Cancelled) => "cancelled",
        }
    }
}

/// An actuator goal sent for a leaf.
#[derive(Debug, Clone, PartialEq)]
pub struct LeafGoal {
    /// Tells this goal's events from those of an earlier goal of the same leaf (sent before a pause).
    pub generation: u64,
    /// The goal's UUID, once the server accepted it.
    pub accepted: Option<[u8; 16]>,
    /// Cancelled before it was accepted: cancel it the moment it is.
    pub cancel_pending: bool,
    /// The latest feedback (JSON), for resuming where it stopped.
    pub feedback: Option<Value>,
    /// The actuator (configuration key) it went to.
    pub actuator: String,
    /// Its action server, fully qualified.
    pub server: String,
}

pub struct Task<S> {
    pub id: String,
    pub task_type: String,
    /// The goal's parameters with what the manager added (`robot`, `at`): what a restart decomposes again.
    pub parameters: serde_json::Map<String, Value>,
    /// The robot it runs on ("" for the manager's own namespace).
    pub robot: String,
    /// Resume the scheduler when the robot starts it (a restored task that was resumed).
    pub resume_pending: bool,
    /// Restored: actions whose goal was out when the manager stopped, and whose end is being asked of their
    /// actuators; the task does not resume until each is known.
    pub recovering: BTreeSet<String>,
    pub priority: i32,
    /// Arrival order (ties between equal priorities).
    pub seq: u64,
    pub sched: Scheduler,
    pub state: State,
    /// The configuration it was decomposed with (a reload does not change a running task).
    pub setup: Rc<S>,
    /// An ExecuteTask client waits for its feedback and result (not so for a task restored from the state file).
    pub client: bool,
    pub goals: BTreeMap<Id, LeafGoal>,
    /// Goals cancelled and not yet ended: generation -> action server.
    pub cancelled: BTreeMap<u64, String>,
    /// Interrupted because this actuator condition (`blocked_by`) held; resumes by itself when it does not.
    pub blocked: Option<String>,
    pub generation: u64,
    /// Goal fields to replace when a leaf is sent again after an interrupt (the remaining route).
    pub resume_with: BTreeMap<Id, serde_json::Map<String, Value>>,
    pub group_reports: u32,
    pub leaves_executed: u32,
    /// Something changed since the last feedback.
    pub dirty: bool,
    /// When it was accepted [s].
    pub started_s: f64,
    /// Finishing order (1 for the first task to finish), 0 while it has not.
    pub ended: u64,
    /// Its goal named the robot (or it was taken back from a state file): it stays on that robot.
    pub named: bool,
    /// A charging task at its charger, its drive done: how far it charges.
    pub charging: Option<super::charge_policy::Charging>,
}

impl<S: Setup> Task<S> {
    pub fn is_finished(&self) -> bool {
        matches!(self.state, State::Finished(_))
    }

    /// Its state as feedback and ListTasks show it: a running charging task at its charger is `charging`.
    pub fn shown_state(&self) -> &'static str {
        if self.charging.is_some() && self.state == State::Running {
            "charging"
        } else {
            self.state.name()
        }
    }

    /// What the state file keeps of it (an unfinished task).
    pub fn record(&self) -> TaskRecord {
        let tree = self.sched.tree();
        TaskRecord {
            id: self.id.clone(),
            seq: self.seq,
            task_type: self.task_type.clone(),
            parameters: self.parameters.clone(),
            priority: self.priority,
            robot: self.robot.clone(),
            state: self.state.name().to_owned(),
            completed: self.sched.completed_leaves(),
            in_flight: (self.goals.iter())
                .map(|(&leaf, g)| InFlight {
                    path: tree.nodes[leaf].path.clone(),
                    actuator: g.actuator.clone(),
                    goal_id: g.accepted.as_ref().map(hex).unwrap_or_default(),
                })
                .collect(),
        }
    }

    /// Per-level counts and running paths, as ExecuteTask feedback.
    pub fn feedback(&self) -> Feedback {
        let tree = self.sched.tree();
        let mut fb = Feedback {
            task_id: self.id.clone(),
            state: self.shown_state().to_owned(),
            level_names: self.setup.config().levels.clone(),
            robot: self.robot.clone(),
            ..Default::default()
        };
        for level in &tree.levels {
            let count = |s: Status| level.iter().filter(|&&id| tree.nodes[id].status == s).count() as u32;
            fb.level_total.push(level.len() as u32);
            fb.level_completed.push(count(Status::Completed));
            fb.level_running.push(count(Status::Running));
        }
        fb.running_paths = self.running_paths();
        fb
    }

    /// The subtasks running now, e.g. `task/duty[0]/message[1]/action[0]`.
    pub fn running_paths(&self) -> Vec<String> {
        (self.sched.tree().nodes.iter())
            .filter(|n| n.status == Status::Running)
            .map(|n| n.path.clone())
            .collect()
    }

    pub fn info(&self) -> TaskInfo {
        let tree = self.sched.tree();
        let leaves: Vec<Id> = tree.leaves().collect();
        TaskInfo {
            robot: self.robot.clone(),
            last_completed_leaf: self.sched.last_completed_leaf().unwrap_or_default(),
            task_id: self.id.clone(),
            task_type: self.task_type.clone(),
            priority: self.priority,
            state: self.shown_state().to_owned(),
            leaves_total: leaves.len() as u32,
            leaves_completed: leaves
                .iter()
                .filter(|&&id| tree.nodes[id].status == Status::Completed)
                .count() as u32,
            running_paths: self.running_paths(),
        }
    }

    /// The result for the ExecuteTask client, at `now` [s].
    pub fn result(&self, outcome: &Outcome, now: f64) -> TaskResult {
        let secs = now - self.started_s;
        let mut result = TaskResult {
            task_id: self.id.clone(),
            leaves_executed: self.leaves_executed,
            group_reports: self.group_reports,
            robot: self.robot.clone(),
            ..Default::default()
        };
        match outcome {
            Outcome::Completed => {
                result.success = true;
                result.outcome = "completed".into();
                result.summary = format!(
                    "{} completed: {} actions, {} group reports, {secs:.2} s",
                    self.task_type, self.leaves_executed, self.group_reports
                );
            }
            Outcome::Failed { path, reason } => {
                result.outcome = "failed".into();
                result.summary = format!("{} failed at {path}: {reason}", self.task_type);
                result.failed_path = path.clone();
                result.reason = reason.clone();
            }
            Outcome::Cancelled => {
                result.outcome = "cancelled".into();
                result.summary = format!(
                    "{} cancelled after {} actions, {secs:.2} s",
                    self.task_type, self.leaves_executed
                );
            }
        }
        result
    }
}
