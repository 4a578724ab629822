//! The HMI kind: a Prompt goal is logged (standing in for a screen) and waits for the operator's reply, a
//! std_msgs/String on `hmi/reply`, with feedback every 0.1 s and an optional timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use lockstep_tasks_node::action_server::ActionServerGoal;
use r2r::lockstep_interfaces::action::Prompt;
use r2r::std_msgs::msg::String as StringMsg;
use tokio::sync::{mpsc, Mutex};

use crate::serve::{accept_cancel, end, next_cancel, Cancels, Common, End, CANCELLED, SIMULATED_FAILURE};

/// Period of the `waited_s` feedback.
pub const FEEDBACK_PERIOD: Duration = Duration::from_millis(100);

/// The replies received on `hmi/reply`, in order; a goal takes the first one that came after it started.
pub struct Replies {
    receiver: Mutex<mpsc::UnboundedReceiver<String>>,
    /// The reply topic's name, for messages.
    pub topic: String,
}

/// Forward every reply from `subscription` into the returned [`Replies`]; the future does the forwarding.
pub fn replies(
    subscription: impl Stream<Item = StringMsg> + Unpin,
    topic: String,
) -> (Arc<Replies>, impl std::future::Future<Output = ()>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let forward = subscription.for_each(move |msg| {
        // The receiver lives as long as the node's tasks: a send cannot fail before they end.
        let _ = sender.send(msg.data);
        futures::future::ready(())
    });
    let replies = Arc::new(Replies {
        receiver: Mutex::new(receiver),
        topic,
    });
    (replies, forward)
}

fn result(success: bool, message: String, reply: String) -> Prompt::Result {
    Prompt::Result {
        success,
        message,
        reply,
    }
}

/// Whether a Prompt goal can run (a finite timeout >= 0); why not otherwise.
pub fn check(goal: &Prompt::Goal) -> Result<(), String> {
    let timeout_s = goal.timeout_s;
    if timeout_s.is_finite() && timeout_s >= 0.0 {
        Ok(())
    } else {
        Err(format!(
            "timeout_s is {timeout_s}; it must be a finite number >= 0 (0 = no timeout)"
        ))
    }
}

/// Run one Prompt goal until the reply, the timeout or a cancel.
pub async fn run_prompt(
    mut goal: ActionServerGoal<Prompt::Action>,
    cancels: Cancels,
    common: Arc<Common>,
    replies: Arc<Replies>,
) {
    let started = Instant::now();
    let server = &common.server;
    let timeout_s = goal.goal.timeout_s;
    if let Err(reason) = check(&goal.goal) {
        r2r::log_warn!(&common.logger, "{server}: goal aborted: {reason}");
        end(
            &mut goal,
            End::Aborted,
            result(false, reason, String::new()),
            &common,
        );
        return;
    }
    let deadline = (timeout_s > 0.0).then(|| started + Duration::from_secs_f64(timeout_s));
    common.status.set_goal_deadline(deadline);
    let mut receiver = replies.receiver.lock().await;
    // Replies that came before this goal answered nothing it asked.
    while receiver.try_recv().is_ok() {}
    r2r::log_info!(
        &common.logger,
        "{server}: PROMPT: {} (reply on {}{})",
        goal.goal.prompt,
        replies.topic,
        deadline.map_or(String::new(), |_| format!(", within {timeout_s} s"))
    );
    let mut cancels = Some(cancels);
    let mut next_feedback = started;
    let reply = loop {
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            let message = format!("timed out: no reply on {} within {timeout_s} s", replies.topic);
            r2r::log_warn!(&common.logger, "{server}: {message}");
            end(
                &mut goal,
                End::Aborted,
                result(false, message, String::new()),
                &common,
            );
            return;
        }
        if now >= next_feedback {
            let waited_s = started.elapsed().as_secs_f64();
            let _ = goal.publish_feedback(Prompt::Feedback { waited_s });
            next_feedback += FEEDBACK_PERIOD;
            if next_feedback < now {
                next_feedback = now + FEEDBACK_PERIOD;
            }
        }
        let wake = deadline.map_or(next_feedback, |d| d.min(next_feedback));
        tokio::select! {
            cancel = next_cancel(&mut cancels) => {
                accept_cancel(cancel, &common).await;
                r2r::log_info!(&common.logger, "{server}: prompt cancelled");
                end(&mut goal, End::Canceled, result(false, CANCELLED.to_owned(), String::new()), &common);
                return;
            }
            reply = receiver.recv() => match reply {
                Some(reply) => break reply,
                None => {
                    let message = format!("the subscription to {} ended", replies.topic);
                    end(&mut goal, End::Aborted, result(false, message, String::new()), &common);
                    return;
                }
            },
            () = tokio::time::sleep_until(wake.into()) => {}
        }
    };
    let waited = started.elapsed().as_secs_f64();
    if common.params.fail {
        r2r::log_warn!(&common.logger, "{server}: reply `{reply}`: {SIMULATED_FAILURE}");
        end(
            &mut goal,
            End::Aborted,
            result(false, SIMULATED_FAILURE.to_owned(), reply),
            &common,
        );
    } else {
        let message = format!("replied after {waited:.2} s");
        r2r::log_info!(&common.logger, "{server}: reply `{reply}` {message}");
        end(&mut goal, End::Succeeded, result(true, message, reply), &common);
    }
}
