//! `lockstep_task_manager`: hierarchical task execution as a ROS 2 node, for one robot or a fleet.
//!
//! - Action `execute_task` (lockstep_interfaces/ExecuteTask): task type + parameters (JSON) + priority +
//!   robot. The task is assigned to a robot (the one named, else the one that can start it soonest),
//!   decomposed at once from the configuration (`config_file`; routes between stations planned on
//!   `map_file`), then scheduled level by level down to one goal per action on that robot's actuator. Feedback:
//!   per-level counts and the running paths. Result: a summary and, on failure, the failing subtask's path.
//!   Cancel reaches every live actuator goal. A goal that cannot run (unknown task type, bad
//!   `parameters_json`, an unreachable station, a goal field of the wrong type) is rejected in the goal
//!   response; the log says why. The action servers are [`lockstep_tasks_node::action_server`]'s.
//! - Topic `task_events` (TaskEvent): every status change, group-completion reports, interrupts (one per
//!   level, leaf to root), retries, time-outs, fallbacks, restored tasks and each task's end; transient-local,
//!   the last `events_kept` of them reach a subscriber that joins later ([`interfaces`]).
//! - Services: `list_tasks` (ListTasks: tasks and robots), `pause_task`, `resume_task`, `add_attribute`,
//!   `~/reload` (std_srvs/Trigger: re-read `config_file`; a configuration that fails to load is refused with
//!   the key path and the old one stays).
//! - Inputs: `task_facts` (std_msgs/String: Datalog facts, the latest message in force) for condition
//!   attributes, over the rule files `rules_files`; `actuator_states` (ActuatorState), and each robot's
//!   `<robot>/actuator_states`: a busy actuator gives the action about to be sent to it a delay.
//! - `state_file`: unfinished tasks survive a restart (reported interrupted; `resume_task` runs them on
//!   without running their completed actions again).
//!
//! Every name is relative, so `__ns` moves the manager and its robots together.
//! The logic (configuration, decomposition, scheduling, statuses, routes, assignment, and the manager's
//! policy as a state machine: `lockstep_tasks::manager`) is `lockstep_tasks`; this node maps ROS callbacks
//! to its events and its commands to r2r calls ([`driver`]). The node reads what it starts with ([`start`]),
//! makes its interfaces ([`interfaces`]) and hands every topic input ([`topics`]) and service request
//! ([`services`]) to the manager's loop.

mod actuators;
mod convert;
mod driver;
mod inputs;
mod interfaces;
mod loaded;
mod markers;
mod params;
mod services;
mod start;
mod topics;

use std::rc::Rc;
use std::time::Duration;

use anyhow::Context as _;
use futures::future;
use lockstep_ros::SharedNode;
use lockstep_tasks::manager::energy::EnergyModel;
use lockstep_tasks::manager::{Event, Manager};
use tokio::sync::mpsc;

use driver::{Driver, Events};
use inputs::Input;
use interfaces::interfaces;
use loaded::Loaded;
use params::ManagerParams;
use services::forward_services;
use start::{start, Start};
use topics::forward_topics;

/// Inputs the manager's loop handles together at most, before it answers them (and lets the node spin).
const INPUTS_AT_ONCE: usize = 100;

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_task_manager", run())
}

fn run() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_task_manager",
        about: "runs hierarchical tasks (task, duty, message, action) through the execute_task action, down to one action server per actuator, with per-level feedback, pause, resume and cancel.",
        readme: Some(include_str!("../../README.md")),
        rules: <ManagerParams as lockstep_ros::ParamRules>::param_rules(),
    });
    lockstep_ros::run_node("lockstep_task_manager", |node| Ok(setup(node)?)).context("lockstep_task_manager")
}

/// The manager's loop, restored from the state file if there was one.
fn driver(
    node: &SharedNode,
    start: Start,
    events: Events,
    tx: mpsc::UnboundedSender<Input>,
) -> anyhow::Result<Driver> {
    let logger = lockstep_ros::logger_name(node)?;
    let mut manager = Manager::new(start.loaded, start.env);
    manager.keep_finished = usize::try_from(start.p.keep_finished).map_err(|_| {
        anyhow::anyhow!(
            "parameter 'keep_finished' = {}: does not fit",
            start.p.keep_finished
        )
    })?;
    manager.robots = start.robots.clone();
    manager.map = start.map;
    manager.journal = start.state_file.is_some();
    manager.echo = lockstep_ros::text::echo;
    manager.energy = (start.p.drive_wh_per_m > 0.0 || start.p.idle_w > 0.0).then_some(EnergyModel {
        drive_wh_per_m: start.p.drive_wh_per_m,
        idle_w: start.p.idle_w,
        reserve_fraction: start.p.battery_reserve_percent / 100.0,
    });
    manager.robot_timeout_s = (start.p.robot_timeout_s > 0.0).then_some(start.p.robot_timeout_s);
    let p = &start.p;
    manager.replan_after_s = (p.replan_after_s > 0.0).then_some(p.replan_after_s);
    manager.charging = lockstep_tasks::manager::charging::policy(
        p.recharge_below,
        p.charge_to,
        &p.charge_task,
        p.charge_stall_s,
        &manager.setup.config,
        manager.map.as_ref(),
    )
    .map_err(anyhow::Error::msg)?;
    let mut driver = Driver::new(manager, events, tx, logger);
    driver.server_wait = Duration::from_secs_f64(start.p.server_wait_s);
    driver.state_file = start.state_file;
    driver.reload = {
        let node = node.clone();
        let (path, robots) = (start.config_path, start.robots);
        Box::new(move || {
            Loaded::load(&node, &path, &robots)
                .map(Rc::new)
                .map_err(|e| format!("{e:#}"))
        })
    };
    if let Some(saved) = start.saved {
        driver.run(Event::Restore(saved));
    }
    Ok(driver)
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let start = start(&node)?;
    let step_period = Duration::from_secs_f64(start.p.step_period_s);
    let i = interfaces(&node, &start.robots, start.p.events_kept)?;
    let loaded = &start.loaded;
    r2r::log_info!(
        &lockstep_ros::logger_name(&node)?,
        "{}: levels [{}], task types [{}], robots [{}], actuators [{}]",
        start.config_path.display(),
        loaded.config.levels.join(", "),
        loaded.config.task_types().join(", "),
        start.robots.keys().cloned().collect::<Vec<_>>().join(", "),
        loaded.server_list()
    );
    let (tx, mut rx) = mpsc::unbounded_channel::<Input>();
    let mut driver = driver(&node, start, i.events, tx.clone())?;
    let topics = forward_topics(i.goals, i.facts, i.states, i.batteries, tx.clone(), step_period);
    let services = forward_services(i.services, tx);
    let run = async move {
        // The inputs at hand are handled together (at most INPUTS_AT_ONCE): see Driver::handle_all.
        while let Some(first) = rx.recv().await {
            let mut inputs = vec![first];
            while inputs.len() < INPUTS_AT_ONCE {
                match rx.try_recv() {
                    Ok(input) => inputs.push(input),
                    Err(_) => break,
                }
            }
            driver.handle_all(inputs);
        }
    };
    Ok(async move {
        tokio::join!(run, topics, services);
        Ok(())
    })
}
