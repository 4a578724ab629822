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

mod cancel;
mod goal;
mod goal_id;
mod requests;
mod table;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use futures::{Stream, StreamExt as _};
use r2r::action_msgs::msg::GoalStatusArray;
use r2r::action_msgs::srv::CancelGoal;
use r2r::QosProfile;

use requests::{cancel_request, goal_request, result_request};
use table::{lock, Inner};

pub use cancel::ActionServerCancelRequest;
pub use goal::{ActionServerGoal, ActionServerGoalRequest};
pub use goal_id::GoalId;
pub use table::{Action, MAX_FINISHED, RESULT_TIMEOUT};

/// The status topic's QoS, as rcl's action server has it.
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
    // Unlike rcl's (a history of 10), the protocol's services keep a burst of requests (one is taken per
    // service and spin): of 300 goals sent at once by one client, most were never seen, so never answered.
    let services = crate::qos::requests;
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
