//! `lockstep_interpolation_player`: plays interpolation files to ros2_control.
//!
//! - Action `move_play` (lockstep_interfaces/MovePlay): goal = file path (under `roots`), optional section and
//!   speed factor. An alignment motion is inserted when `joint_states` is away from the section's first
//!   point. Feedback: state, point index, tau, s. Result: points played, alarms, peak |v| |a| |j| per joint as
//!   fractions of the limits, largest tracking error, `valid`. Cancel stops like a pause.
//! - Services (relative names, so in the root namespace they are `/pause`, `/resume`, `/set_speed`):
//!   `pause` (PauseMotion), `resume` (ResumeMotion), `set_speed` (SetSpeed). Each answer says what will happen
//!   or why not; a refused request changes nothing. Changes are planned off the output thread (`requests`).
//! - Output every `period_s`: `<controller>/commands` (std_msgs/Float64MultiArray, the controller's joint
//!   order), or `<controller>/joint_trajectory` windows of the next `trajectory_window_points` commands,
//!   re-sent every `trajectory_resend_ticks` and at once after a change. While paused the hold point keeps
//!   coming. Every name is relative: `-r __ns:=/arm1` moves them all.
//!
//! The logic (file, limits, planning, alignment) is `lockstep_interpolation`; this file wires it to ROS.

mod context;
mod engine;
mod goal;
mod params;
mod requests;
mod results;
mod scaling;
mod services;
mod state;
mod ticker;
mod trajectory_controller;

use std::sync::Arc;

use anyhow::Context as _;
use futures::{future, StreamExt};
use lockstep_interpolation::session::{Options, Session};
use lockstep_interpolation::timing::Intervals;
use lockstep_interpolation::{goal_factor, validate, InterpolationFile, JointLimits};
use lockstep_ros::{lock, qos, SharedNode};
use r2r::lockstep_interfaces::action::MovePlay;
use r2r::sensor_msgs::msg::JointState;
use r2r::std_msgs::msg::Float64MultiArray;
use r2r::trajectory_msgs::msg::JointTrajectory;

use engine::{Active, Config, Shared};
use goal::Goal;
use params::PlayerParams;
use ticker::{Outputs, Ticker};

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_interpolation_player", run())
}

fn run() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_interpolation_player",
        about: "plays interpolation files (per-joint positions at a fixed period) to ros2_control through the move_play action, with alignment to /joint_states, and pause / resume / speed changes kept within every joint's limits.",
        readme: Some(include_str!("../../README.md")),
        rules: <PlayerParams as lockstep_ros::ParamRules>::param_rules(),
    });
    lockstep_ros::run_node("lockstep_interpolation_player", |node| Ok(setup(node)?))
        .context("lockstep_interpolation_player")
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    // Every parameter is read here, once: a run-time set is refused (a bad value with its range, a good one
    // with "restart the node") rather than taken and ignored.
    let p = lockstep_ros::declare_start_only_parameters(&node, PlayerParams::default())?;
    p.check()?;
    let limits =
        JointLimits::read(std::path::Path::new(&p.limits_file)).context("parameter 'limits_file'")?;
    let output = p.output()?;
    let logger = lockstep_ros::logger_name(&node)?;
    let (forward, trajectory) = make_publishers(&node, &p.controller)?;
    r2r::log_info!(
        &logger,
        "roots [{}], limits for {} joints from {}, T_c {} s, output {:?} to /{}",
        p.roots,
        limits.joints.len(),
        p.limits_file,
        p.period_s,
        output,
        p.controller
    );
    let shared: Shared = Arc::default();
    let (stops, stop_requests) = tokio::sync::mpsc::unbounded_channel();
    let config = Arc::new(Config {
        params: p.clone(),
        limits,
        logger: logger.clone(),
        stops,
    });
    let states_task = joint_states_task(&node, &shared)?;
    let goals = lock(&node)?.create_action_server::<MovePlay::Action>("move_play")?;
    let planner = Arc::new(requests::Planner::new());
    let services = services::Services {
        shared: shared.clone(),
        planner: planner.clone(),
        period_s: p.period_s,
    };
    let pause_task = services.pause(&node)?;
    let resume_task = services.resume(&node)?;
    let speed_task = services.set_speed(&node)?;
    let (state, controller_tasks) = if p.trajectory_controller() {
        let ctx = (shared.clone(), config.clone(), planner.clone());
        let (state, tasks) = trajectory_controller::start(&node, ctx, stop_requests)?;
        (Some(state), Some(tasks))
    } else {
        (None, None)
    };
    let outputs = Outputs {
        output,
        forward,
        trajectory,
        state,
    };
    let ticker =
        Ticker::start(shared.clone(), config.clone(), outputs).context("starting the output thread")?;
    let goals_task = serve_goals(goals, shared, config, planner);
    Ok(async move {
        // Owned by the node's main future: dropped (thread stopped and joined) when it ends, before the node.
        let _ticker = ticker;
        let controller = async move {
            if let Some(tasks) = controller_tasks {
                tasks.await;
            }
        };
        tokio::join!(
            states_task,
            goals_task,
            pause_task,
            resume_task,
            speed_task,
            controller
        );
        Ok(())
    })
}

/// The two outputs to the controller: forward commands and joint trajectories. Relative names: a namespace
/// (`-r __ns:=/arm1`) moves them all, so two arms can run side by side.
fn make_publishers(
    node: &SharedNode,
    controller: &str,
) -> anyhow::Result<(r2r::Publisher<Float64MultiArray>, r2r::Publisher<JointTrajectory>)> {
    let mut n = lock(node)?;
    let forward =
        n.create_publisher::<Float64MultiArray>(&format!("{controller}/commands"), qos::reliable(100))?;
    let trajectory =
        n.create_publisher::<JointTrajectory>(&format!("{controller}/joint_trajectory"), qos::reliable(100))?;
    Ok((forward, trajectory))
}

/// Keeps the latest measured position of every joint `joint_states` names.
fn joint_states_task(node: &SharedNode, shared: &Shared) -> anyhow::Result<impl future::Future<Output = ()>> {
    let joint_states = lock(node)?.subscribe::<JointState>("joint_states", qos::reliable(100))?;
    let shared = shared.clone();
    Ok(joint_states.for_each(move |msg| {
        if let Ok(mut e) = shared.lock() {
            for (name, position) in msg.name.iter().zip(&msg.position) {
                e.measured.insert(name.clone(), *position);
            }
            for (name, velocity) in msg.name.iter().zip(&msg.velocity) {
                e.measured_velocity.insert(name.clone(), *velocity);
            }
        }
        future::ready(())
    }))
}

/// Accept each goal, load its file and start it; a goal that cannot play is aborted with the reason.
async fn serve_goals(
    mut goals: impl futures::Stream<Item = r2r::ActionServerGoalRequest<MovePlay::Action>> + Unpin,
    shared: Shared,
    config: Arc<Config>,
    planner: Arc<requests::Planner>,
) {
    while let Some(request) = goals.next().await {
        let wanted = request.goal.clone();
        let (goal, cancels) = match request.accept() {
            Ok(accepted) => accepted,
            Err(e) => {
                // RCL_RET_TIMEOUT here: the client's response reader is not discovered yet. The goal is
                // dropped unstarted; the client sees no response and may send it again.
                r2r::log_error!(
                    &config.logger,
                    "could not answer a goal request ({e}); it is dropped, unstarted: the client may send it again"
                );
                continue;
            }
        };
        let uuid = goal.uuid;
        let started = start_goal(&wanted, &shared, &config).await;
        let refused = match started {
            Ok((session, joints)) => match shared.lock() {
                Ok(mut e) if e.active.is_none() => {
                    r2r::log_info!(
                        &config.logger,
                        "playing {} ({} joints)",
                        wanted.path,
                        joints.len()
                    );
                    e.active = Some(Active {
                        session,
                        goal: Goal::MovePlay(goal),
                        joints,
                        last_command: Vec::new(),
                        ticks: 0,
                        intervals: Intervals::default(),
                        replanned: false,
                        pending: None,
                    });
                    None
                }
                _ => Some((
                    goal,
                    "another goal (MovePlay or a joint trajectory) is playing: cancel it first".to_owned(),
                )),
            },
            Err(e) => Some((goal, format!("{e:#}"))),
        };
        if let Some((mut goal, reason)) = refused {
            // The path is the user's text: at most its first 200 characters go back, in the log and the answer.
            let path = lockstep_ros::text::echo(&wanted.path);
            let reason = match &path {
                std::borrow::Cow::Owned(clipped) => reason.replace(wanted.path.as_str(), clipped),
                std::borrow::Cow::Borrowed(_) => reason,
            };
            r2r::log_warn!(&config.logger, "goal {path}: {reason}");
            let _ = goal.abort(MovePlay::Result {
                message: reason,
                ..Default::default()
            });
            continue;
        }
        let (shared, planner, logger) = (shared.clone(), planner.clone(), config.logger.clone());
        let period_s = config.params.period_s;
        tokio::spawn(requests::serve_cancels(
            planner, shared, period_s, logger, uuid, cancels,
        ));
    }
}

/// Load the goal's file and set up its session (waiting for /joint_states when aligning).
async fn start_goal(
    wanted: &MovePlay::Goal,
    shared: &Shared,
    config: &Config,
) -> anyhow::Result<(Session, Vec<String>)> {
    let p = &config.params;
    let path = lockstep_interpolation::roots::resolve(&wanted.path, &p.roots())?;
    let file = InterpolationFile::read(&path)?;
    let limits = config.limits.for_joints(&file.joints, &p.limits_file)?;
    validate::check_file(&file, &limits)?;
    let joints = file.joints.clone();
    let current = if p.align {
        let measured = |e: &engine::Engine| -> Option<Vec<f64>> {
            joints.iter().map(|j| e.measured.get(j).copied()).collect()
        };
        let got = engine::wait_for(shared, p.joint_states_timeout_secs, measured).await;
        Some(got.ok_or_else(|| {
            anyhow::anyhow!(
                "no /joint_states for all of {} within {} s: cannot tell whether an alignment is needed",
                joints.join(", "),
                p.joint_states_timeout_secs
            )
        })?)
    } else {
        None
    };
    let options = Options {
        period_secs: p.period_s,
        factor: goal_factor(wanted.speed_factor),
        align: p.align,
        tolerance: p.align_tolerance,
        settle_timeout_secs: p.settle_timeout_secs,
        interpolation: p.interpolation(&joints, &limits)?,
    };
    let session = Session::new(
        Arc::new(file),
        limits,
        wanted.start_index,
        wanted.end_index,
        current.as_deref(),
        options,
    )?;
    Ok((session, joints))
}
