//! `lockstep_mock_joints`: position-controlled joints for tests and demos without hardware, like
//! ros2_control's mock_components: takes `<controller>/commands` (std_msgs/Float64MultiArray, `joints`
//! order) or `<controller>/joint_trajectory` (followed like a joint_trajectory_controller: each message
//! replaces the trajectory from where the joints are commanded, sampled every command period), moves each
//! joint to its command (at once, or with a first-order lag of `lag_time_constant_s`), publishes
//! `joint_states` every `state_period_s`, and raises an overspeed alarm whenever a commanded step needs more
//! than a joint's velocity, acceleration or jerk limit (finite differences at the command period,
//! `lockstep_interpolation::Monitor`): a log line and a message on `~/alarm` (std_msgs/String) naming the joint, the
//! quantity and the values. Names are relative: `-r __ns:=/arm1` moves them all.
//!
//! The command period is `command_period_s`, or when that is 0 (the default) `period_s`, the player's
//! parameter: one parameter file with a `/**:` section (or both nodes' sections) configures both.

use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::{future, StreamExt};
use lockstep_interpolation::mock::{self, MockJoints, TrajectoryIgnored};
use lockstep_interpolation::JointLimits;
use lockstep_ros::{lock, qos, SharedNode};
use r2r::sensor_msgs::msg::JointState;
use r2r::std_msgs::msg::{Float64MultiArray, String as StringMsg};
use r2r::trajectory_msgs::msg::JointTrajectory;

#[derive(r2r::RosParams, Debug, Clone)]
struct MockParams {
    /// Comma-separated joint names (the command's order).
    joints: String,
    /// Comma-separated start positions (empty: all 0).
    initial_positions: String,
    /// Joint-limits YAML (ros2_control layout) the alarm checks against.
    limits_file: String,
    /// The controller whose command topic this takes (/<controller>/commands and /<controller>/joint_trajectory).
    controller: String,
    /// Period of the commands [s]: the finite differences of the alarm assume one command per period; 0: period_s.
    command_period_s: f64,
    /// The player's output period [s], the command period when command_period_s is 0 (so one parameter file sets both nodes).
    period_s: f64,
    /// Seconds between two /joint_states.
    state_period_s: f64,
    /// Time constant of a first-order response to the commands [s] (a drive that lags); 0: the joints are at each command at once.
    lag_time_constant_s: f64,
}

impl Default for MockParams {
    fn default() -> Self {
        Self {
            joints: String::new(),
            initial_positions: String::new(),
            limits_file: String::new(),
            controller: "forward_position_controller".into(),
            command_period_s: 0.0,
            period_s: 0.002,
            state_period_s: 0.01,
            lag_time_constant_s: 0.0,
        }
    }
}

/// What each parameter may hold, checked at start and on every run-time set (read at start only: a valid
/// set is refused too, with a reason saying to restart the node).
const RULES: &[lockstep_ros::ParamRule] = &[
    lockstep_ros::ParamRule::non_empty("joints"),
    lockstep_ros::ParamRule::non_empty("limits_file"),
    lockstep_ros::ParamRule::non_empty("controller"),
    lockstep_ros::ParamRule::real("command_period_s", lockstep_ros::Real::closed(0.0, 10.0, "s")),
    lockstep_ros::ParamRule::real("period_s", lockstep_interpolation::PERIOD_S),
    lockstep_ros::ParamRule::real("state_period_s", lockstep_ros::Real::closed(1e-4, 60.0, "s")),
    lockstep_ros::ParamRule::real("lag_time_constant_s", lockstep_ros::Real::closed(0.0, 60.0, "s")),
];

impl lockstep_ros::ParamRules for MockParams {
    fn param_rules() -> &'static [lockstep_ros::ParamRule] {
        RULES
    }
}

/// Seconds from `stamp` to now on the system clock; 0 for a zero stamp ("now") or one in the future.
fn seconds_since(stamp: &r2r::builtin_interfaces::msg::Time) -> f64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let stamp_secs = f64::from(stamp.sec) + f64::from(stamp.nanosec) * 1e-9;
    mock::seconds_since(stamp_secs, now)
}

type Shared = Arc<Mutex<MockJoints>>;

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_mock_joints", run())
}

fn run() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_mock_joints",
        about: "position-controlled mock joints for tests and demos without hardware (like ros2_control's mock_components): takes a forward position controller's commands or a JointTrajectory, publishes /joint_states, and raises an overspeed alarm when a command needs more than a joint's limits.",
        readme: Some(include_str!("../../../README.md")),
        rules: <MockParams as lockstep_ros::ParamRules>::param_rules(),
    });
    lockstep_ros::run_node("lockstep_mock_joints", |node| Ok(setup(node)?)).context("lockstep_mock_joints")
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let p = lockstep_ros::declare_start_only_parameters(&node, MockParams::default())?;
    let names = lockstep_ros::param_list(&p.joints);
    anyhow::ensure!(!names.is_empty(), "parameter `joints` is empty");
    let values =
        (!p.initial_positions.trim().is_empty()).then(|| lockstep_ros::param_list(&p.initial_positions));
    let positions = mock::initial_positions(values.as_deref(), names.len()).map_err(anyhow::Error::msg)?;
    let command_period_s = mock::command_period(p.command_period_s, p.period_s);
    let all = JointLimits::read(std::path::Path::new(&p.limits_file)).context("parameter 'limits_file'")?;
    let limits = all.for_joints(&names, &p.limits_file)?;
    let lagless = p.lag_time_constant_s == 0.0;
    let joints = MockJoints::new(names, positions, limits, command_period_s, lagless);
    let shared: Shared = Arc::new(Mutex::new(joints));
    let logger = lockstep_ros::logger_name(&node)?;
    let alarm = Rc::new(lock(&node)?.create_publisher::<StringMsg>("~/alarm", qos::reliable(100))?);
    let command_task = command_task(&node, &p.controller, &shared, &alarm, &logger)?;
    let follow_task = follow_task(command_period_s, &shared, &alarm, &logger);
    let trajectory_task = trajectory_task(&node, &p.controller, &shared, &logger)?;
    let state_task = state_task(&node, &p, command_period_s, shared, logger)?;
    Ok(async move {
        tokio::join!(command_task, trajectory_task, follow_task, state_task);
        Ok(())
    })
}

/// Takes `<controller>/commands`: each ends any trajectory being followed.
fn command_task(
    node: &SharedNode,
    controller: &str,
    shared: &Shared,
    alarm: &Rc<r2r::Publisher<StringMsg>>,
    logger: &str,
) -> anyhow::Result<impl future::Future<Output = ()>> {
    let topic = format!("{controller}/commands");
    let commands = lock(node)?.subscribe::<Float64MultiArray>(&topic, qos::reliable(1000))?;
    let (shared, alarm, logger) = (shared.clone(), alarm.clone(), logger.to_owned());
    Ok(commands.for_each(move |msg| {
        if let Ok(mut j) = shared.lock() {
            let answer = j.forward(&msg.data, Instant::now());
            report(answer, &alarm, &logger);
        }
        future::ready(())
    }))
}

/// The trajectory being followed, sampled every command period (its own count of periods, not the wall
/// clock, so a late wake-up does not show as a velocity step).
fn follow_task(
    command_period_s: f64,
    shared: &Shared,
    alarm: &Rc<r2r::Publisher<StringMsg>>,
    logger: &str,
) -> impl future::Future<Output = ()> {
    let (shared, alarm, logger) = (shared.clone(), alarm.clone(), logger.to_owned());
    async move {
        let mut interval = tokio::time::interval(Duration::from_secs_f64(command_period_s));
        loop {
            interval.tick().await;
            let Ok(mut j) = shared.lock() else { return };
            if let Some(sample) = j.advance(command_period_s) {
                let answer = j.command(&sample, Instant::now());
                report(answer, &alarm, &logger);
            }
        }
    }
}

/// Takes `<controller>/joint_trajectory`. As a joint_trajectory_controller: a stamped trajectory starts at
/// its stamp (one that arrived late is joined where it is by now), one stamped 0 on receipt; one wholly in
/// the past is ignored.
fn trajectory_task(
    node: &SharedNode,
    controller: &str,
    shared: &Shared,
    logger: &str,
) -> anyhow::Result<impl future::Future<Output = ()>> {
    let topic = format!("{controller}/joint_trajectory");
    let trajectories = lock(node)?.subscribe::<JointTrajectory>(&topic, qos::reliable(1000))?;
    let (shared, logger) = (shared.clone(), logger.to_owned());
    Ok(trajectories.for_each(move |msg| {
        let Ok(mut j) = shared.lock() else {
            return future::ready(());
        };
        let points: Vec<(f64, &[f64])> = (msg.points.iter())
            .map(|point| {
                let at = &point.time_from_start;
                let at_secs = f64::from(at.sec) + f64::from(at.nanosec) * 1e-9;
                (at_secs, point.positions.as_slice())
            })
            .collect();
        let elapsed = seconds_since(&msg.header.stamp);
        match j.follow(&msg.joint_names, &points, elapsed) {
            Ok(()) => {}
            Err(TrajectoryIgnored::InThePast) => r2r::log_warn!(
                &logger,
                "a JointTrajectory whose every point is in the past ({elapsed:.3} s after its stamp): ignored"
            ),
            Err(TrajectoryIgnored::Incomplete) => r2r::log_warn!(
                &logger,
                "a JointTrajectory without points, or without a position for every joint: ignored"
            ),
        }
        future::ready(())
    }))
}

/// Publishes `joint_states` every `state_period_s` (after the lag's step), and logs the arrival timing of
/// each burst of commands that ended.
fn state_task(
    node: &SharedNode,
    p: &MockParams,
    command_period_s: f64,
    shared: Shared,
    logger: String,
) -> anyhow::Result<impl future::Future<Output = ()>> {
    let mut n = lock(node)?;
    let states = n.create_publisher::<JointState>("joint_states", qos::reliable(10))?;
    let clock = n.get_ros_clock();
    drop(n);
    let (state_period_s, tau_s) = (p.state_period_s, p.lag_time_constant_s);
    Ok(async move {
        let mut interval = tokio::time::interval(Duration::from_secs_f64(state_period_s));
        loop {
            interval.tick().await;
            let Ok(mut j) = shared.lock() else { return };
            j.lag(state_period_s, tau_s);
            if let Some(timing) = j.ended_burst(command_period_s) {
                r2r::log_info!(&logger, "command arrivals: {timing}");
            }
            let mut msg = JointState {
                name: j.names.clone(),
                position: j.positions.clone(),
                ..Default::default()
            };
            msg.header.stamp = lockstep_ros::time::clock_stamp(&clock);
            let _ = states.publish(&msg);
        }
    })
}

/// Logs an ignored command, or logs and publishes an overspeed alarm.
fn report(answer: Result<Option<String>, String>, alarm: &r2r::Publisher<StringMsg>, logger: &str) {
    match answer {
        Ok(None) => {}
        Ok(Some(text)) => {
            r2r::log_warn!(logger, "{text}");
            let _ = alarm.publish(&StringMsg { data: text });
        }
        Err(ignored) => r2r::log_warn!(logger, "{ignored}"),
    }
}
