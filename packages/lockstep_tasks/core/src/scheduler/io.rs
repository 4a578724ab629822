//! What the scheduler and its caller exchange: the outputs to carry out or publish, the task's outcome, what
//! the environment says at dispatch time, and why an operator's request is refused.

use crate::params::Params;
use crate::tree::{Change, Id};

/// What the caller must do or publish, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A status change (path, old, new; the reason is in the status).
    Status(Change),
    /// Send this leaf's goal to its actuator.
    SendGoal {
        leaf: Id,
        path: String,
        actuator: String,
        params: Params,
    },
    /// Cancel this leaf's goal (sent, whether or not accepted yet).
    CancelGoal { leaf: Id, path: String },
    /// Pause this leaf's goal where it is (a pausable actuator, on pause): the goal stays out.
    PauseGoal { leaf: Id, path: String },
    /// Go on with this leaf's paused goal (on resume); no new goal is sent.
    ResumeGoal { leaf: Id, path: String },
    /// Every subtask of the group under `path` completed (a report to the level above).
    GroupCompleted { path: String, level: usize },
    /// `path` (at `level`) is interrupted for `reason`: one per subtask from the interrupted one to the root.
    Interrupted {
        path: String,
        level: usize,
        reason: String,
    },
    /// `path` (at `level`) failed and is tried again (`attempt` of `attempts`) in `after_s` seconds.
    Retry {
        path: String,
        level: usize,
        attempt: u32,
        attempts: u32,
        after_s: f64,
        reason: String,
    },
    /// `path` (at `level`) ran for its `timeout_s` (`after_s`) and fails.
    TimedOut {
        path: String,
        level: usize,
        after_s: f64,
    },
    /// `path` (at `level`) failed for good for `reason`: `fallback_path` runs in its place.
    Fallback {
        path: String,
        level: usize,
        fallback_path: String,
        reason: String,
    },
    /// The task is over.
    Finished(Outcome),
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Completed,
    Failed { path: String, reason: String },
    Cancelled,
}

/// What the environment says at dispatch time: `condition` attributes (a Datalog query over facts from topics,
/// evaluated in the node) and whether an actuator is busy.
pub trait Conditions {
    fn holds(&self, query: &str) -> bool;

    /// Seconds `actuator` stays busy (e.g. an arm in use), if it is: the action about to be sent to
    /// it gets a delay attribute of that length instead.
    fn busy_secs(&self, _actuator: &str) -> Option<f64> {
        None
    }

    /// Whether `actuator` may take a goal now. An action whose actuator may not stays sendable (no attribute,
    /// no status change) and is considered again at the next step: the node holds dispatch back while a
    /// goal it cancelled on that actuator has not ended yet.
    fn available(&self, _actuator: &str) -> bool {
        true
    }

    /// Whether `actuator` can pause a goal where it is and go on with it later (an arm stopping along its
    /// path): on [`super::Scheduler::pause_with`] its goal is paused ([`Output::PauseGoal`]) instead of cancelled,
    /// and resumed on [`super::Scheduler::resume`] instead of sent again.
    fn pausable(&self, _actuator: &str) -> bool {
        false
    }
}

impl<F: Fn(&str) -> bool> Conditions for F {
    fn holds(&self, query: &str) -> bool {
        self(query)
    }
}

/// Why an operator's request is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refused {
    #[error("no subtask `{0}` in this task")]
    UnknownPath(String),
    #[error("`{path}` is {status}: attributes apply to subtasks that have not finished")]
    Finished { path: String, status: String },
    #[error("`{0}` is an action already running: a delay or condition has nothing left to hold back (an interrupt does)")]
    RunningLeaf(String),
    #[error("the task is over")]
    Over,
    #[error("the task is not paused")]
    NotPaused,
}

/// Why a task cannot be rebuilt.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RestoreError {
    #[error("no subtask `{0}` in this task")]
    UnknownPath(String),
    #[error("`{0}` is not an action: only actions are restored as completed")]
    NotALeaf(String),
}
