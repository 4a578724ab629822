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
//!   level, leaf to root), retries, time-outs, fallbacks, restored tasks and each task's end.
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
//! to its events and its commands to r2r calls ([`driver`]).

mod actuators;
mod convert;
mod driver;
mod inputs;
mod loaded;
mod params;
mod services;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use anyhow::Context as _;
use futures::{future, Stream, StreamExt as _};
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_tasks::manager::{AttributeRequest, Environment, Event, Manager};
use lockstep_tasks::map::StationMap;
use lockstep_tasks::robots::{self, Robot};
use r2r::lockstep_interfaces::action::ExecuteTask;
use r2r::lockstep_interfaces::msg::{ActuatorState, TaskEvent};
use r2r::lockstep_interfaces::srv::{AddAttribute, ListTasks, PauseTask, ResumeTask};
use r2r::std_msgs::msg::String as StringMsg;
use r2r::std_srvs::srv::Trigger;
use tokio::sync::{mpsc, oneshot};

use driver::{Driver, Events};
use inputs::Input;
use loaded::Loaded;
use lockstep_tasks_node::action_server::{create_action_server, ActionServerGoalRequest};
use params::ManagerParams;
use services::serve;

/// Inputs the manager's loop handles together at most, before it answers them (and lets the node spin).
const INPUTS_AT_ONCE: usize = 100;

/// The largest rule file read.
const MAX_RULES_FILE_BYTES: u64 = 16 << 20;

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

/// What the node starts with: its parameters read and checked, the map, the robots, the state file's
/// content, the configuration with its clients, and the rules.
struct Start {
    p: ManagerParams,
    config_path: PathBuf,
    map: Option<StationMap>,
    robots: BTreeMap<String, Robot>,
    state_file: Option<PathBuf>,
    saved: Option<lockstep_tasks::journal::State>,
    loaded: Rc<Loaded>,
    env: Environment,
}

fn start(node: &SharedNode) -> anyhow::Result<Start> {
    // Checked against RULES at start (a bad value stops the node, naming the parameter and its range) and on
    // every run-time set; all are read at start only, so a run-time set is refused saying so.
    let p = lockstep_ros::declare_start_only_parameters(node, ManagerParams::default())?;
    let config_path = PathBuf::from(&p.config_file);
    let map = match p.map_file.trim() {
        "" => None,
        file => {
            Some(StationMap::read(std::path::Path::new(file)).map_err(|e| anyhow::anyhow!("map_file: {e}"))?)
        }
    };
    let robots = robots::robots(
        &lockstep_ros::param_list(&p.robots),
        &lockstep_ros::param_list(&p.start_stations),
        map.as_ref(),
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    let state_file = (!p.state_file.trim().is_empty()).then(|| PathBuf::from(p.state_file.trim()));
    // Read before anything runs: a state file that cannot be read stops the node and is left as it is.
    let saved = match &state_file {
        Some(path) => lockstep_tasks::journal::read(path).map_err(|e| anyhow::anyhow!(e))?,
        None => None,
    };
    let loaded = Rc::new(Loaded::load(node, &config_path, &robots)?);
    let mut rules = Vec::new();
    for file in lockstep_ros::param_list(&p.rules_files) {
        let text = lockstep_ranges::file::read_text(std::path::Path::new(&file), MAX_RULES_FILE_BYTES)
            .with_context(|| format!("rules_files: reading {file}"))?;
        rules.push((file, text));
    }
    let mut env = Environment::new(rules);
    env.max_seconds = p.rules_max_seconds;
    env.set_facts(String::new())
        .map_err(|e| anyhow::anyhow!("rules_files: {e}"))?;
    // In range (RULES), so this conversion cannot panic.
    env.drain_timeout_s = p.server_wait_s;
    Ok(Start {
        p,
        config_path,
        map,
        robots,
        state_file,
        saved,
        loaded,
        env,
    })
}

/// The node's action server, topics and services.
struct Interfaces {
    goals: Box<dyn Stream<Item = ActionServerGoalRequest<ExecuteTask::Action>> + Unpin>,
    events: Events,
    facts: Box<dyn Stream<Item = StringMsg> + Unpin>,
    states: Vec<Box<dyn Stream<Item = ActuatorState> + Unpin>>,
    services: Services,
}

fn interfaces(node: &SharedNode, robots: &BTreeMap<String, Robot>) -> anyhow::Result<Interfaces> {
    let mut n = lock(node)?;
    let mut state_topics: Vec<String> = robots.values().map(|r| r.topic("actuator_states")).collect();
    state_topics.push("actuator_states".into());
    state_topics.sort();
    state_topics.dedup();
    let mut states: Vec<Box<dyn Stream<Item = ActuatorState> + Unpin>> = Vec::new();
    for topic in &state_topics {
        states.push(Box::new(n.subscribe::<ActuatorState>(topic, qos::reliable(100))?));
    }
    Ok(Interfaces {
        goals: Box::new(create_action_server::<ExecuteTask::Action>(
            &mut n,
            "execute_task",
        )?),
        events: Events {
            publisher: n.create_publisher::<TaskEvent>("task_events", qos::reliable(1000))?,
            clock: n.get_ros_clock(),
        },
        facts: Box::new(n.subscribe::<StringMsg>("task_facts", qos::reliable(10))?),
        states,
        services: Services {
            list: Box::new(n.create_service::<ListTasks::Service>("list_tasks", qos::requests())?),
            pause: Box::new(n.create_service::<PauseTask::Service>("pause_task", qos::requests())?),
            resume: Box::new(n.create_service::<ResumeTask::Service>("resume_task", qos::requests())?),
            add: Box::new(n.create_service::<AddAttribute::Service>("add_attribute", qos::requests())?),
            reload: Box::new(n.create_service::<Trigger::Service>("~/reload", qos::requests())?),
        },
    })
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

/// Every topic input becomes an input of the manager's loop: goals, facts, actuator states, and the ticks
/// that step the schedulers every `step_period`.
async fn forward_topics(
    goals: impl Stream<Item = ActionServerGoalRequest<ExecuteTask::Action>> + Unpin,
    facts: impl Stream<Item = StringMsg> + Unpin,
    states: Vec<Box<dyn Stream<Item = ActuatorState> + Unpin>>,
    tx: mpsc::UnboundedSender<Input>,
    step_period: Duration,
) {
    let send = |input| {
        let _ = tx.send(input);
        future::ready(())
    };
    let ticker = async {
        let mut interval = tokio::time::interval(step_period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            if tx.send(Input::Tick).is_err() {
                return;
            }
        }
    };
    tokio::join!(
        goals.for_each(|request| send(Input::Goal(request))),
        facts.for_each(|msg| send(Input::Facts(msg.data))),
        futures::stream::select_all(states).for_each(|msg| send(Input::ActuatorState {
            server: msg.server,
            busy: msg.busy,
            remaining_s: msg.busy_remaining_s,
        })),
        ticker
    );
}

/// Every service request becomes an input of the manager's loop, answered from it.
async fn forward_services(i: Services, tx: mpsc::UnboundedSender<Input>) {
    let list = i.list.for_each(|req| {
        let tx = tx.clone();
        async move {
            let (reply, answer) = oneshot::channel();
            let _ = tx.send(Input::List(reply));
            let _ = req.respond(answer.await.unwrap_or_default());
        }
    });
    let pause = serve(
        i.pause,
        tx.clone(),
        |m: PauseTask::Request, reply| Input::Pause {
            task: m.task_id,
            reason: m.reason,
            reply,
        },
        |success, message| PauseTask::Response { success, message },
    );
    let resume = serve(
        i.resume,
        tx.clone(),
        |m: ResumeTask::Request, reply| Input::Resume {
            task: m.task_id,
            reply,
        },
        |success, message| ResumeTask::Response { success, message },
    );
    let add = serve(
        i.add,
        tx.clone(),
        |m: AddAttribute::Request, reply| Input::AddAttribute {
            attribute: AttributeRequest {
                kind: m.kind,
                delay_s: m.delay_s,
                query: m.query,
                reason: m.reason,
            },
            task: m.task_id,
            path: m.path,
            reply,
        },
        |success, message| AddAttribute::Response { success, message },
    );
    let reload = serve(
        i.reload,
        tx.clone(),
        |_: Trigger::Request, reply| Input::Reload(reply),
        |success, message| Trigger::Response { success, message },
    );
    tokio::join!(list, pause, resume, add, reload);
}

/// The services' request streams.
struct Services {
    list: Box<dyn Stream<Item = r2r::ServiceRequest<ListTasks::Service>> + Unpin>,
    pause: Box<dyn Stream<Item = r2r::ServiceRequest<PauseTask::Service>> + Unpin>,
    resume: Box<dyn Stream<Item = r2r::ServiceRequest<ResumeTask::Service>> + Unpin>,
    add: Box<dyn Stream<Item = r2r::ServiceRequest<AddAttribute::Service>> + Unpin>,
    reload: Box<dyn Stream<Item = r2r::ServiceRequest<Trigger::Service>> + Unpin>,
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let start = start(&node)?;
    let step_period = Duration::from_secs_f64(start.p.step_period_s);
    let i = interfaces(&node, &start.robots)?;
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
    let topics = forward_topics(i.goals, i.facts, i.states, tx.clone(), step_period);
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
