//! The HMI kind: a Prompt goal is logged (standing in for a screen) and waits for the operator's reply, a
//! std_msgs/String on `hmi/reply`, with feedback every 0.1 s and an optional timeout.

use std::sync::Arc;
use std::time::Instant;

use futures::{Stream, StreamExt};
use lockstep_tasks_node::action_server::ActionServerGoal;
use r2r::lockstep_interfaces::action::Prompt;
use r2r::std_msgs::msg::String as StringMsg;
use tokio::sync::{mpsc, Mutex};

use crate::serve::{accept_cancel, end, next_cancel, Cancels, Common, End, CANCELLED, SIMULATED_FAILURE};
use lockstep_ros::text::echo;
use lockstep_tasks::sim::prompt::{self, PromptWait};

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
    prompt::check_timeout(goal.timeout_s)
}

/// How the wait for a reply ended.
enum Waited {
    Reply(String),
    /// The goal already ended (timed out, cancelled, or the reply topic is gone).
    Ended,
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
    let timeout_s = goal.goal.timeout_s;
    let wait = PromptWait::new(started, timeout_s);
    common.status.set_goal_deadline(wait.deadline());
    let mut receiver = replies.receiver.lock().await;
    // Replies that came before this goal answered nothing it asked.
    while receiver.try_recv().is_ok() {}
    r2r::log_info!(
        &common.logger,
        "{server}: PROMPT: {} (reply on {}{})",
        echo(&goal.goal.prompt),
        replies.topic,
        wait.deadline()
            .map_or(String::new(), |_| format!(", within {timeout_s} s"))
    );
    let Waited::Reply(reply) =
        wait_for_reply(&mut goal, cancels, &common, wait, &mut receiver, &replies.topic).await
    else {
        return;
    };
    let waited = started.elapsed().as_secs_f64();
    let (success, message) = prompt::answer(waited, common.params.fail);
    if success {
        r2r::log_info!(&common.logger, "{server}: reply `{}` {message}", echo(&reply));
        end(&mut goal, End::Succeeded, result(true, message, reply), &common);
    } else {
        r2r::log_warn!(
            &common.logger,
            "{server}: reply `{}`: {SIMULATED_FAILURE}",
            echo(&reply)
        );
        end(&mut goal, End::Aborted, result(false, message, reply), &common);
    }
}

/// Wait for the reply with `waited_s` feedback; end the goal on the timeout, a cancel, or the end of the
/// reply topic.
async fn wait_for_reply(
    goal: &mut ActionServerGoal<Prompt::Action>,
    cancels: Cancels,
    common: &Common,
    mut wait: PromptWait,
    receiver: &mut mpsc::UnboundedReceiver<String>,
    topic: &str,
) -> Waited {
    let server = &common.server;
    let mut cancels = Some(cancels);
    loop {
        let now = Instant::now();
        if wait.timed_out(now) {
            let message = prompt::timeout_message(topic, goal.goal.timeout_s);
            r2r::log_warn!(&common.logger, "{server}: {message}");
            end(goal, End::Aborted, result(false, message, String::new()), common);
            return Waited::Ended;
        }
        if let Some(waited_s) = wait.feedback(now) {
            let _ = goal.publish_feedback(Prompt::Feedback { waited_s });
        }
        tokio::select! {
            cancel = next_cancel(&mut cancels) => {
                accept_cancel(cancel, common).await;
                r2r::log_info!(&common.logger, "{server}: prompt cancelled");
                end(goal, End::Canceled, result(false, CANCELLED.to_owned(), String::new()), common);
                return Waited::Ended;
            }
            reply = receiver.recv() => match reply {
                Some(reply) => return Waited::Reply(reply),
                None => {
                    let message = format!("the subscription to {topic} ended");
                    end(goal, End::Aborted, result(false, message, String::new()), common);
                    return Waited::Ended;
                }
            },
            () = tokio::time::sleep_until(wait.wake().into()) => {}
        }
    }
}
