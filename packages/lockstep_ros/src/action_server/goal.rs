//! What the server's user holds: a goal request to accept or reject, and an accepted goal to give feedback
//! on and end.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::channel::mpsc;
use futures::Stream;
use r2r::builtin_interfaces::msg::Time;
use r2r::{ServiceRequest, WrappedActionTypeSupport};

use super::cancel::ActionServerCancelRequest;
use super::goal_id::GoalId;
use super::table::terminal;
use super::table::{lock, Action, Entry, Inner, ABORTED, CANCELED, CANCELING, EXECUTING, SUCCEEDED};

/// A goal request: accept it (it becomes an [`ActionServerGoal`] with a stream of cancel requests) or reject
/// it.
pub struct ActionServerGoalRequest<T: WrappedActionTypeSupport> {
    pub uuid: GoalId,
    pub goal: T::Goal,
    pub(super) request: ServiceRequest<T::SendGoal>,
    pub(super) shared: Arc<Mutex<Inner<T>>>,
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
