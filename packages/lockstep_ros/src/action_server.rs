//! An action server that speaks the ROS 2 action protocol over plain r2r services and topics
//! (`<name>/_action/send_goal`, `cancel_goal`, `get_result`, `feedback`, `status`), with the same surface as
//! r2r's own (`create_action_server`, goal requests to accept or reject, goals to end, cancel requests).
//!
//! Why not r2r 0.9.7's server: when it accepts a cancel request it moves the goal to CANCELING and forgets the
//! goal's rcl handle, and its `ActionServerGoal::cancel` never sends the CANCELED event. The status topic then
//! shows the goal CANCELING for ever (a client that waits for the terminal status hangs), the goal never
//! expires, and an `abort` after a cancel fails. Here a cancelled goal goes CANCELING, then CANCELED when it
//! ends, on the status topic and in its result.
//!
//! What rcl's server does and this one does too: goals are listed on the latched status topic in the order
//! accepted, with the accept stamp (the node's ROS clock); a result request for a goal still running is
//! answered when it ends; a finished goal's result is kept [`RESULT_TIMEOUT`] (at most [`MAX_FINISHED`] of
//! them); a cancel request names one goal, every goal accepted up to a stamp, or all goals. Unlike rcl, a
//! name remap applies to the action's five topic and service names, not to the action name.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::channel::{mpsc, oneshot};
use futures::{Stream, StreamExt as _};
use r2r::action_msgs::msg::{GoalInfo, GoalStatus, GoalStatusArray};
use r2r::action_msgs::srv::CancelGoal;
use r2r::builtin_interfaces::msg::Time;
use r2r::unique_identifier_msgs::msg::UUID;
use r2r::{QosProfile, ServiceRequest, WrappedActionTypeSupport, WrappedServiceTypeSupport};

/// How long a finished goal's result is kept for late result requests (rcl's default).
pub const RESULT_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// Finished goals kept at most (the oldest go first): a flood of goals cannot grow the status list.
pub const MAX_FINISHED: usize = 1000;

/// An action type this server serves: its goals and results cross threads.
pub trait Action:
    WrappedActionTypeSupport<Goal: Send, GetResult: WrappedServiceTypeSupport<Response: Send>> + 'static
{
}

impl<T> Action for T where
    T: WrappedActionTypeSupport<Goal: Send, GetResult: WrappedServiceTypeSupport<Response: Send>> + 'static
{
}

type ResultResponse<T> = <<T as WrappedActionTypeSupport>::GetResult as WrappedServiceTypeSupport>::Response;

/// A goal's id (the client's UUID), shown as UUIDs are.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct GoalId(pub [u8; 16]);

impl GoalId {
    fn from_msg(msg: &UUID) -> Self {
        let mut id = [0; 16];
        for (to, from) in id.iter_mut().zip(&msg.uuid) {
            *to = *from;
        }
        Self(id)
    }

    fn msg(&self) -> UUID {
        UUID {
            uuid: self.0.to_vec(),
        }
    }

    fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}

impl fmt::Display for GoalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

struct Entry<T: WrappedActionTypeSupport> {
    id: GoalId,
    stamp: Time,
    status: i8,
    result: Option<ResultResponse<T>>,
    ended: Option<Instant>,
    /// Result requests that came before the goal ended.
    waiting: Vec<ServiceRequest<T::GetResult>>,
    cancels: mpsc::UnboundedSender<ActionServerCancelRequest>,
}

struct Inner<T: WrappedActionTypeSupport> {
    goals: VecDeque<Entry<T>>,
    status: r2r::Publisher<GoalStatusArray>,
    feedback: r2r::Publisher<T::FeedbackMessage>,
    clock: Arc<Mutex<r2r::Clock>>,
    name: String,
}

impl<T: WrappedActionTypeSupport> Inner<T> {
    fn entry(&mut self, id: GoalId) -> Option<&mut Entry<T>> {
        self.goals.iter_mut().find(|e| e.id == id)
    }

    fn now(&self) -> Time {
        crate::time::clock_stamp(&self.clock)
    }

    fn publish_status(&mut self) {
        let array = GoalStatusArray {
            status_list: (self.goals.iter())
                .map(|e| GoalStatus {
                    goal_info: GoalInfo {
                        goal_id: e.id.msg(),
                        stamp: e.stamp.clone(),
                    },
                    status: e.status,
                })
                .collect(),
        };
        if let Err(e) = self.status.publish(&array) {
            r2r::log_warn!(
                "lockstep_action_server",
                "{}: could not publish the goal status: {e}",
                self.name
            );
        }
    }

    /// Forget finished goals past their time, and the oldest beyond [`MAX_FINISHED`].
    fn expire(&mut self) {
        let finished = self.goals.iter().filter(|e| e.ended.is_some()).count();
        let mut excess = finished.saturating_sub(MAX_FINISHED);
        self.goals.retain(|e| match e.ended {
            Some(_) if excess > 0 => {
                excess -= 1;
                false
            }
            Some(at) => at.elapsed() < RESULT_TIMEOUT,
            None => true,
        });
    }
}

fn lock<T: WrappedActionTypeSupport>(shared: &Mutex<Inner<T>>) -> MutexGuard<'_, Inner<T>> {
    // A panic while holding the lock leaves nothing half-done that matters here: go on with the data.
    shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

// The goal statuses (action_msgs/GoalStatus), as the message holds them.
const UNKNOWN: i8 = GoalStatus::STATUS_UNKNOWN as i8;
const EXECUTING: i8 = GoalStatus::STATUS_EXECUTING as i8;
const CANCELING: i8 = GoalStatus::STATUS_CANCELING as i8;
const SUCCEEDED: i8 = GoalStatus::STATUS_SUCCEEDED as i8;
const CANCELED: i8 = GoalStatus::STATUS_CANCELED as i8;
const ABORTED: i8 = GoalStatus::STATUS_ABORTED as i8;

fn terminal(status: i8) -> bool {
    matches!(status, SUCCEEDED | ABORTED | CANCELED)
}

/// A goal request: accept it (it becomes an [`ActionServerGoal`] with a stream of cancel requests) or reject
/// it.
pub struct ActionServerGoalRequest<T: WrappedActionTypeSupport> {
    pub uuid: GoalId,
    pub goal: T::Goal,
    request: ServiceRequest<T::SendGoal>,
    shared: Arc<Mutex<Inner<T>>>,
}

impl<T: Action> ActionServerGoalRequest<T> {
    /// Accept the goal: answer the client, list the goal as executing. An error (the answer could not be
    /// sent) leaves the goal unknown here.
    pub fn accept(
        self,
    ) -> r2r::Result<(
        ActionServerGoal<T>,
        impl Stream<Item = ActionServerCancelRequest> + Unpin,
    )> {
        let mut inner = lock(&self.shared);
        let stamp = inner.now();
        self.request
            .respond(T::make_goal_response_msg(true, stamp.clone()))?;
        let (cancels, cancel_stream) = mpsc::unbounded();
        inner.goals.push_back(Entry {
            id: self.uuid,
            stamp,
            status: EXECUTING,
            result: None,
            ended: None,
            waiting: Vec::new(),
            cancels,
        });
        inner.expire();
        inner.publish_status();
        drop(inner);
        let goal = ActionServerGoal {
            uuid: self.uuid,
            goal: self.goal,
            shared: self.shared,
        };
        Ok((goal, cancel_stream))
    }

    /// Reject the goal (the client's goal response says not accepted).
    pub fn reject(self) -> r2r::Result<()> {
        self.request
            .respond(T::make_goal_response_msg(false, Time::default()))
    }
}

/// An accepted goal: feedback, and its end (succeeded, aborted or canceled).
pub struct ActionServerGoal<T: WrappedActionTypeSupport> {
    pub uuid: GoalId,
    pub goal: T::Goal,
    shared: Arc<Mutex<Inner<T>>>,
}

impl<T: WrappedActionTypeSupport> Clone for ActionServerGoal<T> {
    fn clone(&self) -> Self {
        Self {
            uuid: self.uuid,
            goal: self.goal.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<T: Action> ActionServerGoal<T> {
    pub fn publish_feedback(&self, feedback: T::Feedback) -> r2r::Result<()> {
        let inner = lock(&self.shared);
        inner
            .feedback
            .publish(&T::make_feedback_msg(self.uuid.msg(), feedback))
    }

    /// Whether a cancel request for this goal was accepted.
    pub fn is_cancelling(&self) -> r2r::Result<bool> {
        let mut inner = lock(&self.shared);
        let entry = inner
            .entry(self.uuid)
            .ok_or(r2r::Error::RCL_RET_ACTION_GOAL_HANDLE_INVALID)?;
        Ok(entry.status == CANCELING)
    }

    pub fn succeed(&mut self, result: T::Result) -> r2r::Result<()> {
        self.end(SUCCEEDED, result)
    }

    pub fn abort(&mut self, result: T::Result) -> r2r::Result<()> {
        self.end(ABORTED, result)
    }

    /// End the goal as canceled (after a cancel request was accepted, or on the server's own decision).
    pub fn cancel(&mut self, result: T::Result) -> r2r::Result<()> {
        self.end(CANCELED, result)
    }

    fn end(&mut self, status: i8, result: T::Result) -> r2r::Result<()> {
        let mut inner = lock(&self.shared);
        let entry = inner
            .entry(self.uuid)
            .ok_or(r2r::Error::RCL_RET_ACTION_GOAL_HANDLE_INVALID)?;
        if terminal(entry.status) {
            return Err(r2r::Error::RCL_RET_ACTION_GOAL_EVENT_INVALID);
        }
        let response = T::make_result_response_msg(status, result);
        entry.status = status;
        entry.ended = Some(Instant::now());
        for request in entry.waiting.drain(..) {
            // A client gone meanwhile is no error of this goal.
            let _ = request.respond(response.clone());
        }
        entry.result = Some(response);
        inner.publish_status();
        Ok(())
    }
}

/// A cancel request for one goal: accept it (the goal shows CANCELING until it ends) or reject it.
/// Dropped unanswered, it counts as rejected.
pub struct ActionServerCancelRequest {
    pub uuid: GoalId,
    answer: oneshot::Sender<bool>,
    accept: Box<dyn FnOnce() + Send>,
}

impl ActionServerCancelRequest {
    pub fn accept(self) {
        (self.accept)();
        let _ = self.answer.send(true);
    }

    pub fn reject(self) {
        let _ = self.answer.send(false);
    }
}

/// The services' QoS and the status topic's, as rcl's action server has them.
fn status_qos() -> QosProfile {
    QosProfile::default().reliable().transient_local().keep_last(1)
}

/// Create the action server `name` of type `T` on `node`: the stream of goal requests. The protocol's
/// services are served by a task spawned on the tokio runtime.
pub fn create_action_server<T>(
    node: &mut r2r::Node,
    name: &str,
) -> r2r::Result<impl Stream<Item = ActionServerGoalRequest<T>> + Unpin>
where
    T: Action,
{
    let services = QosProfile::services_default;
    let mut send_goal =
        node.create_service::<T::SendGoal>(&format!("{name}/_action/send_goal"), services())?;
    let mut cancel_goal =
        node.create_service::<CancelGoal::Service>(&format!("{name}/_action/cancel_goal"), services())?;
    let mut get_result =
        node.create_service::<T::GetResult>(&format!("{name}/_action/get_result"), services())?;
    let feedback = node
        .create_publisher::<T::FeedbackMessage>(&format!("{name}/_action/feedback"), QosProfile::default())?;
    let status = node.create_publisher::<GoalStatusArray>(&format!("{name}/_action/status"), status_qos())?;
    let shared = Arc::new(Mutex::new(Inner::<T> {
        goals: VecDeque::new(),
        status,
        feedback,
        clock: node.get_ros_clock(),
        name: name.to_owned(),
    }));
    lock(&shared).publish_status();
    let (requests, stream) = mpsc::unbounded();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                Some(request) = send_goal.next() => goal_request(&shared, request, &requests),
                Some(request) = cancel_goal.next() => cancel_request(&shared, request),
                Some(request) = get_result.next() => result_request(&shared, request),
                else => return,
            }
        }
    });
    Ok(stream)
}

fn goal_request<T: Action>(
    shared: &Arc<Mutex<Inner<T>>>,
    request: ServiceRequest<T::SendGoal>,
    requests: &mpsc::UnboundedSender<ActionServerGoalRequest<T>>,
) {
    let (id, goal) = T::destructure_goal_request_msg(request.message.clone());
    let uuid = GoalId::from_msg(&id);
    if lock(shared).entry(uuid).is_some() {
        // The id of a goal this server has: a copy, not a new goal.
        let _ = request.respond(T::make_goal_response_msg(false, Time::default()));
        return;
    }
    let request = ActionServerGoalRequest {
        uuid,
        goal,
        request,
        shared: shared.clone(),
    };
    if let Err(e) = requests.unbounded_send(request) {
        // Nobody takes goals any more (the node is stopping): refuse it.
        let _ = e.into_inner().reject();
    }
}

fn cancel_request<T: Action>(shared: &Arc<Mutex<Inner<T>>>, request: ServiceRequest<CancelGoal::Service>) {
    let wanted = &request.message.goal_info;
    let wanted_id = GoalId::from_msg(&wanted.goal_id);
    let by_stamp = wanted.stamp.sec != 0 || wanted.stamp.nanosec != 0;
    let up_to = (wanted.stamp.sec, wanted.stamp.nanosec);
    let mut inner = lock(shared);
    let mut answers = Vec::new();
    let mut canceling = Vec::new();
    let mut found_terminal = false;
    for entry in &inner.goals {
        let chosen = (wanted_id.is_zero() && !by_stamp)
            || entry.id == wanted_id
            || (by_stamp && (entry.stamp.sec, entry.stamp.nanosec) <= up_to);
        if !chosen {
            continue;
        }
        let info = GoalInfo {
            goal_id: entry.id.msg(),
            stamp: entry.stamp.clone(),
        };
        if terminal(entry.status) {
            found_terminal |= entry.id == wanted_id;
        } else if entry.status == CANCELING {
            canceling.push(info);
        } else {
            let (answer, answered) = oneshot::channel();
            let (weak, id) = (Arc::downgrade(shared), entry.id);
            let cancel = ActionServerCancelRequest {
                uuid: entry.id,
                answer,
                accept: Box::new(move || {
                    if let Some(shared) = weak.upgrade() {
                        let mut inner = lock(&shared);
                        let moved = inner.entry(id).filter(|e| !terminal(e.status)).map(|e| {
                            e.status = CANCELING;
                        });
                        if moved.is_some() {
                            inner.publish_status();
                        }
                    }
                }),
            };
            if entry.cancels.unbounded_send(cancel).is_ok() {
                answers.push((info, answered));
            }
        }
    }
    let unknown = !wanted_id.is_zero() && inner.entry(wanted_id).is_none();
    drop(inner);
    let asked = answers.len() + canceling.len();
    tokio::spawn(async move {
        let mut goals_canceling = canceling;
        for (info, answered) in answers {
            if answered.await == Ok(true) {
                goals_canceling.push(info);
            }
        }
        let return_code = if !goals_canceling.is_empty() {
            CancelGoal::Response::ERROR_NONE as i8
        } else if unknown {
            CancelGoal::Response::ERROR_UNKNOWN_GOAL_ID as i8
        } else if found_terminal && asked == 0 {
            CancelGoal::Response::ERROR_GOAL_TERMINATED as i8
        } else {
            CancelGoal::Response::ERROR_REJECTED as i8
        };
        let _ = request.respond(CancelGoal::Response {
            return_code,
            goals_canceling,
        });
    });
}

fn result_request<T: Action>(shared: &Arc<Mutex<Inner<T>>>, request: ServiceRequest<T::GetResult>) {
    let id = GoalId::from_msg(&T::destructure_result_request_msg(request.message.clone()));
    let mut inner = lock(shared);
    inner.expire();
    match inner.entry(id) {
        None => {
            drop(inner);
            let unknown = T::make_result_response_msg(UNKNOWN, T::Result::default());
            let _ = request.respond(unknown);
        }
        Some(Entry {
            result: Some(result), ..
        }) => {
            let result = result.clone();
            drop(inner);
            let _ = request.respond(result);
        }
        Some(entry) => entry.waiting.push(request),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_goal_id_reads_as_a_uuid() {
        let id = GoalId([
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
        ]);
        assert_eq!(id.to_string(), "12345678-9abc-def0-0123-456789abcdef");
        assert_eq!(GoalId::from_msg(&id.msg()), id);
        assert!(GoalId::from_msg(&UUID { uuid: vec![] }).is_zero());
    }
}
