//! The timed kinds (localization, lift, roller, loader, display): each goal takes `duration_s` of wall time,
//! with progress feedback every 0.1 s. One executor, generic over the action type through [`Timed`].

use std::sync::Arc;
use std::time::Instant;

use lockstep_tasks_node::action_server::{Action, ActionServerGoal};
use r2r::lockstep_interfaces::action::{Display, Lift, Load, Localize, Roll};

use crate::serve::{accept_cancel, end, next_cancel, Cancels, Common, End, CANCELLED, SIMULATED_FAILURE};
use lockstep_ros::text::echo;
use lockstep_tasks::sim::timed::{self, TimedGoal};

/// A timed action type: how to check and describe its goal, and how to build its feedback and result (all
/// timed actions share the fields `progress`, `remaining_s` and `success`, `message`, `duration_s`).
pub trait Timed: Action {
    /// What the goal does, for the log and the result message (e.g. "load at station `A`").
    fn describe(goal: &Self::Goal) -> String;
    /// `Err` names the bad field and why it is bad.
    fn check(_goal: &Self::Goal) -> Result<(), String> {
        Ok(())
    }
    fn feedback(progress: f64, remaining_s: f64) -> Self::Feedback;
    fn result(success: bool, message: String, duration_s: f64) -> Self::Result;
}

/// `feedback` and `result` of a timed action type in module `$action`.
macro_rules! timed_messages {
    ($action:ident) => {
        fn feedback(progress: f64, remaining_s: f64) -> $action::Feedback {
            $action::Feedback {
                progress,
                remaining_s,
            }
        }
        fn result(success: bool, message: String, duration_s: f64) -> $action::Result {
            $action::Result {
                success,
                message,
                duration_s,
            }
        }
    };
}

impl Timed for Localize::Action {
    fn describe(goal: &Localize::Goal) -> String {
        format!("localize in map `{}`", echo(&goal.map))
    }
    timed_messages!(Localize);
}

impl Timed for Lift::Action {
    fn describe(goal: &Lift::Goal) -> String {
        format!("lift to {} m", goal.height_m)
    }
    fn check(goal: &Lift::Goal) -> Result<(), String> {
        timed::check_lift(goal.height_m)
    }
    timed_messages!(Lift);
}

impl Timed for Roll::Action {
    fn describe(goal: &Roll::Goal) -> String {
        timed::describe_roll(goal.direction, &echo(&goal.station))
    }
    fn check(goal: &Roll::Goal) -> Result<(), String> {
        timed::check_roll(goal.direction)
    }
    timed_messages!(Roll);
}

impl Timed for Load::Action {
    fn describe(goal: &Load::Goal) -> String {
        format!("load at station `{}`", echo(&goal.station))
    }
    timed_messages!(Load);
}

impl Timed for Display::Action {
    fn describe(goal: &Display::Goal) -> String {
        format!("display `{}`", echo(&goal.text))
    }
    timed_messages!(Display);
}

/// Run one timed goal: `duration_s` of wall time with feedback every [`timed::FEEDBACK_PERIOD`], then
/// success (or, with parameter `fail` or within the first `fail_first` goals, an abort). A cancel ends it at
/// once as canceled.
pub async fn run_timed<A: Timed>(mut goal: ActionServerGoal<A>, cancels: Cancels, common: Arc<Common>) {
    let started = Instant::now();
    let elapsed = || started.elapsed().as_secs_f64();
    let server = &common.server;
    if let Err(reason) = A::check(&goal.goal) {
        r2r::log_warn!(&common.logger, "{server}: goal aborted: {reason}");
        end(&mut goal, End::Aborted, A::result(false, reason, 0.0), &common);
        return;
    }
    let what = A::describe(&goal.goal);
    let duration_s = common.params.duration_s;
    let mut clock = TimedGoal::new(started, duration_s);
    common.status.set_goal_deadline(Some(clock.finish()));
    r2r::log_info!(&common.logger, "{server}: {what} ({duration_s} s)");
    let mut cancels = Some(cancels);
    let mut feedback_failed = false;
    loop {
        let now = Instant::now();
        if clock.is_done(now) {
            break;
        }
        if let Some((progress, remaining_s)) = clock.feedback(now) {
            if let Err(e) = goal.publish_feedback(A::feedback(progress, remaining_s)) {
                if !feedback_failed {
                    r2r::log_warn!(&common.logger, "{server}: could not publish feedback: {e}");
                    feedback_failed = true;
                }
            }
        }
        tokio::select! {
            cancel = next_cancel(&mut cancels) => {
                accept_cancel(cancel, &common).await;
                r2r::log_info!(&common.logger, "{server}: {what}: cancelled after {:.2} s", elapsed());
                end(&mut goal, End::Canceled, A::result(false, CANCELLED.to_owned(), elapsed()), &common);
                return;
            }
            () = tokio::time::sleep_until(clock.wake().into()) => {}
        }
    }
    let _ = goal.publish_feedback(A::feedback(1.0, 0.0));
    let took = elapsed();
    let nth = common.ended.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    if timed::fails(common.params.fail, common.params.fail_first, nth) {
        r2r::log_warn!(&common.logger, "{server}: {what}: {SIMULATED_FAILURE}");
        let result = A::result(false, SIMULATED_FAILURE.to_owned(), took);
        end(&mut goal, End::Aborted, result, &common);
    } else {
        let message = timed::done_message(&what, took);
        r2r::log_info!(&common.logger, "{server}: {message}");
        end(&mut goal, End::Succeeded, A::result(true, message, took), &common);
    }
}
