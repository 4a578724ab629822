//! `lockstep_sim_node`: the rule-driven vehicle simulator as a ROS 2 node, and the embedded
//! stand-in for Gazebo. It speaks what a Gazebo diff-drive plugin and ros2_control would: `cmd_vel` in;
//! `odom`, a noisy SLAM pose, `joint_states` and `/clock` out; plus the ground truth, the behaviour state and
//! rviz markers. Rule files and the scene are hot-reloaded (off the node's thread): a file that fails to load
//! is reported with `file:line:column` and the previous rules and scene keep running.
//!
//! Topics (relative, so they remap): sub `cmd_vel` (geometry_msgs/Twist, commanded mode); pub `cmd_vel_out`
//! (geometry_msgs/TwistStamped: the command each step decided -- cmd_vel, the drive script or the rules'
//! drive -- stamped with the simulated time it was issued, before the true delay; on every change and with
//! odom), `odom`
//! (nav_msgs/Odometry, odom -> base_link, NOMINAL parameters), `slam_pose`
//! (geometry_msgs/PoseWithCovarianceStamped, map), `ground_truth` (geometry_msgs/PoseStamped, map),
//! `joint_states` (sensor_msgs/JointState), `~/state` (std_msgs/String, transient-local, the latest
//! `state_history_depth` states), `markers` (visualization_msgs/MarkerArray: vehicle, path of at most
//! `path_max_points` points, destination) and `markers/grid` (latched: the cells coloured by surface),
//! `/clock` (rosgraph_msgs/Clock, when `publish_clock`).
//! Services: `~/reload` (std_srvs/Trigger), `~/set_destination` (lockstep_interfaces/SetDestination).
//! Sub `sim_facts` (std_msgs/String: Datalog facts such as `wet_floor.`, the latest message asserted in
//! every evaluation beside `sim_time(T)`; surface rules may depend on them, decoded every tick).
//! Run-time parameters: `time_scale`, `nominal_vehicle.*` (a calibration pushed through SetParameters:
//! wheel speeds and odometry change at once), `true_vehicle.*` (a new load), `drive_script`/`drive_repeat`,
//! `min_step_m`, `slip_model`/`lateral_slip_s`/`longitudinal_slip_s2pm` (the ground's slip model, from the
//! next step), `scene_file` and `rule_files` (loaded at once; a file that does not load is refused with
//! its `file:line:column`). Every other parameter is read at start: setting it is refused with the reason.
//! Every header stamp is simulated time (start at 0): run other nodes with `use_sim_time:=true`.
//!
//! Bad input (a non-finite or out-of-range cmd_vel, a cell outside the grid, a bad `time_scale`) is dropped,
//! the state stays valid, and a throttled log line gives the running counts per input
//! (`dropped N bad input(s) so far (cmd_vel: a, ...)`); std_msgs/String `~/state` has no field for them.
//!
//! Modules: [`params`] (parameters), [`messages`] (message building), [`publish`] (publishers),
//! [`shared`] (the simulator and the state the tasks share), [`inputs`] (subscriptions, services, parameter
//! changes), [`watch`] (reload and file watching), [`sim_loop`] (the paced simulation loop; the pacing itself
//! is `lockstep_sim::Pacer`).

mod config;
mod inputs;
mod messages;
mod params;
mod publish;
mod shared;
mod sim_loop;
mod watch;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use futures::future;
use lockstep_ros::{lock, qos, Guarded, SharedNode};
use lockstep_sim::{Mode, Pacer, RunningDrive, SimConfig, Simulator};
use r2r::geometry_msgs::msg::Twist;
use r2r::lockstep_interfaces::srv::SetDestination;
use r2r::std_msgs::msg::String as StringMsg;
use r2r::std_srvs::srv::Trigger;

use config::Statics;
use params::{rule_paths, SimParams};
use publish::Publishers;
use shared::{Shared, SharedSim};
use watch::Reloader;

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_sim_node", run())
}

fn run() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_sim_node",
        about: "the rule-driven differential-drive vehicle simulator, a stand-in for Gazebo: cmd_vel in; odom, a noisy SLAM pose, joint_states, /clock and rviz markers out; behaviour and road surfaces from Datalog rule files reloaded while it runs.",
        readme: Some(include_str!("../../README.md")),
        rules: <SimParams as lockstep_ros::ParamRules>::param_rules(),
    });
    lockstep_ros::run_node("lockstep_sim_node", |node| Ok(setup(node)?)).context("lockstep_sim_node")
}

/// What the node starts from: the parameters as read at start and what derives from them.
struct Start {
    config: SimConfig,
    scene_file: PathBuf,
    rule_files: Vec<PathBuf>,
    st: Statics,
    time_scale: f64,
    drive: Option<RunningDrive>,
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let declared = lockstep_ros::declare_parameters(&node, Guarded::new(SimParams::default()))?;
    let params = declared.values;
    let logger = lockstep_ros::logger_name(&node)?;
    let start = read_start(&params, &logger)?;
    let pacer = Pacer::new(
        start.st.p.rate_hz,
        start.st.p.publish_rate_hz,
        start.time_scale,
        0.0,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mode = start.config.mode;
    let sim = load_simulator(&start, &logger)?;
    let shared: SharedSim = Arc::new(Mutex::new(Shared::new(sim, start.drive)));
    let reloader = Reloader::new(shared.clone(), start.scene_file, start.rule_files, mode);
    guard_parameters(&params, &shared, &reloader, &logger)?;
    let pubs = Publishers::create(&node, &start.st, logger.clone())?;
    let topics_task = topic_inputs(&node, mode, &shared, &logger)?;
    let services_task = service_inputs(&node, &shared, &reloader, &logger)?;
    let params_task = parameter_input(
        &node,
        declared.changes,
        &params,
        start.time_scale,
        &shared,
        &logger,
    )?;
    let st = start.st;
    let watch_task = watch::watch_files(reloader, logger.clone(), st.clone());
    let loop_task = sim_loop::run(shared, params, pubs, pacer, logger, st);
    Ok(async move {
        tokio::join!(topics_task, services_task, params_task, watch_task, loop_task);
        Ok(())
    })
}

/// The parameters as read at start: the simulator's configuration, its files and the drive script.
fn read_start(params: &Mutex<Guarded<SimParams>>, logger: &str) -> anyhow::Result<Start> {
    let p = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
    let rule_files = rule_paths(&p.rule_files);
    anyhow::ensure!(!rule_files.is_empty(), "parameter `rule_files` names no file");
    let config = p.config()?;
    let drive = RunningDrive::start(&p.drive_script, &p.mode, p.drive_repeat, 0.0)
        .map_err(|e| anyhow::anyhow!("parameter `drive_script`: {e}"))?;
    if let Some(d) = &drive {
        r2r::log_info!(logger, "{}", d.describe());
    }
    Ok(Start {
        config,
        scene_file: PathBuf::from(&p.scene_file),
        rule_files,
        st: Statics::from(&**p),
        time_scale: p.time_scale,
        drive,
    })
}

/// Loads the scene and the rules into a simulator and logs what it runs.
fn load_simulator(start: &Start, logger: &str) -> anyhow::Result<Simulator> {
    let mode = start.config.mode;
    let sim = Simulator::load(&start.scene_file, &start.rule_files, start.config.clone())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    r2r::log_info!(
        logger,
        "scene {} ({} x {} cells of {} m), rules {}, mode {:?}, start {:?}, destination {:?}",
        start.scene_file.display(),
        sim.scene().columns(),
        sim.scene().rows(),
        sim.scene().cell_size_m(),
        (start.rule_files.iter())
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        mode,
        sim.pose(),
        sim.destination()
    );
    Ok(sim)
}

/// Installs the guard of run-time parameter sets, and counts a set the parameters' ranges refuse as dropped
/// input, like a bad cmd_vel.
fn guard_parameters(
    params: &Mutex<Guarded<SimParams>>,
    shared: &SharedSim,
    reloader: &Arc<Reloader>,
    logger: &str,
) -> anyhow::Result<()> {
    let mut p = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
    p.set_guard(inputs::parameter_guard(
        shared.clone(),
        reloader.clone(),
        logger.to_owned(),
    ));
    p.set_logger(logger.to_owned());
    // Lock order: parameters, then simulator, as the guard and the parameter changes take them.
    let (shared, logger) = (shared.clone(), logger.to_owned());
    p.set_on_refused(Box::new(move |name: &str, reason: &str| {
        if let Ok(mut s) = shared.lock() {
            let input = if name == "time_scale" {
                "time_scale"
            } else {
                "parameters"
            };
            s.drop_input(input, reason, &logger);
        }
    }));
    Ok(())
}

/// Subscribes to cmd_vel (commanded mode) and sim_facts: the task applying them.
fn topic_inputs(
    node: &SharedNode,
    mode: Mode,
    shared: &SharedSim,
    logger: &str,
) -> anyhow::Result<impl future::Future<Output = ()>> {
    let mut n = lock(node)?;
    let cmd_vel = if mode == Mode::Commanded {
        Some(n.subscribe::<Twist>("cmd_vel", qos::reliable(10))?)
    } else {
        None
    };
    let facts = n.subscribe::<StringMsg>("sim_facts", qos::reliable(10))?;
    let cmd_task = inputs::cmd_vel(cmd_vel, shared.clone(), logger.to_owned());
    let facts_task = inputs::sim_facts(facts, shared.clone(), logger.to_owned());
    Ok(async move {
        tokio::join!(cmd_task, facts_task);
    })
}

/// Makes `~/reload` and `~/set_destination`: the task serving them.
fn service_inputs(
    node: &SharedNode,
    shared: &SharedSim,
    reloader: &Arc<Reloader>,
    logger: &str,
) -> anyhow::Result<impl future::Future<Output = ()>> {
    let mut n = lock(node)?;
    let reload = n.create_service::<Trigger::Service>("~/reload", qos::requests())?;
    let set_destination =
        n.create_service::<SetDestination::Service>("~/set_destination", qos::requests())?;
    let reload_task = inputs::reload_service(reload, reloader.clone(), logger.to_owned());
    let dest_task = inputs::set_destination_service(set_destination, shared.clone(), logger.to_owned());
    Ok(async move {
        tokio::join!(reload_task, dest_task);
    })
}

/// The task applying run-time parameter changes; a dropped value is written back into what
/// `~/get_parameters` reports.
fn parameter_input(
    node: &SharedNode,
    changes: impl futures::Stream<Item = (String, r2r::ParameterValue)> + Unpin,
    params: &Arc<Mutex<Guarded<SimParams>>>,
    time_scale: f64,
    shared: &SharedSim,
    logger: &str,
) -> anyhow::Result<impl future::Future<Output = ()>> {
    let node_params = lock(node)?.params.clone();
    let restore = move |name: &str, valid: r2r::ParameterValue| {
        if let Ok(mut all) = node_params.lock() {
            if let Some(p) = all.get_mut(name) {
                p.value = valid;
            }
        }
    };
    Ok(inputs::parameter_changes(
        changes,
        params.clone(),
        restore,
        time_scale,
        shared.clone(),
        logger.to_owned(),
    ))
}
