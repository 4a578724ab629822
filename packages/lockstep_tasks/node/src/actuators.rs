//! Actuator action clients: one typed r2r client per actuator of the configuration, chosen by its action
//! type. Goals are built from the action's parameters through the configuration's goal mapping and checked
//! against the goal type before anything is sent (a bad field is an error naming the subtask and the field,
//! never a panic). Each goal reports back to the manager as [`LeafEvent`]s.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt as _;
use lockstep_tasks::config::Actuator;
use r2r::lockstep_interfaces::action::{Display, Lift, Load, Localize, MovePlay, Navigate, Prompt, Roll};
use r2r::lockstep_interfaces::srv::{PauseMotion, ResumeMotion};

use lockstep_tasks::robots::Robot;
use serde_json::Value;

/// The action types the manager can drive (their goals are type-checked before sending).
pub const KNOWN_TYPES: [&str; 8] = [
    "lockstep_interfaces/action/Navigate",
    "lockstep_interfaces/action/Localize",
    "lockstep_interfaces/action/Lift",
    "lockstep_interfaces/action/Roll",
    "lockstep_interfaces/action/Load",
    "lockstep_interfaces/action/Display",
    "lockstep_interfaces/action/Prompt",
    "lockstep_interfaces/action/MovePlay",
];

/// Goal requests sent before an actuator is given up on (each waits `server_wait_s` for its response).
const GOAL_ATTEMPTS: u32 = 3;

/// What happens to one goal, as the manager hears it.
pub enum LeafEvent {
    /// The server accepted it; `cancel` sends a cancel request for it.
    Accepted(CancelHandle),
    /// Feedback from the server (JSON).
    Feedback(Value),
    /// It could not be sent or was refused, or the server is not there.
    Refused(String),
    /// It ended: succeeded or not (aborted, cancelled), with the result's message.
    Done { success: bool, message: String },
}

/// Sends a cancel request for an accepted goal; `goal_id` is the goal's UUID (kept in the state file, so a
/// restarted manager can ask the actuator how the goal ended).
pub struct CancelHandle {
    cancel: Box<dyn Fn() + Send>,
    pub goal_id: [u8; 16],
}

impl CancelHandle {
    pub fn cancel(&self) {
        (self.cancel)();
    }
}

/// Where a goal's events go: the manager's channel, tagged by the caller.
pub type Report = Box<dyn Fn(LeafEvent) + Send + Sync>;

/// One actuator's client.
pub trait Client: Send {
    /// The goal type's field names.
    fn goal_fields(&self) -> Vec<String>;
    /// Whether `goal` (JSON) is a valid goal of this type; the serde error otherwise.
    fn check(&self, goal: &Value) -> Result<(), String>;
    /// Wait (at most `wait`) for the server, send `goal`, and report what becomes of it.
    fn send(&self, goal: Value, wait: Duration, report: Report);
    /// Ask the server how the goal `goal_id` (sent by an earlier life of the manager) ends: its result
    /// (`Done`, once the goal has ended), or `Refused` when the server does not know the goal or does not
    /// answer within `wait`.
    fn result_of(&self, goal_id: [u8; 16], wait: Duration, report: Report);
}

struct Typed<T: r2r::WrappedActionTypeSupport> {
    client: r2r::ActionClient<T>,
    /// The action's get_result service, for goals of an earlier life of the manager.
    get_result: std::sync::Arc<r2r::Client<T::GetResult>>,
    server: String,
}

/// Wait (at most `wait`) until the action server is there; why not otherwise.
async fn server_ready(
    available: r2r::Result<impl std::future::Future<Output = r2r::Result<()>>>,
    wait: Duration,
    server: &str,
) -> Result<(), String> {
    let available = available.map_err(|e| format!("{server}: {e}"))?;
    match tokio::time::timeout(wait, available).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(format!(
            "no action server {server} within {} s",
            wait.as_secs_f64()
        )),
    }
}

/// ROS 2's GoalStatus values (action_msgs/GoalStatus).
const STATUS_UNKNOWN: i8 = 0;
const STATUS_SUCCEEDED: i8 = 4;

/// A goal's end as the manager hears it: success needs the status SUCCEEDED and no `success: false` in the
/// result; the message is the result's, else the status.
fn done(server: &str, succeeded: bool, status: &str, result: Value) -> LeafEvent {
    let message = (result.get("message").and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned();
    let success = succeeded && result.get("success").and_then(Value::as_bool).unwrap_or(true);
    let message = if success || !message.is_empty() {
        message
    } else {
        format!("{server}: goal {status}")
    };
    LeafEvent::Done { success, message }
}

/// The handle the manager cancels the accepted goal `handle` (of action server `server`) with.
fn cancel_handle<T>(handle: r2r::ActionClientGoal<T>, server: String) -> CancelHandle
where
    T: r2r::WrappedActionTypeSupport + 'static,
{
    let goal_id = *handle.uuid.as_bytes();
    CancelHandle {
        cancel: Box::new(move || {
            match handle.cancel() {
                Ok(answer) => {
                    // The answer (accepted, or already finished) matters less than the goal's end, which
                    // comes as its result.
                    tokio::spawn(answer);
                }
                Err(e) => r2r::log_warn!("lockstep_task_manager", "cancel to {server}: {e}"),
            }
        }),
        goal_id,
    }
}

impl<T> Client for Typed<T>
where
    T: r2r::WrappedActionTypeSupport + 'static,
    T::Goal: serde::de::DeserializeOwned + serde::Serialize + Default + Clone + Send,
    T::Result: serde::Serialize + Send,
    T::Feedback: serde::Serialize + Send,
    <T::GetResult as r2r::WrappedServiceTypeSupport>::Request: Send,
    <T::GetResult as r2r::WrappedServiceTypeSupport>::Response: Send,
{
    fn goal_fields(&self) -> Vec<String> {
        match serde_json::to_value(T::Goal::default()) {
            Ok(Value::Object(fields)) => fields.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    fn check(&self, goal: &Value) -> Result<(), String> {
        serde_json::from_value::<T::Goal>(goal.clone())
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn send(&self, goal: Value, wait: Duration, report: Report) {
        let client = self.client.clone();
        let server = self.server.clone();
        tokio::spawn(async move {
            let goal: T::Goal = match serde_json::from_value(goal) {
                Ok(goal) => goal,
                Err(e) => return report(LeafEvent::Refused(format!("goal for {server}: {e}"))),
            };
            if let Err(reason) = server_ready(r2r::Node::is_available(&client), wait, &server).await {
                return report(LeafEvent::Refused(reason));
            }
            // A lost goal response (the server could not answer: it had not discovered this client's reader
            // yet) leaves the goal unstarted there; sending it again is what a ROS 2 client does.
            let mut attempt = 0;
            let (handle, result, mut feedback) = loop {
                attempt += 1;
                let response = match client.send_goal_request(goal.clone()) {
                    Ok(response) => response,
                    Err(e) => return report(LeafEvent::Refused(format!("sending to {server}: {e}"))),
                };
                match tokio::time::timeout(wait, response).await {
                    Ok(Ok(accepted)) => break accepted,
                    Ok(Err(r2r::Error::RCL_RET_ACTION_GOAL_REJECTED)) => {
                        return report(LeafEvent::Refused(format!(
                            "{server} rejected the goal (busy, or a goal it cannot run: its log says which)"
                        )))
                    }
                    Ok(Err(e)) => return report(LeafEvent::Refused(format!("{server}: {e}"))),
                    Err(_) if attempt < GOAL_ATTEMPTS => r2r::log_warn!(
                        "lockstep_task_manager",
                        "no goal response from {server} within {} s; sending the goal again",
                        wait.as_secs_f64()
                    ),
                    Err(_) => {
                        return report(LeafEvent::Refused(format!(
                            "no goal response from {server} in {GOAL_ATTEMPTS} attempts of {} s",
                            wait.as_secs_f64()
                        )))
                    }
                }
            };
            report(LeafEvent::Accepted(cancel_handle(handle, server.clone())));
            let report = std::sync::Arc::new(report);
            let feedback_report = report.clone();
            // Drained always, so the client's channel never fills; the manager keeps the latest.
            tokio::spawn(async move {
                while let Some(f) = feedback.next().await {
                    feedback_report(LeafEvent::Feedback(
                        serde_json::to_value(f).unwrap_or(Value::Null),
                    ));
                }
            });
            let event = match result.await {
                Ok((status, result)) => done(
                    &server,
                    status == r2r::GoalStatus::Succeeded,
                    &format!("{status:?}"),
                    serde_json::to_value(result).unwrap_or(Value::Null),
                ),
                Err(e) => LeafEvent::Done {
                    success: false,
                    message: format!("{server}: no result ({e})"),
                },
            };
            report(event);
        });
    }

    fn result_of(&self, goal_id: [u8; 16], wait: Duration, report: Report) {
        let client = self.get_result.clone();
        let server = self.server.clone();
        tokio::spawn(async move {
            if let Err(reason) = server_ready(r2r::Node::is_available(&*client), wait, &server).await {
                return report(LeafEvent::Refused(reason));
            }
            let uuid = r2r::unique_identifier_msgs::msg::UUID {
                uuid: goal_id.to_vec(),
            };
            let answer = match client.request(&T::make_result_request_msg(uuid)) {
                Ok(answer) => answer.await,
                Err(e) => return report(LeafEvent::Refused(format!("{server}: {e}"))),
            };
            // The answer comes once the goal has ended (a goal still running is waited for).
            let event = match answer.map(T::destructure_result_response_msg) {
                Ok((STATUS_UNKNOWN, _)) => {
                    LeafEvent::Refused(format!("{server} does not know the goal (any more)"))
                }
                Ok((status, result)) => done(
                    &server,
                    status == STATUS_SUCCEEDED,
                    &format!("status {status}"),
                    serde_json::to_value(result).unwrap_or(Value::Null),
                ),
                Err(e) => LeafEvent::Refused(format!("{server}: {e}")),
            };
            report(event);
        });
    }
}

fn typed<T>(node: &mut r2r::Node, server: &str) -> r2r::Result<Box<dyn Client>>
where
    T: r2r::WrappedActionTypeSupport + 'static,
    T::Goal: serde::de::DeserializeOwned + serde::Serialize + Default + Clone + Send,
    T::Result: serde::Serialize + Send,
    T::Feedback: serde::Serialize + Send,
    <T::GetResult as r2r::WrappedServiceTypeSupport>::Request: Send,
    <T::GetResult as r2r::WrappedServiceTypeSupport>::Response: Send,
{
    let get_result = node.create_client::<T::GetResult>(
        &format!("{server}/_action/get_result"),
        lockstep_ros::qos::reliable(10),
    )?;
    Ok(Box::new(Typed::<T> {
        client: node.create_action_client::<T>(server)?,
        get_result: std::sync::Arc::new(get_result),
        server: server.to_owned(),
    }))
}

/// Make `robot`'s clients of every actuator, checking each goal mapping against its goal type. Errors name
/// the configuration key (`actuators.navigation.type`, `actuators.navigation.goal.rout`).
pub fn clients(
    node: &mut r2r::Node,
    actuators: &BTreeMap<String, Actuator>,
    robot: &Robot,
) -> Result<BTreeMap<String, Box<dyn Client>>, String> {
    let mut out = BTreeMap::new();
    for (name, actuator) in actuators {
        let server = robot.server(&actuator.server);
        let made = match actuator.action_type.as_str() {
            "lockstep_interfaces/action/Navigate" => typed::<Navigate::Action>(node, &server),
            "lockstep_interfaces/action/Localize" => typed::<Localize::Action>(node, &server),
            "lockstep_interfaces/action/Lift" => typed::<Lift::Action>(node, &server),
            "lockstep_interfaces/action/Roll" => typed::<Roll::Action>(node, &server),
            "lockstep_interfaces/action/Load" => typed::<Load::Action>(node, &server),
            "lockstep_interfaces/action/Display" => typed::<Display::Action>(node, &server),
            "lockstep_interfaces/action/Prompt" => typed::<Prompt::Action>(node, &server),
            "lockstep_interfaces/action/MovePlay" => typed::<MovePlay::Action>(node, &server),
            other => {
                return Err(format!(
                    "actuators.{name}.type: `{other}` is not an action type the manager drives (known: {})",
                    KNOWN_TYPES.join(", ")
                ))
            }
        };
        let client = made.map_err(|e| format!("actuators.{name}.server: `{server}`: {e}"))?;
        let fields = client.goal_fields();
        for field in actuator.goal.keys() {
            if !fields.contains(field) {
                return Err(format!(
                    "actuators.{name}.goal.{field}: {} goals have no field `{field}` (fields: {})",
                    actuator.action_type,
                    fields.join(", ")
                ));
            }
        }
        out.insert(name.clone(), client);
    }
    Ok(out)
}

/// An actuator that pauses along its path (the interpolation player's `pause` and `resume` services)
/// instead of having its goal cancelled when the task pauses.
#[derive(Clone)]
pub struct Pauser {
    pause: std::sync::Arc<r2r::Client<PauseMotion::Service>>,
    resume: std::sync::Arc<r2r::Client<ResumeMotion::Service>>,
    names: (String, String),
}

impl Pauser {
    /// The pause and resume clients of `robot`'s actuator, if it names its services.
    pub fn new(node: &mut r2r::Node, actuator: &Actuator, robot: &Robot) -> r2r::Result<Option<Self>> {
        let Some(services) = &actuator.pause else {
            return Ok(None);
        };
        let names = (robot.server(&services.pause), robot.server(&services.resume));
        Ok(Some(Self {
            pause: std::sync::Arc::new(
                node.create_client::<PauseMotion::Service>(&names.0, lockstep_ros::qos::reliable(10))?,
            ),
            resume: std::sync::Arc::new(
                node.create_client::<ResumeMotion::Service>(&names.1, lockstep_ros::qos::reliable(10))?,
            ),
            names,
        }))
    }

    /// Pause (the shortest stop within every joint limit); the answer is logged; `failed` is called with the
    /// reason when the actuator could not pause (its goal is then cancelled instead).
    pub fn pause(&self, wait: Duration, failed: Box<dyn FnOnce(String) + Send>) {
        let client = self.pause.clone();
        let name = self.names.0.clone();
        tokio::spawn(async move {
            let answer = call(&client, PauseMotion::Request { stop_time_secs: 0.0 }, wait).await;
            match answer {
                Ok(r) if r.success => r2r::log_info!(
                    "lockstep_task_manager",
                    "{name}: pausing along the path in {:.2} s",
                    r.stop_time_secs
                ),
                Ok(r) => failed(format!("{name} refused to pause: {}", r.message)),
                Err(e) => failed(format!("{name}: {e}")),
            }
        });
    }

    /// Resume at the speed before the pause; `failed` as for [`Self::pause`].
    pub fn resume(&self, wait: Duration, failed: Box<dyn FnOnce(String) + Send>) {
        let client = self.resume.clone();
        let name = self.names.1.clone();
        tokio::spawn(async move {
            let request = ResumeMotion::Request {
                start_time_secs: 0.0,
                speed_factor: 0.0,
            };
            match call(&client, request, wait).await {
                Ok(r) if r.success => {}
                Ok(r) => failed(format!("{name} refused to resume: {}", r.message)),
                Err(e) => failed(format!("{name}: {e}")),
            }
        });
    }
}

/// Call a service: wait for it (at most `wait`), ask, and wait for the answer (at most `wait`).
async fn call<S>(client: &r2r::Client<S>, request: S::Request, wait: Duration) -> Result<S::Response, String>
where
    S: r2r::WrappedServiceTypeSupport + 'static,
{
    let available = r2r::Node::is_available(client).map_err(|e| e.to_string())?;
    tokio::time::timeout(wait, available)
        .await
        .map_err(|_| format!("no service within {} s", wait.as_secs_f64()))?
        .map_err(|e| e.to_string())?;
    let answer = client.request(&request).map_err(|e| e.to_string())?;
    tokio::time::timeout(wait, answer)
        .await
        .map_err(|_| format!("no answer within {} s", wait.as_secs_f64()))?
        .map_err(|e| e.to_string())
}
