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

mod drive;
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
use lockstep_sim::{Mode, Pacer, Simulator};
use r2r::geometry_msgs::msg::Twist;
use r2r::lockstep_interfaces::srv::SetDestination;
use r2r::std_msgs::msg::String as StringMsg;
use r2r::std_srvs::srv::Trigger;

use params::{rule_paths, SimParams, Statics};
use publish::Publishers;
use shared::{Shared, SharedSim};
use watch::Reloader;

fn main() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_sim_node",
        about: "the rule-driven differential-drive vehicle simulator, a stand-in for Gazebo: cmd_vel in; odom, a noisy SLAM pose, joint_states, /clock and rviz markers out; behaviour and road surfaces from Datalog rule files reloaded while it runs.",
        readme: Some(include_str!("../../README.md")),
    });
    lockstep_ros::run_node("lockstep_sim_node", |node| Ok(setup(node)?)).context("lockstep_sim_node")
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let declared = lockstep_ros::declare_parameters(&node, Guarded::new(SimParams::default()))?;
    let params = declared.values;
    let logger = lockstep_ros::logger_name(&node)?;
    let (config, scene_file, rule_files, st, time_scale) = {
        let p = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
        let rule_files = rule_paths(&p.rule_files);
        anyhow::ensure!(!rule_files.is_empty(), "parameter `rule_files` names no file");
        (
            p.config()?,
            PathBuf::from(&p.scene_file),
            rule_files,
            Statics::from(&**p),
            p.time_scale,
        )
    };
    let drive = {
        let p = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
        drive::Drive::from_params(&p, 0.0).map_err(|e| anyhow::anyhow!("parameter `drive_script`: {e}"))?
    };
    if let Some(d) = &drive {
        r2r::log_info!(&logger, "{}", d.describe());
    }
    let pacer = Pacer::new(st.p.rate_hz, st.p.publish_rate_hz, time_scale, 0.0)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mode = config.mode;
    let sim = Simulator::load(&scene_file, &rule_files, config).map_err(|e| anyhow::anyhow!("{e}"))?;
    r2r::log_info!(
        &logger,
        "scene {} ({} x {} cells of {} m), rules {}, mode {:?}, start {:?}, destination {:?}",
        scene_file.display(),
        sim.scene().columns(),
        sim.scene().rows(),
        sim.scene().cell_size_m(),
        rule_files
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        mode,
        sim.pose(),
        sim.destination()
    );
    let shared: SharedSim = Arc::new(Mutex::new(Shared::new(sim, drive)));
    let reloader = Reloader::new(shared.clone(), scene_file, rule_files, mode);
    {
        let mut p = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
        p.set_guard(inputs::parameter_guard(
            shared.clone(),
            reloader.clone(),
            logger.clone(),
        ));
        p.set_logger(logger.clone());
        // A set refused by the parameters' ranges counts as dropped input, like a bad cmd_vel. Lock order:
        // parameters, then simulator, as the guard and the parameter changes take them.
        let (shared, logger) = (shared.clone(), logger.clone());
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
    }

    let pubs = Publishers::create(&node, &st, logger.clone())?;
    let mut n = lock(&node)?;
    let cmd_vel = if mode == Mode::Commanded {
        Some(n.subscribe::<Twist>("cmd_vel", qos::reliable(10))?)
    } else {
        None
    };
    let reload_srv = n.create_service::<Trigger::Service>("~/reload", qos::reliable(10))?;
    let dest_srv = n.create_service::<SetDestination::Service>("~/set_destination", qos::reliable(10))?;
    let facts = n.subscribe::<StringMsg>("sim_facts", qos::reliable(10))?;
    let node_params = n.params.clone();
    drop(n);
    // What `~/get_parameters` reports, set back when a bad value is dropped.
    let restore = move |name: &str, valid: r2r::ParameterValue| {
        if let Ok(mut all) = node_params.lock() {
            if let Some(p) = all.get_mut(name) {
                p.value = valid;
            }
        }
    };

    let cmd_task = inputs::cmd_vel(cmd_vel, shared.clone(), logger.clone());
    let reload_task = inputs::reload_service(reload_srv, reloader.clone(), logger.clone());
    let dest_task = inputs::set_destination_service(dest_srv, shared.clone(), logger.clone());
    let facts_task = inputs::sim_facts(facts, shared.clone(), logger.clone());
    let params_task = inputs::parameter_changes(
        declared.changes,
        params.clone(),
        restore,
        time_scale,
        shared.clone(),
        logger.clone(),
    );
    let watch_task = watch::watch_files(reloader, logger.clone(), st.clone());
    let loop_task = sim_loop::run(shared, params, pubs, pacer, logger, st);

    Ok(async move {
        tokio::join!(
            cmd_task,
            reload_task,
            dest_task,
            facts_task,
            params_task,
            watch_task,
            loop_task
        );
        Ok(())
    })
}
