//! `lockstep_actuator`: one simulated actuator for `lockstep_task_manager`. The parameter `kind`
//! picks which; each kind serves one typed action server (relative names, so in the root namespace they are
//! `/navigate`, `/localize`, ...; parameter `server` renames it):
//!
//! - `navigation`: action `navigate` (lockstep_interfaces/Navigate). Follows the goal's route (map frame)
//!   waypoint by waypoint, publishing geometry_msgs/Twist on `cmd_vel` every 1/`control_rate_hz` s from the
//!   poses on `ground_truth` (geometry_msgs/PoseStamped): turn toward the waypoint, drive at
//!   min(speed_mps, `max_linear_mps`) scaled by the cosine of the heading error (none beyond 60 degrees),
//!   slower on the approach to the last waypoint; never faster than the goal's speed_mps. Feedback every
//!   control step: waypoint index, the route still ahead, its length, the commanded speed. Result: distance
//!   travelled (from ground truth), duration. On success or cancel a zero Twist goes out at once (three
//!   times). No pose for `pose_timeout_s`: aborted, naming the topic. The path ahead goes out on `plan`
//!   (nav_msgs/Path, latched, like Nav2's) at each waypoint, and empty once the goal ends.
//! - `localization` (`localize`, Localize), `lift` (`lift`, Lift), `roller` (`roll`, Roll), `loader` (`load`,
//!   Load), `display` (`display`, Display): timed, each goal takes `duration_s` of wall time with feedback
//!   (progress 0..1, remaining_s) every 0.1 s.
//! - `hmi`: action `prompt` (Prompt). Logs the prompt and waits for a std_msgs/String on `hmi/reply` (the
//!   first one after the goal started is the reply), feedback `waited_s` every 0.1 s; a goal `timeout_s` > 0
//!   that elapses aborts it.
//!
//! Common to every kind:
//! - One goal at a time. While busy (a goal running or waiting for its acceptance, or occupied) a new goal is
//!   rejected. A goal is accepted `accept_delay_s` after its request. A cancel of the running goal is
//!   accepted and the goal ends canceled (success false, message "cancelled"; CANCELED on the status
//!   topic). A bad goal (a non-finite number, a field out of range) is rejected in the goal response, and the
//!   log names the field. With `fail`, every goal ends aborted with success false and
//!   "simulated failure (parameter fail)" after its normal duration (navigation: at once).
//! - Service `~/occupy` (lockstep_interfaces/Occupy): busy for `duration_s` from now (0: free again).
//! - Topic `actuator_states` (lockstep_interfaces/ActuatorState, reliable, depth 10): the action server's
//!   fully qualified name, busy, busy_remaining_s (the occupation, the timed goal's remaining duration, or
//!   the remaining route over the speed), stamped with the node's clock; at 10 Hz and on every change.
//!
//! Parameters (see [`params::ActuatorParams`]): `kind` (required), `server`, `fail`, `accept_delay_s`,
//! `duration_s`, and for navigation `control_rate_hz`, `max_linear_mps`, `max_angular_radps`, `k_heading`,
//! `waypoint_tolerance_m`, `approach_decel_mps2`, `pose_timeout_s`. An unknown or missing `kind` (or a bad
//! number) stops the process with one error line.
//!
//! Modules: [`params`], [`busy`] (busy state, `actuator_states`, `~/occupy`), [`serve`] (goal requests,
//! acceptance, ending goals), [`timed`], [`navigation`], [`hmi`]. What they decide (busy time, a timed
//! goal's progress and outcome, the prompt's timeout and answer, the route follower and a drive's progress)
//! is the core's `lockstep_tasks::sim`; these modules map goals, topics and the clock to it.

mod busy;
mod hmi;
mod navigation;
mod params;
mod serve;
mod timed;

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;

use lockstep_ros::{lock, qos, SharedNode};
use r2r::geometry_msgs::msg::{PoseStamped, Twist};
use r2r::lockstep_interfaces::action::{Display, Lift, Load, Localize, Navigate, Prompt, Roll};
use r2r::lockstep_interfaces::msg::ActuatorState;
use r2r::lockstep_interfaces::srv::Occupy;
use r2r::nav_msgs::msg::Path;
use r2r::std_msgs::msg::String as StringMsg;

use busy::Status;
use lockstep_tasks_node::action_server::create_action_server;
use params::{qualified, ActuatorParams, Kind};
use serve::{serve_goals, Common};
use timed::{run_timed, Timed};

const NODE: &str = "lockstep_actuator";

type Task = Pin<Box<dyn Future<Output = ()>>>;

fn main() -> ExitCode {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_actuator",
        about: "one simulated actuator for the task manager (parameter `kind`: navigation, localization, lift, roller, loader, display, hmi), each serving its own action.",
        readme: Some(include_str!("../../../../README.md")),
        rules: <ActuatorParams as lockstep_ros::ParamRules>::param_rules(),
    });
    match lockstep_ros::run_node(NODE, |node| Ok(setup(node)?)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{NODE}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn setup(node: SharedNode) -> anyhow::Result<impl Future<Output = Result<(), lockstep_ros::BoxError>>> {
    // Checked against the rules at start (a bad value stops the node, naming the parameter and its range) and
    // on every run-time set; all are read at start only, so a run-time set is refused saying so.
    let p = lockstep_ros::declare_start_only_parameters(&node, ActuatorParams::default())?;
    let kind = p.kind()?;
    let logger = lockstep_ros::logger_name(&node)?;
    let mut n = lock(&node)?;
    let namespace = n.namespace()?;
    let server_name = p.server_name(kind);
    let server = qualified(&namespace, &server_name);
    let states = n.create_publisher::<ActuatorState>("actuator_states", qos::reliable(10))?;
    let occupy = n.create_service::<Occupy::Service>("~/occupy", qos::requests())?;
    let clock = n.get_ros_clock();
    let status = Status::default();
    let common = Arc::new(Common {
        params: p.clone(),
        status: status.clone(),
        logger: logger.clone(),
        server: server.clone(),
        ended: std::sync::atomic::AtomicI64::new(0),
    });
    let goals: Task = match kind {
        Kind::Navigation => navigation_server(&mut n, &namespace, &server_name, &common)?,
        Kind::Localization => timed_server::<Localize::Action>(&mut n, &server_name, &common)?,
        Kind::Lift => timed_server::<Lift::Action>(&mut n, &server_name, &common)?,
        Kind::Roller => timed_server::<Roll::Action>(&mut n, &server_name, &common)?,
        Kind::Loader => timed_server::<Load::Action>(&mut n, &server_name, &common)?,
        Kind::Display => timed_server::<Display::Action>(&mut n, &server_name, &common)?,
        Kind::Hmi => hmi_server(&mut n, &namespace, &server_name, &common)?,
    };
    drop(n);
    log_start(&logger, kind, &server, &p);
    let states_task = busy::publish_states(status.clone(), states, clock, server, logger.clone());
    let occupy_task = busy::serve_occupy(occupy, status, logger);
    Ok(async move {
        tokio::join!(goals, states_task, occupy_task);
        Ok(())
    })
}

/// The navigation kind's action server, with its pose feed, `cmd_vel` and `plan`.
fn navigation_server(
    n: &mut r2r::Node,
    namespace: &str,
    server_name: &str,
    common: &Arc<Common>,
) -> anyhow::Result<Task> {
    let requests = create_action_server::<Navigate::Action>(n, server_name)?;
    let poses = n.subscribe::<PoseStamped>("ground_truth", qos::reliable(10))?;
    let cmd_vel = n.create_publisher::<Twist>("cmd_vel", qos::reliable(10))?;
    let plan = n.create_publisher::<Path>("plan", qos::latched())?;
    let pose_topic = qualified(namespace, "ground_truth");
    let (nav, feed) = navigation::Navigation::new(poses, cmd_vel, plan, pose_topic);
    let serve = serve_goals(
        requests,
        common.clone(),
        None,
        navigation::check,
        move |goal, cancels, common| navigation::run_navigation(goal, cancels, common, nav.clone()),
    );
    Ok(Box::pin(async move {
        tokio::join!(feed, serve);
    }))
}

/// The HMI kind's action server, with the replies on `hmi/reply`.
fn hmi_server(
    n: &mut r2r::Node,
    namespace: &str,
    server_name: &str,
    common: &Arc<Common>,
) -> anyhow::Result<Task> {
    let requests = create_action_server::<Prompt::Action>(n, server_name)?;
    let subscription = n.subscribe::<StringMsg>("hmi/reply", qos::reliable(10))?;
    let (replies, forward) = hmi::replies(subscription, qualified(namespace, "hmi/reply"));
    let serve = serve_goals(
        requests,
        common.clone(),
        None,
        hmi::check,
        move |goal, cancels, common| hmi::run_prompt(goal, cancels, common, replies.clone()),
    );
    Ok(Box::pin(async move {
        tokio::join!(forward, serve);
    }))
}

/// One log line saying what this actuator is: its kind, action server, duration, late acceptance, failure.
fn log_start(logger: &str, kind: Kind, server: &str, p: &ActuatorParams) {
    r2r::log_info!(
        logger,
        "{} actuator: action {server}{}{}{}",
        kind.name(),
        if kind.is_timed() {
            format!(", {} s per goal", p.duration_s)
        } else {
            String::new()
        },
        if p.accept_delay_s > 0.0 {
            format!(", accepting {} s late", p.accept_delay_s)
        } else {
            String::new()
        },
        if p.fail {
            ", every goal fails (parameter fail)"
        } else {
            ""
        }
    );
}

/// The action server of a timed kind, serving goals of action type `A`.
fn timed_server<A: Timed>(n: &mut r2r::Node, name: &str, common: &Arc<Common>) -> anyhow::Result<Task> {
    let requests = create_action_server::<A>(n, name)?;
    let expected = Some(common.params.duration_s);
    Ok(Box::pin(serve_goals(
        requests,
        common.clone(),
        expected,
        A::check,
        run_timed::<A>,
    )))
}
