//! How each kind of goal is told how it went: a MovePlay goal its result once the section ends; a
//! FollowJointTrajectory goal is judged after every tick (path tolerances while moving, goal tolerances at
//! the end) and ends with the standard result codes; a trajectory from the topic is held to the default path
//! tolerances.

use lockstep_interpolation::timing::Summary;
use lockstep_interpolation::tolerance::{Motion, Standing};
use lockstep_interpolation::trajectory::ErrorCode;
use r2r::lockstep_interfaces::action::MovePlay;

use crate::engine::{Active, Config};
use crate::goal::{fjt_result, Goal};

/// What a tick's judgement decided.
pub(crate) enum Verdict {
    Continue,
    /// The goal is answered and the motion must stop under control (then the active goal ends).
    Stop,
    /// The goal is over: remove it.
    Finished,
}

/// Judge the goal after a tick: `measured` and `velocity` (the controller's joint order, if known) answer
/// the previous command `previous`.
pub(crate) fn judge(
    a: &mut Active,
    measured: Option<&[f64]>,
    velocity: Option<&[f64]>,
    previous: &[f64],
    config: &Config,
) -> Verdict {
    let done = a.session.finished();
    let last = a.session.main().position().to_vec();
    let mut motion = Motion {
        done,
        cancelled: a.session.cancelled(),
        last: &last,
        previous,
        measured,
        velocity,
        secs_since_end: 0.0,
    };
    match &mut a.goal {
        Goal::MovePlay(_) | Goal::Answered | Goal::Topic(_) if done => Verdict::Finished,
        Goal::MovePlay(_) | Goal::Answered => Verdict::Continue,
        Goal::Topic(t) => match t.judge(motion) {
            Standing::Violated(e) => {
                r2r::log_warn!(
                    &config.logger,
                    "trajectory from the topic: {}; stopping",
                    e.message
                );
                a.goal = Goal::Answered;
                Verdict::Stop
            }
            _ => Verdict::Continue,
        },
        Goal::Follow(f) => {
            if done {
                f.ended_ticks += 1;
                motion.secs_since_end = f.ended_ticks as f64 * config.params.period_s;
            }
            let (code, message, ending) = match f.tolerances.judge(motion) {
                Standing::Going => return Verdict::Continue,
                Standing::Reached => (ErrorCode::Successful, "Goal successfully reached!".into(), None),
                Standing::Cancelled => (
                    ErrorCode::Successful,
                    "cancelled: stopped along the path".into(),
                    Some(true),
                ),
                Standing::Violated(e) => {
                    r2r::log_warn!(&config.logger, "trajectory goal: {}", e.message);
                    (e.code, e.message, Some(false))
                }
            };
            let result = fjt_result(code, message);
            let _ = match ending {
                None => f.handle.succeed(result),
                Some(true) => f.handle.cancel(result),
                Some(false) => f.handle.abort(result),
            };
            if done {
                Verdict::Finished
            } else {
                a.goal = Goal::Answered;
                Verdict::Stop
            }
        }
    }
}

/// End a MovePlay goal: its result, succeeded (or cancelled) or aborted with `error`.
pub(crate) fn finish_move_play(
    mut a: Active,
    mut goal: r2r::ActionServerGoal<MovePlay::Action>,
    config: &Config,
    error: Option<String>,
) {
    let main = a.session.main();
    let peaks = main.peaks();
    let alarms = a.session.alarms();
    let valid = error.is_none() && alarms == 0 && peaks.iter().all(|p| p.iter().all(|f| *f <= 1.0 + 1e-6));
    let cancelled = a.session.cancelled();
    let message = match (&error, cancelled) {
        (Some(e), _) => e.clone(),
        (None, true) => "cancelled: stopped along the path".to_owned(),
        (None, false) => "played to the end".to_owned(),
    };
    let result = MovePlay::Result {
        points_played: a.session.points_played(),
        alarm_count: alarms as u32,
        joint_names: a.joints.clone(),
        peak_velocity_fraction: peaks.iter().map(|p| p[0]).collect(),
        peak_acceleration_fraction: peaks.iter().map(|p| p[1]).collect(),
        peak_jerk_fraction: peaks.iter().map(|p| p[2]).collect(),
        max_tracking_error: a.session.max_tracking_error(),
        valid,
        message: message.clone(),
    };
    r2r::log_info!(
        &config.logger,
        "goal ended: {message} (valid {valid}, {alarms} alarms)"
    );
    if let Some(timing) = Summary::of(&a.intervals.secs, config.params.period_s) {
        r2r::log_info!(&config.logger, "tick timing: {timing}");
    }
    let _ = match (error.is_some(), cancelled) {
        (true, _) => goal.abort(result),
        (false, true) => goal.cancel(result),
        (false, false) => goal.succeed(result),
    };
    a.pending.take();
}

/// End the goal being played because the motion cannot go on (`error`), or because it is over.
pub(crate) fn finish(active: &mut Option<Active>, config: &Config, error: Option<String>) {
    let Some(mut a) = active.take() else { return };
    if let Some(pending) = a.pending.take() {
        // The planner tries again and finds nothing playing; a goal waiting to take over comes back.
        let _ = pending.reply.send((
            Err(lockstep_interpolation::session::Stale::StateChanged),
            pending.takeover,
        ));
    }
    match std::mem::replace(&mut a.goal, Goal::Answered) {
        Goal::MovePlay(goal) => finish_move_play(a, goal, config, error),
        Goal::Follow(mut f) => {
            if let Some(e) = error {
                r2r::log_warn!(&config.logger, "trajectory goal: {e}");
                let _ = f.handle.abort(fjt_result(ErrorCode::InvalidGoal, e));
            }
        }
        Goal::Topic(_) => {
            if let Some(e) = error {
                r2r::log_warn!(&config.logger, "trajectory: {e}");
            }
        }
        Goal::Answered => match error {
            Some(e) => r2r::log_warn!(&config.logger, "stopping after the abort: {e}"),
            None => r2r::log_info!(&config.logger, "stopped after the abort: the joints are at rest"),
        },
    }
}
