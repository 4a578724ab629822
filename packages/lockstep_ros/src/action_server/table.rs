//! The goals the server knows, behind one lock: their status, result and waiting result requests, with the
//! publishers of the status and feedback topics; how long finished goals are kept.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use r2r::action_msgs::msg::{GoalInfo, GoalStatus, GoalStatusArray};
use r2r::builtin_interfaces::msg::Time;
use r2r::{ServiceRequest, WrappedActionTypeSupport, WrappedServiceTypeSupport};

use super::cancel::ActionServerCancelRequest;
use super::goal_id::GoalId;

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

pub(super) type ResultResponse<T> =
    <<T as WrappedActionTypeSupport>::GetResult as WrappedServiceTypeSupport>::Response;

pub(super) struct Entry<T: WrappedActionTypeSupport> {
    pub(super) id: GoalId,
    pub(super) stamp: Time,
    pub(super) status: i8,
    pub(super) result: Option<ResultResponse<T>>,
    pub(super) ended: Option<Instant>,
    /// Result requests that came before the goal ended.
    pub(super) waiting: Vec<ServiceRequest<T::GetResult>>,
    pub(super) cancels: mpsc::UnboundedSender<ActionServerCancelRequest>,
}

pub(super) struct Inner<T: WrappedActionTypeSupport> {
    pub(super) goals: VecDeque<Entry<T>>,
    pub(super) status: r2r::Publisher<GoalStatusArray>,
    pub(super) feedback: r2r::Publisher<T::FeedbackMessage>,
    pub(super) clock: Arc<Mutex<r2r::Clock>>,
    pub(super) name: String,
}

impl<T: WrappedActionTypeSupport> Inner<T> {
    pub(super) fn entry(&mut self, id: GoalId) -> Option<&mut Entry<T>> {
        self.goals.iter_mut().find(|e| e.id == id)
    }

    pub(super) fn now(&self) -> Time {
        crate::time::clock_stamp(&self.clock)
    }

    pub(super) fn publish_status(&mut self) {
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
    pub(super) fn expire(&mut self) {
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

pub(super) fn lock<T: WrappedActionTypeSupport>(shared: &Mutex<Inner<T>>) -> MutexGuard<'_, Inner<T>> {
    // A panic while holding the lock leaves nothing half-done that matters here: go on with the data.
    shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

// The goal statuses (action_msgs/GoalStatus), as the message holds them.
pub(super) const UNKNOWN: i8 = GoalStatus::STATUS_UNKNOWN as i8;
pub(super) const EXECUTING: i8 = GoalStatus::STATUS_EXECUTING as i8;
pub(super) const CANCELING: i8 = GoalStatus::STATUS_CANCELING as i8;
pub(super) const SUCCEEDED: i8 = GoalStatus::STATUS_SUCCEEDED as i8;
pub(super) const CANCELED: i8 = GoalStatus::STATUS_CANCELED as i8;
pub(super) const ABORTED: i8 = GoalStatus::STATUS_ABORTED as i8;

pub(super) fn terminal(status: i8) -> bool {
    matches!(status, SUCCEEDED | ABORTED | CANCELED)
}
