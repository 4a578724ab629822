//! `lockstep_calibrator`: online differential-drive calibration as a ROS 2 node.
//!
//! Subscribes (relative names, so they remap): `cmd_vel` (geometry_msgs/Twist, or TwistStamped with
//! `cmd_vel_stamped:=true`), `odom` (nav_msgs/Odometry), `slam_pose` (PoseWithCovarianceStamped, or
//! PoseStamped with `pose_type:=PoseStamped`). Samples are aligned by their header stamps (an unstamped
//! Twist takes the node's clock: run with `use_sim_time:=true` under a simulator). NaN/inf and out-of-order
//! samples are dropped and counted (`~/status`).
//!
//! Once per `step_period_secs` of data time the library steps on the latest `window_secs` window: gate (threshold 1), delay
//! search, fit, accumulation, validation on held-out segments (threshold 2). Publishes `~/status`
//! (lockstep_interfaces/CalibrationStatus, every step), `~/parameters` (CalibrationResult, latched: the
//! nominal values at start, then each accepted update) and `/diagnostics` (diagnostic_msgs, WARN on drift).
//! With `push_node` set, accepted parameters go to `<push_node>/set_parameters` (SetParameters) as
//! `<push_prefix>wheel_radius_m`...; once that node took them, they are the calibrator's new nominal too.
//! Services: `~/calibrate` (std_srvs/Trigger: step now, on the latest window), `~/reset` (back to nominal,
//! the history and everything else keyed by time forgotten).
//! A sample stamped further in the future than `history_limit_secs` past the newest sample is dropped with a
//! rate-limited warning and counted as out of order in `~/status`. Parameters are read at start: a run-time
//! set is refused with the reason (a value outside its range names the range).

mod drive;
mod inputs;
mod messages;
mod params;
mod push;
#[cfg(test)]
mod request_numbers;
mod services;
mod state;
mod stepping;
mod subscriptions;

use std::rc::Rc;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use futures::future;
use lockstep_calibrator::Calibrator;
use lockstep_ros::action_server::create_action_server;
use lockstep_ros::{lock, qos, SharedNode};
use r2r::lockstep_interfaces::action::DrivePattern;
use r2r::lockstep_interfaces::srv::PredictMotion;
use r2r::rcl_interfaces::srv::SetParameters;
use r2r::std_srvs::srv::Trigger;

use params::CalibratorParams;
use state::{Shared, State};
use stepping::{step_loop, Outputs, Push};

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_calibrator", run())
}

fn run() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_calibrator",
        about: "calibrates a differential-drive motion model online (wheel radius, track width, command delay, centripetal factor) from cmd_vel, odom and a SLAM pose, and republishes the parameters once they are validated on held-out data.",
        readme: Some(include_str!("../../README.md")),
        rules: <CalibratorParams as lockstep_ros::ParamRules>::param_rules(),
    });
    lockstep_ros::run_node("lockstep_calibrator", |node| Ok(setup(node)?)).context("lockstep_calibrator")
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    // Every parameter is read here, once: a run-time set is refused (a bad value with its range, a good one
    // with "restart the node") rather than taken and ignored.
    let p = lockstep_ros::declare_start_only_parameters(&node, CalibratorParams::default())?;
    let config = p.config()?;
    let nominal = p.nominal()?;
    let targets = p.targets()?;
    let logger = lockstep_ros::logger_name(&node)?;
    let shared: Shared = Arc::new(Mutex::new(State::new(
        Calibrator::new(config, nominal),
        p.step_period_secs()?,
    )));

    let mut n = lock(&node)?;
    let node_name = n.name()?;
    let inputs_task = subscriptions::subscribe(&mut n, &p, &shared, &logger)?;
    let outputs = Rc::new(outputs(&mut n, &p, node_name, &logger)?);
    let calibrate_srv = n.create_service::<Trigger::Service>("~/calibrate", qos::requests())?;
    let reset_srv = n.create_service::<Trigger::Service>("~/reset", qos::requests())?;
    let predict_srv = n.create_service::<PredictMotion::Service>("~/predict", qos::requests())?;
    let drive = Rc::new(drive_out(&mut n, &p, shared.clone(), targets, &logger)?);
    let goals = create_action_server::<DrivePattern::Action>(&mut n, "~/drive_pattern")?;
    drop(n);
    outputs.result.publish(&messages::nominal(&nominal, 0.0))?;
    r2r::log_info!(
        &logger,
        "nominal {nominal:?}; window {} s, cmd_vel {}, wheels from {}, slam_pose {}, push to {}",
        config.window_secs,
        if p.cmd_vel_stamped {
            "TwistStamped"
        } else {
            "Twist"
        },
        p.wheel_source,
        p.pose_type,
        outputs.push.as_ref().map_or("nobody", |p| p.service.as_str())
    );

    let step_task = step_loop(shared.clone(), outputs.clone());
    let calibrate_task = services::calibrate_service(calibrate_srv, shared.clone(), outputs.clone());
    let predict_task = services::predict_service(predict_srv, shared.clone(), logger);
    let reset_task = services::reset_service(reset_srv, shared, outputs, nominal);
    let drive_task = drive::serve(goals, drive);
    Ok(async move {
        tokio::join!(
            inputs_task,
            step_task,
            calibrate_task,
            reset_task,
            predict_task,
            drive_task
        );
        Ok(())
    })
}

/// The calibrator's publishers and the client pushing accepted parameters to `push_node` (if set).
fn outputs(
    n: &mut r2r::Node,
    p: &CalibratorParams,
    node_name: String,
    logger: &str,
) -> anyhow::Result<Outputs> {
    let push = if p.push_node.trim().is_empty() {
        None
    } else {
        let service = format!("{}/set_parameters", p.push_node.trim_end_matches('/'));
        Some(Push {
            client: n.create_client::<SetParameters::Service>(&service, qos::reliable(10))?,
            service,
            prefix: p.push_prefix.clone(),
        })
    };
    Ok(Outputs {
        status: n.create_publisher("~/status", qos::reliable(100))?,
        result: n.create_publisher("~/parameters", qos::latched())?,
        diagnostics: n.create_publisher("/diagnostics", qos::reliable(10))?,
        push,
        node_name,
        logger: logger.to_owned(),
    })
}

/// The `drive_pattern` action's command publisher (stamped or not, like the commands read).
fn drive_out(
    n: &mut r2r::Node,
    p: &CalibratorParams,
    shared: Shared,
    targets: [f64; 4],
    logger: &str,
) -> anyhow::Result<drive::Drive> {
    let pattern_topic = p.pattern_cmd_vel_topic.as_str();
    Ok(drive::Drive {
        shared,
        out: if p.cmd_vel_stamped {
            drive::CommandOut::Stamped(n.create_publisher(pattern_topic, qos::reliable(10))?)
        } else {
            drive::CommandOut::Plain(n.create_publisher(pattern_topic, qos::reliable(10))?)
        },
        clock: n.get_ros_clock(),
        targets,
        logger: logger.to_owned(),
    })
}
