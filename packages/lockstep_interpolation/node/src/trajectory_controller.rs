//! The trajectory-controller mode (`mode:=trajectory_controller`): `~/follow_joint_trajectory` and
//! `~/joint_trajectory` as a joint_trajectory_controller offers them, on the player's motion (the package
//! README says how each differs from JTC). A trajectory is checked by the core, then either replaces the
//! motion being played (planned a few ticks ahead, like a pause) or starts from rest.

use std::sync::Arc;

use futures::{future, StreamExt};
use lockstep_interpolation::session::{Options, Request, Session};
use lockstep_interpolation::timing::Intervals;
use lockstep_interpolation::tolerance::{JointTolerance, Tolerances};
use lockstep_interpolation::trajectory::{self, Checked, ErrorCode, GoalError, TrajectoryPoint};
use lockstep_ros::{lock, qos, SharedNode};
use r2r::control_msgs::action::FollowJointTrajectory as Fjt;
use r2r::control_msgs::msg::{JointTrajectoryControllerState, SpeedScalingFactor};
use tokio::sync::mpsc;

use crate::context::Context;
use crate::engine::{Active, Config, Shared};
use crate::goal::{fjt_result, FollowGoal, Goal};
use crate::params::list;
use crate::requests::{self, Planner};

/// The `~/controller_state` publisher and the tasks of the trajectory-controller mode, on the engine, config
/// and planner the player shares; `stops`: the receiving end of `Config::stops`.
pub(crate) fn start(
    node: &SharedNode,
    (shared, config, planner): (Shared, Arc<Config>, Arc<Planner>),
    stops: mpsc::UnboundedReceiver<()>,
) -> anyhow::Result<(
    r2r::Publisher<JointTrajectoryControllerState>,
    impl future::Future<Output = ()>,
)> {
    let joints = list(&config.params.controller_joints);
    config.limits.for_joints(&joints, &config.params.limits_file)?;
    let ctx = Context {
        shared,
        config,
        planner,
        admission: Arc::default(),
        joints: Arc::new(joints),
    };
    let (state, goals, topic, scaling, target) = {
        let mut n = lock(node)?;
        (
            n.create_publisher::<JointTrajectoryControllerState>("~/controller_state", qos::reliable(10))?,
            n.create_action_server::<Fjt::Action>("~/follow_joint_trajectory")?,
            n.subscribe::<r2r::trajectory_msgs::msg::JointTrajectory>(
                "~/joint_trajectory",
                qos::reliable(10),
            )?,
            n.subscribe::<SpeedScalingFactor>("~/speed_scaling_input", qos::latched())?,
            n.create_publisher::<SpeedScalingFactor>("~/speed_scaling_target", qos::latched())?,
        )
    };
    let goals_task = serve_goals(goals, ctx.clone());
    let topic_task = {
        let ctx = ctx.clone();
        topic.for_each(move |msg| {
            let ctx = ctx.clone();
            async move {
                let tolerances = defaults(&ctx);
                if let Err((_, e)) = take(&ctx, &msg, Goal::Topic(tolerances)).await {
                    r2r::log_warn!(&ctx.config.logger, "joint_trajectory dropped: {e}");
                }
            }
        })
    };
    let scaling_task = crate::scaling::speed_scaling(ctx.clone(), scaling, target);
    let stops_task = stop_on_request(ctx, stops);
    Ok((state, async move {
        tokio::join!(goals_task, topic_task, scaling_task, stops_task);
    }))
}

/// The node's default tolerances for the controller joints.
fn defaults(ctx: &Context) -> Tolerances {
    let p = &ctx.config.params;
    Tolerances::uniform(
        &ctx.joints,
        p.path_tolerance,
        p.goal_tolerance,
        p.stopped_velocity_tolerance,
        p.goal_time_tolerance_s,
    )
}

/// A message's trajectory as the core checks it.
fn trajectory_of(msg: &r2r::trajectory_msgs::msg::JointTrajectory) -> trajectory::JointTrajectory {
    trajectory::JointTrajectory {
        stamp_secs: lockstep_ros::time::time_to_ns(&msg.header.stamp) as f64 * 1e-9,
        joint_names: msg.joint_names.clone(),
        points: (msg.points.iter())
            .map(|p| TrajectoryPoint {
                positions: p.positions.clone(),
                velocities: p.velocities.clone(),
                accelerations: p.accelerations.clone(),
                effort: p.effort.clone(),
                time_from_start_secs: lockstep_ros::time::duration_to_secs(&p.time_from_start),
            })
            .collect(),
    }
}

fn tolerances_of(list: &[r2r::control_msgs::msg::JointTolerance]) -> Vec<JointTolerance> {
    (list.iter())
        .map(|t| JointTolerance {
            name: t.name.clone(),
            position: t.position,
            velocity: t.velocity,
            acceleration: t.acceleration,
        })
        .collect()
}

/// Seconds since the epoch (the clock header stamps are compared with).
fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Accept each goal and hand it to [`take`]; one that cannot be played is aborted with its code and reason.
async fn serve_goals(
    mut goals: impl futures::Stream<Item = r2r::ActionServerGoalRequest<Fjt::Action>> + Unpin,
    ctx: Context,
) {
    while let Some(request) = goals.next().await {
        let wanted = request.goal.clone();
        let (mut handle, cancels) = match request.accept() {
            Ok(accepted) => accepted,
            Err(e) => {
                r2r::log_error!(
                    &ctx.config.logger,
                    "could not answer a trajectory goal request ({e}); it is dropped"
                );
                continue;
            }
        };
        let (tolerances, warning) = defaults(&ctx).with_goal(
            &tolerances_of(&wanted.path_tolerance),
            &tolerances_of(&wanted.goal_tolerance),
            lockstep_ros::time::duration_to_secs(&wanted.goal_time_tolerance),
        );
        if let Some(w) = warning {
            r2r::log_warn!(&ctx.config.logger, "trajectory goal: {w}");
        }
        let uuid = handle.uuid;
        let goal = Goal::Follow(Box::new(FollowGoal {
            handle: handle.clone(),
            tolerances,
            ended_ticks: 0,
        }));
        let (period_s, logger) = (ctx.config.params.period_s, ctx.config.logger.clone());
        let serve = requests::serve_cancels(
            ctx.planner.clone(),
            ctx.shared.clone(),
            period_s,
            logger,
            uuid,
            cancels,
        );
        tokio::spawn(serve);
        if let Err((_, e)) = take(&ctx, &wanted.trajectory, goal).await {
            r2r::log_warn!(&ctx.config.logger, "trajectory goal aborted: {e}");
            let _ = handle.abort(fjt_result(e.code, e.message));
        }
    }
}

/// Play `msg` for `goal`: replacing the trajectory being played, or from rest. On failure the goal comes
/// back with the error it ends with.
async fn take(
    ctx: &Context,
    msg: &r2r::trajectory_msgs::msg::JointTrajectory,
    goal: Goal,
) -> Result<(), (Goal, GoalError)> {
    let checked = match trajectory::check(&trajectory_of(msg), &ctx.joints, now_secs()) {
        Ok(c) => Arc::new(c),
        Err(e) => return Err((goal, e)),
    };
    let _admitted = ctx.admission.lock().await;
    let invalid = |m: String| GoalError::new(ErrorCode::InvalidGoal, m);
    let playing = {
        let Ok(engine) = ctx.shared.lock() else {
            return Err((goal, invalid("internal lock poisoned".into())));
        };
        match engine.active.as_ref() {
            Some(a) if !a.goal.is_trajectory() => {
                return Err((
                    goal,
                    invalid("a MovePlay goal is playing: cancel it first".into()),
                ));
            }
            Some(_) => Some(engine.scaling),
            None => None,
        }
    };
    let goal = match playing {
        Some(factor) => {
            let request = Request::Replace {
                trajectory: checked.clone(),
                factor,
            };
            let period_s = ctx.config.params.period_s;
            match ctx
                .planner
                .handle_with(&ctx.shared, period_s, request, Some(goal))
                .await
            {
                (Ok(_), None) => return Ok(()),
                (_, None) => return Ok(()),
                // The motion ended meanwhile: start from rest.
                (Err(_), Some(goal)) if ctx.shared.lock().is_ok_and(|e| e.active.is_none()) => goal,
                (Err(refusal), Some(goal)) => return Err((goal, invalid(refusal.to_string()))),
                (Ok(_), Some(goal)) => return Err((goal, invalid("not installed".into()))),
            }
        }
        None => goal,
    };
    start_from_rest(ctx, &checked, goal).await
}

/// Start `trajectory` with nothing moving: from the last command, else from the joint states.
async fn start_from_rest(
    ctx: &Context,
    trajectory: &Arc<Checked>,
    goal: Goal,
) -> Result<(), (Goal, GoalError)> {
    let p = &ctx.config.params;
    let invalid = |m: String| GoalError::new(ErrorCode::InvalidGoal, m);
    let found = |e: &crate::engine::Engine| Some((e.at_rest(&ctx.joints)?, e.scaling));
    let Some((at_rest, factor)) =
        crate::engine::wait_for(&ctx.shared, p.joint_states_timeout_secs, found).await
    else {
        let why = format!(
            "no joint_states for all of {} within {} s: the trajectory has no state to start from",
            ctx.joints.join(", "),
            p.joint_states_timeout_secs
        );
        return Err((goal, invalid(why)));
    };
    let limits = match ctx.config.limits.for_joints(&ctx.joints, &p.limits_file) {
        Ok(l) => l,
        Err(e) => return Err((goal, invalid(e.to_string()))),
    };
    let interpolation = match p.interpolation(&ctx.joints, &limits) {
        Ok(i) => i,
        Err(e) => return Err((goal, invalid(format!("{e:#}")))),
    };
    let options = Options {
        period_secs: p.period_s,
        factor,
        align: false,
        tolerance: p.align_tolerance,
        settle_timeout_secs: p.settle_timeout_secs,
        interpolation,
    };
    let trajectory = trajectory.clone();
    let made =
        tokio::task::spawn_blocking(move || Session::follow(&trajectory, limits, options, None, &at_rest))
            .await;
    let session = match made {
        Ok(Ok(session)) => session,
        Ok(Err(e)) => return Err((goal, e)),
        Err(e) => return Err((goal, invalid(format!("planning failed: {e}")))),
    };
    let Ok(mut engine) = ctx.shared.lock() else {
        return Err((goal, invalid("internal lock poisoned".into())));
    };
    if engine.active.is_some() {
        return Err((goal, invalid("another goal started meanwhile".into())));
    }
    engine.active = Some(Active {
        session,
        goal,
        joints: ctx.joints.to_vec(),
        last_command: Vec::new(),
        ticks: 0,
        intervals: Intervals::default(),
        replanned: true,
        pending: None,
    });
    Ok(())
}

/// A motion whose goal was aborted on a path tolerance stops along its path within the limits.
async fn stop_on_request(ctx: Context, mut stops: mpsc::UnboundedReceiver<()>) {
    while stops.recv().await.is_some() {
        let period_s = ctx.config.params.period_s;
        if let Err(refusal) = ctx.planner.handle(&ctx.shared, period_s, Request::Cancel).await {
            r2r::log_warn!(&ctx.config.logger, "stopping after an abort: {refusal}");
        }
    }
}
