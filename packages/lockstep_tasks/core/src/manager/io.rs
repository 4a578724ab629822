//! What the manager and its node exchange: the events the node observes, the commands it carries out, the
//! messages it publishes (plain data, turned into ROS messages by the node), and [`Setup`], a loaded
//! configuration with the node's goal check.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value;

use crate::config::Config;
use crate::journal;
use crate::scheduler::Outcome;
use crate::tree::Id;

/// A loaded configuration as the manager sees it: the configuration itself, where each robot's actuators
/// are served, and the node's check of a goal against its actuator's goal type.
pub trait Setup {
    fn config(&self) -> &Config;
    /// (Robot, actuator name) -> its action server, fully qualified (as `/actuator_states` names it).
    fn servers(&self) -> &BTreeMap<(String, String), String>;
    /// Whether `goal` (JSON) is a valid goal of `robot`'s `actuator`; why not otherwise.
    fn check_goal(&self, robot: &str, actuator: &str, goal: &Value) -> Result<(), String>;
}

/// A setup whose goals are not type-checked (no ROS type support at hand): in-process runs, benchmarks and
/// tests. Each robot's actuators are served at `/<robot>/<server>` (at `/<server>` for the robot "").
pub struct Unchecked {
    pub config: Config,
    pub servers: BTreeMap<(String, String), String>,
}

impl Unchecked {
    pub fn fleet(config: Config, robots: &[&str]) -> Self {
        let servers = (robots.iter())
            .flat_map(|r| config.actuators.iter().map(move |(name, a)| (r, name, a)))
            .map(|(r, name, a)| {
                let server = a.server.trim_start_matches('/');
                let at = if r.is_empty() {
                    format!("/{server}")
                } else {
                    format!("/{r}/{server}")
                };
                ((r.to_string(), name.clone()), at)
            })
            .collect();
        Self { config, servers }
    }
}

impl Setup for Unchecked {
    fn config(&self) -> &Config {
        &self.config
    }
    fn servers(&self) -> &BTreeMap<(String, String), String> {
        &self.servers
    }
    fn check_goal(&self, _: &str, _: &str, _: &Value) -> Result<(), String> {
        Ok(())
    }
}

/// An ExecuteTask goal as requested.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoalRequest {
    /// The goal's UUID, for the log.
    pub uuid: String,
    pub task_type: String,
    pub parameters_json: String,
    pub priority: i32,
    /// The robot it names; "" for any.
    pub robot: String,
}

/// An AddAttribute request's fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttributeRequest {
    pub kind: String,
    pub delay_s: f64,
    pub query: String,
    pub reason: String,
}

/// Tells the answers to requests apart: the node gives each request a number and gets it back with the answer.
pub type RequestId = u64;

/// What the node observes. Each comes with the time it is handled at (see [`super::Manager::handle`]).
pub enum Event<S> {
    /// A new ExecuteTask goal: answered with [`Command::AcceptGoal`] or [`Command::RejectGoal`].
    Goal {
        request: RequestId,
        goal: GoalRequest,
    },
    /// An accepted goal that the node could not answer after all: the task is dropped unstarted.
    GoalLost {
        task: String,
    },
    /// The ExecuteTask client cancels the task.
    Cancel {
        task: String,
    },
    /// A leaf's actuator goal was accepted; `goal_id` is its UUID.
    Accepted {
        task: String,
        leaf: Id,
        generation: u64,
        goal_id: [u8; 16],
    },
    /// Feedback of a leaf's actuator goal (JSON).
    Feedback {
        task: String,
        leaf: Id,
        generation: u64,
        feedback: Value,
    },
    /// A leaf's actuator goal could not be sent, was rejected, or its server is not there.
    Refused {
        task: String,
        leaf: Id,
        generation: u64,
        reason: String,
    },
    /// A leaf's actuator goal ended.
    Done {
        task: String,
        leaf: Id,
        generation: u64,
        success: bool,
        message: String,
    },
    Pause {
        request: RequestId,
        task: String,
        reason: String,
    },
    Resume {
        request: RequestId,
        task: String,
    },
    AddAttribute {
        request: RequestId,
        task: String,
        path: String,
        attribute: AttributeRequest,
    },
    /// ListTasks: answered with [`Command::Listed`].
    List {
        request: RequestId,
    },
    /// How an action whose goal was out when the manager stopped ended, as its actuator says: `Some(true)`
    /// succeeded, `Some(false)` did not, `None` unknown (the actuator forgot it, or did not answer).
    Recovered {
        task: String,
        path: String,
        outcome: Option<bool>,
        reason: String,
    },
    /// A pausable actuator could not pause or resume its goal.
    PauseFailed {
        task: String,
        leaf: Id,
        reason: String,
    },
    /// The node reloaded the configuration (or why it could not).
    Reload {
        request: RequestId,
        setup: Result<Rc<S>, String>,
    },
    /// A `/task_facts` message.
    Facts(String),
    /// An `/actuator_states` message.
    ActuatorState {
        server: String,
        busy: bool,
        remaining_s: f64,
    },
    /// The state file read at start: its unfinished tasks wait as interrupted for `resume_task`.
    Restore(journal::State),
    /// A robot's `battery_state`.
    Battery {
        robot: String,
        battery: super::energy::BatteryView,
    },
    /// Time passed: delays, conditions and time-outs are checked.
    Tick,
}

/// How loud a log line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// What the node must do, in order.
pub enum Command<S> {
    Log(Level, String),
    /// Accept the goal of `request` as `task`.
    AcceptGoal {
        request: RequestId,
        task: String,
    },
    /// Reject the goal of `request` (the log says why).
    RejectGoal {
        request: RequestId,
    },
    /// Send `goal` to `robot`'s `actuator` (through `setup`'s clients); its events come back tagged with
    /// task, leaf and generation.
    SendGoal {
        task: String,
        leaf: Id,
        generation: u64,
        robot: String,
        actuator: String,
        goal: Value,
        setup: Rc<S>,
    },
    /// Cancel the accepted goal of `task` with this generation.
    CancelGoal {
        task: String,
        generation: u64,
    },
    /// Pause (or resume) a pausable actuator's goal; a failure comes back as [`Event::PauseFailed`].
    PauseGoal {
        task: String,
        leaf: Id,
        robot: String,
        actuator: String,
        resume: bool,
        setup: Rc<S>,
    },
    /// Ask `robot`'s `actuator` how the goal `goal_id` of an earlier life of the manager ended; the answer
    /// comes back as [`Event::Recovered`].
    AskResult {
        task: String,
        path: String,
        robot: String,
        actuator: String,
        goal_id: [u8; 16],
        setup: Rc<S>,
    },
    /// Publish on `task_events`.
    Publish(TaskEvent),
    /// Publish the task's ExecuteTask feedback.
    Feedback(Feedback),
    /// End the task's ExecuteTask goal: succeeded, cancelled or aborted as `outcome` says.
    Finish {
        task: String,
        outcome: Outcome,
        result: TaskResult,
    },
    /// Answer a service request: success with a message, or the reason it is refused.
    Reply {
        request: RequestId,
        answer: Result<String, String>,
    },
    /// Answer a ListTasks request.
    Listed {
        request: RequestId,
        listing: Listing,
    },
    /// Write the state file.
    WriteJournal(journal::State),
}

/// The kinds of `task_events` (TaskEvent's constants).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EventKind {
    #[default]
    Status,
    GroupCompleted,
    Interrupted,
    Finished,
    Restored,
    Retry,
    TimedOut,
    Fallback,
    /// A robot waits for a lane or station another holds (or steps aside to let it pass).
    Waiting,
}

/// One `task_events` message (stamped by the node).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskEvent {
    pub task_id: String,
    pub robot: String,
    pub kind: EventKind,
    pub path: String,
    pub level: u32,
    pub old_status: String,
    pub new_status: String,
    pub reason: String,
}

/// ExecuteTask feedback.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Feedback {
    pub task_id: String,
    pub state: String,
    pub level_names: Vec<String>,
    pub robot: String,
    pub level_total: Vec<u32>,
    pub level_completed: Vec<u32>,
    pub level_running: Vec<u32>,
    pub running_paths: Vec<String>,
}

/// ExecuteTask result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskResult {
    pub task_id: String,
    pub success: bool,
    pub outcome: String,
    pub summary: String,
    pub failed_path: String,
    pub reason: String,
    pub leaves_executed: u32,
    pub group_reports: u32,
    pub robot: String,
}

/// ListTasks' view of a task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskInfo {
    pub task_id: String,
    pub task_type: String,
    pub priority: i32,
    pub state: String,
    pub robot: String,
    pub leaves_total: u32,
    pub leaves_completed: u32,
    pub last_completed_leaf: String,
    pub running_paths: Vec<String>,
}

/// ListTasks' view of a robot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RobotInfo {
    pub name: String,
    pub station: String,
    /// busy | idle
    pub state: String,
    pub running_task: String,
    pub queued_tasks: u32,
}

/// The answer to ListTasks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    pub tasks: Vec<TaskInfo>,
    pub actuators: Vec<super::environment::ActuatorLoad>,
    pub robots: Vec<RobotInfo>,
}
