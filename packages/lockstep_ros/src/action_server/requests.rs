//! The protocol's three services: a goal request handed to the user, a cancel request for one goal, every
//! goal up to a stamp or all goals, and a result request answered now or when the goal ends.

use std::sync::{Arc, Mutex};

use futures::channel::{mpsc, oneshot};
use r2r::action_msgs::msg::GoalInfo;
use r2r::action_msgs::srv::CancelGoal;
use r2r::builtin_interfaces::msg::Time;
use r2r::ServiceRequest;

use super::cancel::ActionServerCancelRequest;
use super::goal::ActionServerGoalRequest;
use super::goal_id::GoalId;
use super::table::{lock, terminal, Action, Entry, Inner, CANCELING, UNKNOWN};

pub(super) fn goal_request<T: Action>(
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

pub(super) fn cancel_request<T: Action>(
    shared: &Arc<Mutex<Inner<T>>>,
    request: ServiceRequest<CancelGoal::Service>,
) {
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

pub(super) fn result_request<T: Action>(
    shared: &Arc<Mutex<Inner<T>>>,
    request: ServiceRequest<T::GetResult>,
) {
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
