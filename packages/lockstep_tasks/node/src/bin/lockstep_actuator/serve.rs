//! What every kind's action server does the same way: reject a goal while busy, accept late by
//! `accept_delay_s`, hand the accepted goal to the kind's executor, end goals and accept cancels.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use lockstep_tasks_node::action_server::{
    Action, ActionServerCancelRequest, ActionServerGoal, ActionServerGoalRequest,
};

use crate::busy::Status;
use crate::params::ActuatorParams;

/// The cancel requests of one accepted goal.
pub type Cancels = BoxStream<'static, ActionServerCancelRequest>;

/// The messages of goals ended by parameter `fail` and of cancelled goals.
pub use lockstep_tasks::sim::{CANCELLED, SIMULATED_FAILURE};

/// What every goal executor needs.
pub struct Common {
    pub params: ActuatorParams,
    pub status: Status,
    pub logger: String,
    /// The action server's fully qualified name (e.g. `/load`).
    pub server: String,
    /// Goals that ended so far (for `fail_first`).
    pub ended: std::sync::atomic::AtomicI64,
}

/// How a goal ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Succeeded,
    Aborted,
    Canceled,
}

/// Send the goal's result with the status `end`; a failure to do so is logged (the client then sees none).
pub fn end<A>(goal: &mut ActionServerGoal<A>, end: End, result: A::Result, common: &Common)
where
    A: Action,
{
    let sent = match end {
        End::Succeeded => goal.succeed(result),
        End::Aborted => goal.abort(result),
        End::Canceled => goal.cancel(result),
    };
    if let Err(e) = sent {
        r2r::log_warn!(
            &common.logger,
            "{}: could not end goal {} as {end:?}: {e}",
            common.server,
            goal.uuid
        );
    }
}

/// Accept a cancel request for the running goal, and give the node a moment to answer it (r2r answers the
/// request and moves the goal to CANCELING on its next spin) before the caller ends the goal as canceled.
pub async fn accept_cancel(cancel: ActionServerCancelRequest, common: &Common) {
    r2r::log_info!(
        &common.logger,
        "{}: cancel requested for goal {}",
        common.server,
        cancel.uuid
    );
    cancel.accept();
    tokio::time::sleep(Duration::from_millis(10)).await;
}

/// The next cancel request, or never once the stream has ended (for `tokio::select!`).
pub async fn next_cancel(cancels: &mut Option<Cancels>) -> ActionServerCancelRequest {
    if let Some(stream) = cancels.as_mut() {
        if let Some(cancel) = stream.next().await {
            return cancel;
        }
    }
    *cancels = None;
    futures::future::pending().await
}

/// Reject a goal in its goal response; the reason goes to the log (a goal response has no field for it).
fn reject<A: Action>(common: &Common, request: ActionServerGoalRequest<A>, reason: &str) {
    let uuid = request.uuid;
    r2r::log_warn!(
        &common.logger,
        "{}: goal {uuid} rejected: {}",
        common.server,
        lockstep_ros::text::echo(reason)
    );
    if let Err(e) = request.reject() {
        r2r::log_warn!(
            &common.logger,
            "{}: could not reject goal {uuid}: {e}",
            common.server
        );
    }
}

/// Serve the goal requests of one action server: a goal `check` refuses is rejected (the reason goes to the
/// log), as is every request while the actuator is busy; otherwise it is reserved, accepted after `accept_delay_s` and run by `run` (spawned, so the next requests are
/// answered meanwhile). `expected_s`: the goal's expected duration, for `busy_remaining_s` until `run`
/// updates it.
pub async fn serve_goals<A, F, Fut>(
    mut requests: impl Stream<Item = ActionServerGoalRequest<A>> + Unpin,
    common: Arc<Common>,
    expected_s: Option<f64>,
    check: fn(&A::Goal) -> Result<(), String>,
    run: F,
) where
    A: Action,
    F: Fn(ActionServerGoal<A>, Cancels, Arc<Common>) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    while let Some(request) = requests.next().await {
        if let Err(reason) = check(&request.goal) {
            reject(&common, request, &reason);
            continue;
        }
        let delay = Duration::from_secs_f64(common.params.accept_delay_s);
        let deadline = expected_s.map(|s| Instant::now() + delay + Duration::from_secs_f64(s));
        if let Err(reason) = common.status.try_reserve(deadline) {
            reject(&common, request, &reason.to_string());
            continue;
        }
        let (common, run) = (common.clone(), run.clone());
        tokio::spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let uuid = request.uuid;
            match request.accept() {
                Ok((goal, cancels)) => {
                    r2r::log_info!(&common.logger, "{}: goal {uuid} accepted", common.server);
                    run(goal, cancels.boxed(), common.clone()).await;
                }
                Err(e) => {
                    // RCL_RET_TIMEOUT here: the client's response reader is not discovered yet. The goal is
                    // dropped unstarted; the client sees no response and may send it again.
                    r2r::log_error!(
                        &common.logger,
                        "{}: could not answer goal request {uuid} ({e}); it is dropped, unstarted: the client may send it again",
                        common.server
                    );
                }
            }
            common.status.release();
        });
    }
}
