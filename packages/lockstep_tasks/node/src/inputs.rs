//! What the node's callbacks hand the manager's loop, and how each becomes an event of the state machine.
//! The r2r objects that wait for an answer (goal requests, reply channels, accepted actuator goals) are kept
//! here under the number the state machine knows them by.

use std::collections::BTreeMap;
use std::rc::Rc;

use lockstep_tasks::manager::{AttributeRequest, Event, GoalRequest, RequestId};
use lockstep_tasks::Id;
use r2r::lockstep_interfaces::action::ExecuteTask;
use r2r::lockstep_interfaces::srv::ListTasks;
use tokio::sync::oneshot;

use crate::actuators::{CancelHandle, LeafEvent};
use crate::loaded::Loaded;
use lockstep_tasks_node::action_server::ActionServerGoalRequest;

pub type Reply = oneshot::Sender<Result<String, String>>;

/// What the node's callbacks hand the loop.
pub enum Input {
    Goal(ActionServerGoalRequest<ExecuteTask::Action>),
    Cancel(String),
    Leaf {
        task: String,
        leaf: Id,
        generation: u64,
        event: LeafEvent,
    },
    Pause {
        task: String,
        reason: String,
        reply: Reply,
    },
    Resume {
        task: String,
        reply: Reply,
    },
    AddAttribute {
        task: String,
        path: String,
        attribute: AttributeRequest,
        reply: Reply,
    },
    List(oneshot::Sender<ListTasks::Response>),
    Recovered {
        task: String,
        path: String,
        outcome: Option<bool>,
        reason: String,
    },
    PauseFailed {
        task: String,
        leaf: Id,
        reason: String,
    },
    Reload(Reply),
    Facts(String),
    ActuatorState {
        server: String,
        busy: bool,
        remaining_s: f64,
    },
    /// A robot's `battery_state`.
    Battery {
        robot: String,
        battery: lockstep_tasks::manager::energy::BatteryView,
    },
    Tick,
}

/// What waits for the state machine's answer.
#[derive(Default)]
pub struct Pending {
    next_request: RequestId,
    pub goal_requests: BTreeMap<RequestId, ActionServerGoalRequest<ExecuteTask::Action>>,
    pub replies: BTreeMap<RequestId, Reply>,
    pub lists: BTreeMap<RequestId, oneshot::Sender<ListTasks::Response>>,
    /// Accepted actuator goals not yet ended: (task, generation) -> cancel handle.
    pub handles: BTreeMap<(String, u64), CancelHandle>,
}

/// Reloads the configuration (the node's part: file, clients).
pub type Reload = Box<dyn FnMut() -> Result<Rc<Loaded>, String>>;

impl Pending {
    fn request(&mut self) -> RequestId {
        self.next_request += 1;
        self.next_request
    }

    fn ask(&mut self, reply: Reply) -> RequestId {
        let request = self.request();
        self.replies.insert(request, reply);
        request
    }

    /// The event `input` is; what must be answered later is kept.
    pub fn event(&mut self, input: Input, reload: &mut Reload) -> Event<Loaded> {
        match input {
            Input::Goal(goal) => {
                let request = self.request();
                let wanted = GoalRequest {
                    uuid: goal.uuid.to_string(),
                    task_type: goal.goal.task_type.clone(),
                    parameters_json: goal.goal.parameters_json.clone(),
                    priority: goal.goal.priority,
                    robot: goal.goal.robot.clone(),
                };
                self.goal_requests.insert(request, goal);
                Event::Goal {
                    request,
                    goal: wanted,
                }
            }
            Input::Cancel(task) => Event::Cancel { task },
            Input::Leaf {
                task,
                leaf,
                generation,
                event,
            } => self.leaf(task, leaf, generation, event),
            Input::Pause { task, reason, reply } => Event::Pause {
                request: self.ask(reply),
                task,
                reason,
            },
            Input::Resume { task, reply } => Event::Resume {
                request: self.ask(reply),
                task,
            },
            Input::AddAttribute {
                task,
                path,
                attribute,
                reply,
            } => Event::AddAttribute {
                request: self.ask(reply),
                task,
                path,
                attribute,
            },
            Input::List(reply) => {
                let request = self.request();
                self.lists.insert(request, reply);
                Event::List { request }
            }
            Input::Recovered {
                task,
                path,
                outcome,
                reason,
            } => Event::Recovered {
                task,
                path,
                outcome,
                reason,
            },
            Input::PauseFailed { task, leaf, reason } => Event::PauseFailed { task, leaf, reason },
            Input::Reload(reply) => Event::Reload {
                request: self.ask(reply),
                setup: reload(),
            },
            Input::Facts(text) => Event::Facts(text),
            Input::ActuatorState {
                server,
                busy,
                remaining_s,
            } => Event::ActuatorState {
                server,
                busy,
                remaining_s,
            },
            Input::Battery { robot, battery } => Event::Battery { robot, battery },
            Input::Tick => Event::Tick,
        }
    }

    /// An actuator goal's report; an accepted goal's cancel handle is kept until the goal ends.
    fn leaf(&mut self, task: String, leaf: Id, generation: u64, event: LeafEvent) -> Event<Loaded> {
        match event {
            LeafEvent::Accepted(handle) => {
                let goal_id = handle.goal_id;
                self.handles.insert((task.clone(), generation), handle);
                Event::Accepted {
                    task,
                    leaf,
                    generation,
                    goal_id,
                }
            }
            LeafEvent::Feedback(feedback) => Event::Feedback {
                task,
                leaf,
                generation,
                feedback,
            },
            LeafEvent::Refused(reason) => {
                self.handles.remove(&(task.clone(), generation));
                Event::Refused {
                    task,
                    leaf,
                    generation,
                    reason,
                }
            }
            LeafEvent::Done { success, message } => {
                self.handles.remove(&(task.clone(), generation));
                Event::Done {
                    task,
                    leaf,
                    generation,
                    success,
                    message,
                }
            }
        }
    }
}
