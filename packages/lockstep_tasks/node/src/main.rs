//! `lockstep_task_manager`: hierarchical task execution as a ROS 2 node.
//!
//! - Action `execute_task` (lockstep_interfaces/ExecuteTask): task type + parameters (JSON) + priority. The
//!   task is decomposed at once from the configuration (`config_file`), then scheduled level by level down to
//!   one goal per action on its actuator's action server. Feedback: per-level counts and the running paths.
//!   Result: a summary and, on failure, the failing subtask's path. Cancel reaches every live actuator goal;
//!   the goal ends CANCELED on the status topic. A goal that cannot run (unknown task type, bad
//!   `parameters_json`, a goal field of the wrong type) is rejected in the goal response; the log says why.
//!   The action servers are [`lockstep_tasks_node::action_server`]'s (r2r 0.9.7's stops at CANCELING).
//! - Topic `/task_events` (TaskEvent): every status change (path, old, new, reason), group-completion reports,
//!   interrupts (one per level, leaf to root) and each task's end.
//! - Services: `list_tasks` (ListTasks: running and queued tasks, then the last `keep_finished` finished
//!   ones), `pause_task` (PauseTask), `resume_task` (ResumeTask), `add_attribute` (AddAttribute), `~/reload`
//!   (std_srvs/Trigger: re-read `config_file`; a configuration that fails to load is refused with the key
//!   path and the old one stays).
//! - Inputs: `/task_facts` (std_msgs/String: Datalog facts, the latest message in force) for condition
//!   attributes, over the rule files `rules_files` (a message that does not parse is dropped, with a log line
//!   at a bounded rate); `/actuator_states` (ActuatorState): a busy actuator
//!   gives the action about to be sent to it a delay of the remaining busy time.
//!
//! The logic (configuration, decomposition, scheduling, statuses) is `lockstep_tasks`; this crate wires it.

mod actuators;
mod environment;
mod goals;
mod manager;
mod refusals;
mod task;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use anyhow::Context as _;
use futures::{future, StreamExt as _};
use lockstep_ros::{lock, qos, Int, ParamRule, ParamRules, Real, SharedNode};
use lockstep_tasks::{Attribute, Config};
use r2r::lockstep_interfaces::action::ExecuteTask;
use r2r::lockstep_interfaces::msg::{ActuatorState, TaskEvent};
use r2r::lockstep_interfaces::srv::{AddAttribute, ListTasks, PauseTask, ResumeTask};
use r2r::std_msgs::msg::String as StringMsg;
use r2r::std_srvs::srv::Trigger;
use tokio::sync::{mpsc, oneshot};

use environment::Environment;
use lockstep_tasks_node::action_server::create_action_server;
use manager::{Event, Manager, Reply};

/// Parameters of the task manager; each doc string is what `ros2 param describe` shows.
#[derive(r2r::RosParams, Debug, Clone)]
struct ManagerParams {
    /// The task configuration (YAML): levels, templates, parameter rules, attributes, actuators.
    config_file: String,
    /// Comma-separated Datalog rule files the condition attributes are evaluated over (with /task_facts).
    rules_files: String,
    /// Seconds between two scheduling steps (delays and conditions are checked this often; actuator
    /// outcomes are handled at once).
    step_period_s: f64,
    /// How long an action waits for its actuator's action server before it fails [s].
    server_wait_s: f64,
    /// Finished tasks `list_tasks` keeps listing (the most recent ones; older ones are forgotten).
    keep_finished: i64,
}

/// What each parameter may hold (`lockstep_ros::ParamRules`).
const RULES: &[ParamRule] = &[
    ParamRule::non_empty("config_file"),
    ParamRule::real("step_period_s", Real::closed(0.001, 60.0, "s")),
    ParamRule::real("server_wait_s", Real::closed(0.0, 3600.0, "s")),
    ParamRule::int("keep_finished", Int::closed(0, 1_000_000, "tasks")),
];

impl ParamRules for ManagerParams {
    fn param_rules() -> &'static [ParamRule] {
        RULES
    }
}

impl Default for ManagerParams {
    fn default() -> Self {
        Self {
            config_file: "config/tasks/warehouse.yaml".into(),
            rules_files: String::new(),
            step_period_s: 0.01,
            server_wait_s: 5.0,
            keep_finished: 100,
        }
    }
}

/// A loaded configuration and its actuator clients.
pub struct Loaded {
    pub config: Config,
    pub clients: BTreeMap<String, Box<dyn actuators::Client>>,
}

impl Loaded {
    fn load(node: &SharedNode, path: &Path) -> anyhow::Result<Self> {
        let config = Config::read(path)?;
        for (name, actuator) in &config.actuators {
            if let Some(query) = &actuator.blocked_by {
                environment::check_query(query)
                    .map_err(|e| anyhow::anyhow!("{}: actuators.{name}.blocked_by: {e}", path.display()))?;
            }
        }
        let clients = actuators::clients(&mut *lock(node)?, &config.actuators)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(Self { config, clients })
    }

    /// Actuator name -> action server.
    pub fn servers(&self) -> BTreeMap<String, String> {
        (self.config.actuators.iter())
            .map(|(name, a)| (name.clone(), a.server.clone()))
            .collect()
    }

    /// Actuator name -> the condition that blocks it.
    pub fn blocked_by(&self) -> BTreeMap<String, String> {
        (self.config.actuators.iter())
            .filter_map(|(name, a)| Some((name.clone(), a.blocked_by.clone()?)))
            .collect()
    }
}

fn main() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_task_manager",
        about: "runs hierarchical tasks (task, duty, message, action) through the execute_task action, down to one action server per actuator, with per-level feedback, pause, resume and cancel.",
        readme: Some(include_str!("../../README.md")),
    });
    lockstep_ros::run_node("lockstep_task_manager", |node| Ok(setup(node)?)).context("lockstep_task_manager")
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    // Checked against RULES at start (a bad value stops the node, naming the parameter and its range) and on
    // every run-time set; all are read at start only, so a run-time set is refused saying so.
    let p = lockstep_ros::declare_start_only_parameters(&node, ManagerParams::default())?;
    // In range (RULES), so these conversions cannot panic and the ticker's period is never zero.
    let step_period = Duration::from_secs_f64(p.step_period_s);
    let server_wait = Duration::from_secs_f64(p.server_wait_s);
    let keep_finished = usize::try_from(p.keep_finished)
        .map_err(|_| anyhow::anyhow!("parameter 'keep_finished' = {}: does not fit", p.keep_finished))?;
    let logger = lockstep_ros::logger_name(&node)?;
    let config_path = PathBuf::from(&p.config_file);
    let loaded = Rc::new(Loaded::load(&node, &config_path)?);
    let mut rules = Vec::new();
    for file in lockstep_ros::param_list(&p.rules_files) {
        let text = std::fs::read_to_string(&file).with_context(|| format!("rules_files: reading {file}"))?;
        rules.push((file, text));
    }
    let mut env = Environment::new(rules);
    env.set_facts(String::new())
        .map_err(|e| anyhow::anyhow!("rules_files: {e}"))?;
    env.servers = loaded.servers();
    env.blocked_by = loaded.blocked_by();
    env.drain_timeout = server_wait;

    let mut n = lock(&node)?;
    let goals = create_action_server::<ExecuteTask::Action>(&mut n, "execute_task")?;
    let events = manager::Events {
        publisher: n.create_publisher::<TaskEvent>("/task_events", qos::reliable(1000))?,
        clock: n.get_ros_clock(),
    };
    let facts = n.subscribe::<StringMsg>("/task_facts", qos::reliable(10))?;
    let states = n.subscribe::<ActuatorState>("/actuator_states", qos::reliable(100))?;
    let list = n.create_service::<ListTasks::Service>("list_tasks", qos::reliable(10))?;
    let pause = n.create_service::<PauseTask::Service>("pause_task", qos::reliable(10))?;
    let resume = n.create_service::<ResumeTask::Service>("resume_task", qos::reliable(10))?;
    let add = n.create_service::<AddAttribute::Service>("add_attribute", qos::reliable(10))?;
    let reload = n.create_service::<Trigger::Service>("~/reload", qos::reliable(10))?;
    drop(n);
    r2r::log_info!(
        &logger,
        "{}: levels [{}], task types [{}], actuators [{}]",
        config_path.display(),
        loaded.config.levels.join(", "),
        loaded.config.task_types().join(", "),
        loaded.servers().values().cloned().collect::<Vec<_>>().join(", ")
    );

    let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
    let reloader = {
        let node = node.clone();
        let path = config_path.clone();
        Box::new(move || {
            Loaded::load(&node, &path)
                .map(Rc::new)
                .map_err(|e| format!("{e:#}"))
        })
    };
    let mut manager = Manager::new(
        loaded,
        env,
        events,
        tx.clone(),
        logger.clone(),
        server_wait,
        reloader,
    );
    manager.keep_finished = keep_finished;

    // Every input becomes an event for the manager's loop.
    let goals_task = {
        let tx = tx.clone();
        goals.for_each(move |request| {
            let _ = tx.send(Event::Goal(request));
            future::ready(())
        })
    };
    let facts_task = {
        let tx = tx.clone();
        facts.for_each(move |msg| {
            let _ = tx.send(Event::Facts(msg.data));
            future::ready(())
        })
    };
    let states_task = {
        let tx = tx.clone();
        states.for_each(move |msg| {
            let _ = tx.send(Event::ActuatorState {
                server: msg.server,
                busy: msg.busy,
                remaining_secs: msg.busy_remaining_s,
            });
            future::ready(())
        })
    };
    let list_task = {
        let tx = tx.clone();
        list.for_each(move |req| {
            let tx = tx.clone();
            async move {
                let (reply, answer) = oneshot::channel();
                let _ = tx.send(Event::List(reply));
                let (tasks, actuators) = answer.await.unwrap_or_default();
                let _ = req.respond(ListTasks::Response { tasks, actuators });
            }
        })
    };
    let pause_task = serve(
        pause,
        tx.clone(),
        |m: PauseTask::Request, reply| Event::Pause {
            task: m.task_id,
            reason: m.reason,
            reply,
        },
        |success, message| PauseTask::Response { success, message },
    );
    let resume_task = serve(
        resume,
        tx.clone(),
        |m: ResumeTask::Request, reply| Event::Resume {
            task: m.task_id,
            reply,
        },
        |success, message| ResumeTask::Response { success, message },
    );
    let add_task = serve(
        add,
        tx.clone(),
        |m: AddAttribute::Request, reply| match attribute(&m) {
            Ok(attribute) => Event::AddAttribute {
                task: m.task_id,
                path: m.path,
                attribute,
                reply,
            },
            Err(reason) => {
                let _ = reply.send(Err(reason));
                Event::Tick
            }
        },
        |success, message| AddAttribute::Response { success, message },
    );
    let reload_task = serve(
        reload,
        tx.clone(),
        |_: Trigger::Request, reply| Event::Reload(reply),
        |success, message| Trigger::Response { success, message },
    );
    let ticker = {
        let tx = tx.clone();
        let period = step_period;
        async move {
            let mut interval = tokio::time::interval(period);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                if tx.send(Event::Tick).is_err() {
                    return;
                }
            }
        }
    };
    drop(tx);
    let run = async move {
        while let Some(event) = rx.recv().await {
            manager.handle(event);
        }
    };
    Ok(async move {
        tokio::join!(
            run,
            goals_task,
            facts_task,
            states_task,
            list_task,
            pause_task,
            resume_task,
            add_task,
            reload_task,
            ticker
        );
        Ok(())
    })
}

/// Serve a request/answer service through the manager: `event` makes the event (with the reply channel),
/// `response` the answer from (success, message).
async fn serve<S, E, R>(
    requests: impl futures::Stream<Item = r2r::ServiceRequest<S>> + Unpin,
    tx: mpsc::UnboundedSender<Event>,
    event: E,
    response: R,
) where
    S: r2r::WrappedServiceTypeSupport + 'static,
    E: Fn(S::Request, Reply) -> Event,
    R: Fn(bool, String) -> S::Response,
{
    let mut requests = requests;
    while let Some(req) = requests.next().await {
        let (reply, answer) = oneshot::channel();
        let _ = tx.send(event(req.message.clone(), reply));
        let (success, message) = match answer.await {
            Ok(Ok(message)) => (true, message),
            Ok(Err(message)) => (false, message),
            Err(_) => (false, "the manager stopped".to_owned()),
        };
        let _ = req.respond(response(success, message));
    }
}

/// The attribute an AddAttribute request asks for, or why it is not one.
fn attribute(m: &AddAttribute::Request) -> Result<Attribute, String> {
    match m.kind.as_str() {
        "delay" if m.delay_s >= 0.0 && m.delay_s.is_finite() => Ok(Attribute::Delay { secs: m.delay_s }),
        "delay" => Err(format!(
            "delay_s must be a finite number >= 0 (got {})",
            m.delay_s
        )),
        "condition" if !m.query.trim().is_empty() => Ok(Attribute::Condition {
            query: m.query.clone(),
        }),
        "condition" => Err("a condition needs a query (a Datalog rule body, e.g. clear(dock_b))".into()),
        "interrupt" => Ok(Attribute::Interrupt {
            reason: if m.reason.is_empty() {
                "operator".into()
            } else {
                m.reason.clone()
            },
        }),
        other => Err(format!(
            "kind `{other}` is not one of delay, condition, interrupt"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_ros::param_rules::check_all;

    #[test]
    fn the_defaults_pass_the_rules_and_bad_values_are_refused_with_the_range() {
        assert_eq!(check_all(&mut ManagerParams::default()), Ok(()));
        for (p, reason) in [
            (
                ManagerParams {
                    step_period_s: 1e-300,
                    ..ManagerParams::default()
                },
                "parameter 'step_period_s' = 1e-300: must be finite and in [0.001, 60] s",
            ),
            (
                ManagerParams {
                    server_wait_s: f64::NAN,
                    ..ManagerParams::default()
                },
                "parameter 'server_wait_s' = NaN: must be finite and in [0, 3600] s",
            ),
            (
                ManagerParams {
                    keep_finished: -1,
                    ..ManagerParams::default()
                },
                "parameter 'keep_finished' = -1: must be an integer in [0, 1000000] tasks",
            ),
        ] {
            assert_eq!(check_all(&mut p.clone()).err().as_deref(), Some(reason));
        }
    }
}
