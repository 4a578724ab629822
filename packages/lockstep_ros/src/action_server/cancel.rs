//! A cancel request as the server's user sees it: one goal to accept or refuse to cancel.

use futures::channel::oneshot;

use super::goal_id::GoalId;

/// A cancel request for one goal: accept it (the goal shows CANCELING until it ends) or reject it.
/// Dropped unanswered, it counts as rejected.
pub struct ActionServerCancelRequest {
    pub uuid: GoalId,
    pub(super) answer: oneshot::Sender<bool>,
    pub(super) accept: Box<dyn FnOnce() + Send>,
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
