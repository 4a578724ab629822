//! The manager: every task, the queue, and what the schedulers ask for, owned by one loop that handles one
//! event at a time (so each level's list is never scheduled while an event changes it: no lock needed).
//!
//! - A new ExecuteTask goal is decomposed at once and every action's goal is built and type-checked before
//!   the goal is accepted as a task; any error rejects the goal (the goal response says not accepted) and
//!   the log says why, with the key path or subtask path.
//! - Finished tasks stay listed (ListTasks) until `keep_finished` tasks have finished after them.
//! - Each robot runs one task at a time; its other tasks queue by priority, then arrival. A task of higher
//!   priority than the robot's running one preempts it (pause, run, resume). A new task goes to the robot it
//!   names, else to the one that can start it soonest ([`crate::queue`]).
//! - Retries, time-outs and fallbacks are the scheduler's; each is published on `task_events`.
//! - With `state_file`, the unfinished tasks are written after each change and restored at start.
//! - Cancels reach every live actuator goal; a goal not yet accepted is cancelled the moment it is.
//! - An interrupted navigation is sent again with the route it had left (its last feedback).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use lockstep_tasks::map::StationMap;
use lockstep_tasks::{Attribute, Conditions as _, Id, Outcome, Output};
use std::path::PathBuf;

use crate::fleet::Robot;
use r2r::lockstep_interfaces::action::ExecuteTask;
use r2r::lockstep_interfaces::msg::{ActuatorState, RobotInfo, TaskEvent, TaskInfo};
use tokio::sync::{mpsc, oneshot};

use crate::actuators::LeafEvent;
use crate::environment::{check_query, Environment};
use crate::goals::{cancel_goal, pause_goal, send_goal};
use crate::refusals::Refusals;
use crate::task::{State, Task};
use crate::Loaded;
use lockstep_tasks_node::action_server::ActionServerGoalRequest;

pub type Reply = oneshot::Sender<Result<String, String>>;

pub enum Event {
    Goal(ActionServerGoalRequest<ExecuteTask::Action>),
    Cancel(String),
    Leaf {
        task: String,
        leaf: Id,
        generation: u64,
        event: LeafEvent,
    },
    Pause {
        task: String,
        reason: String,
        reply: Reply,
    },
    Resume {
        task: String,
        reply: Reply,
    },
    AddAttribute {
        task: String,
        path: String,
        attribute: Attribute,
        reply: Reply,
    },
    List(oneshot::Sender<(Vec<TaskInfo>, Vec<ActuatorState>, Vec<RobotInfo>)>),
    /// How an action whose goal was out when the manager stopped ended, as its actuator says: `Some(true)`
    /// succeeded, `Some(false)` did not, `None` unknown (the actuator forgot it, or did not answer).
    Recovered {
        task: String,
        path: String,
        outcome: Option<bool>,
        reason: String,
    },
    /// A pausable actuator could not pause or resume its goal: cancel it (it is sent again on resume).
    PauseFailed {
        task: String,
        leaf: Id,
        reason: String,
    },
    Reload(Reply),
    Facts(String),
    ActuatorState {
        server: String,
        busy: bool,
        remaining_secs: f64,
    },
    Tick,
}

/// `/task_events`, stamped with the node's clock (simulated time under `use_sim_time`).
pub struct Events {
    pub publisher: r2r::Publisher<TaskEvent>,
    pub clock: std::sync::Arc<std::sync::Mutex<r2r::Clock>>,
}

pub struct Manager {
    pub loaded: Rc<Loaded>,
    pub env: Environment,
    pub tasks: BTreeMap<String, Task>,
    pub events: Events,
    pub tx: mpsc::UnboundedSender<Event>,
    pub logger: String,
    pub server_wait: Duration,
    /// Reloads the configuration (the node's part: file, clients).
    pub reload: Box<dyn FnMut() -> Result<Rc<Loaded>, String>>,
    /// Finished tasks kept for ListTasks.
    pub keep_finished: usize,
    /// Goals rejected at once and /task_facts messages refused: counted, logged at a bounded rate.
    pub rejected_goals: Refusals,
    pub refused_facts: Refusals,
    /// Cancelled actuator goals of tasks forgotten before those goals ended: (task, generation) -> actuator.
    pub(crate) orphans: BTreeMap<(String, u64), String>,
    pub(crate) next_seq: u64,
    pub(crate) next_end: u64,
    pub(crate) epoch: Instant,
    /// The robots, by name ("" alone: the manager's own namespace).
    pub robots: BTreeMap<String, Robot>,
    pub map: Option<StationMap>,
    /// Where unfinished tasks are kept across restarts.
    pub state_file: Option<PathBuf>,
    /// Something a restart must know changed since the state file was last written.
    pub(crate) unsaved: bool,
}

impl Manager {
    pub fn new(
        loaded: Rc<Loaded>,
        env: Environment,
        events: Events,
        tx: mpsc::UnboundedSender<Event>,
        logger: String,
        server_wait: Duration,
        reload: Box<dyn FnMut() -> Result<Rc<Loaded>, String>>,
    ) -> Self {
        Self {
            loaded,
            env,
            tasks: BTreeMap::new(),
            events,
            tx,
            logger,
            server_wait,
            reload,
            keep_finished: 100,
            rejected_goals: Refusals::new("ExecuteTask goal"),
            refused_facts: Refusals::new("/task_facts message"),
            orphans: BTreeMap::new(),
            next_seq: 0,
            next_end: 0,
            epoch: Instant::now(),
            robots: BTreeMap::from([(
                String::new(),
                Robot {
                    name: String::new(),
                    station: None,
                },
            )]),
            map: None,
            state_file: None,
            unsaved: false,
        }
    }

    pub fn handle(&mut self, event: Event) {
        match event {
            Event::Goal(request) => self.new_goal(request),
            Event::Cancel(task) => self.cancel(&task),
            Event::Leaf {
                task,
                leaf,
                generation,
                event,
            } => self.leaf_event(&task, leaf, generation, event),
            Event::Pause { task, reason, reply } => {
                let _ = reply.send(self.pause(&task, &reason));
            }
            Event::Resume { task, reply } => {
                let _ = reply.send(self.resume(&task));
            }
            Event::AddAttribute {
                task,
                path,
                attribute,
                reply,
            } => {
                let _ = reply.send(self.add_attribute(&task, &path, attribute));
            }
            Event::List(reply) => {
                let mut all: Vec<&Task> = self.tasks.values().collect();
                all.sort_by_key(|t| (t.is_finished(), -t.priority, t.seq));
                let tasks = all.into_iter().map(Task::info).collect();
                let robots = self.robot_infos();
                let _ = reply.send((tasks, self.env.actuator_states(&self.events.clock), robots));
            }
            Event::PauseFailed { task, leaf, reason } => self.pause_failed(&task, leaf, &reason),
            Event::Recovered {
                task,
                path,
                outcome,
                reason,
            } => self.recovered(&task, &path, outcome, &reason),
            Event::Reload(reply) => {
                let answer = (self.reload)().map(|loaded| {
                    let types = loaded.config.task_types().join(", ");
                    self.env.servers = loaded.servers.clone();
                    self.env.blocked_by = loaded.blocked_by();
                    self.env.pausable = loaded.pausable();
                    self.loaded = loaded;
                    format!("reloaded: task types {types}; running tasks keep the configuration they started with")
                });
                let _ = reply.send(answer);
            }
            Event::Facts(text) => {
                if let Err(e) = self.env.set_facts(text) {
                    let reason = format!("{e}; the previous facts stay");
                    if let Some(line) = self.refused_facts.refused(&reason, Instant::now()) {
                        r2r::log_warn!(&self.logger, "{line}");
                    }
                }
            }
            Event::ActuatorState {
                server,
                busy,
                remaining_secs,
            } => self.env.set_busy(&server, busy, remaining_secs),
            Event::Tick => {}
        }
        self.step();
        for e in self.env.errors.borrow_mut().drain(..) {
            r2r::log_warn!(&self.logger, "{e}");
        }
        self.save();
    }

    /// An actuator's `blocked_by` condition (an obstacle reported, say) interrupts the action it runs, with
    /// one report per level; once no such condition holds any more, the task resumes by itself.
    pub(crate) fn check_blocked(&mut self, id: &str) {
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        let out = if let Some(query) = task.blocked.clone() {
            let still = (self.env.blocked_by.values()).any(|q| *q == query && self.env.holds(q));
            if still {
                return;
            }
            r2r::log_info!(&self.logger, "{id}: `{query}` no longer holds: resuming");
            task.blocked = None;
            task.sched.resume().unwrap_or_default()
        } else {
            let tree = task.sched.tree();
            let blocked = task.sched.live().find_map(|leaf| {
                let actuator = tree.nodes[leaf].actuator.as_deref()?;
                Some((
                    tree.nodes[leaf].path.clone(),
                    self.env.blocked(actuator)?.to_owned(),
                ))
            });
            let Some((path, query)) = blocked else {
                return;
            };
            r2r::log_info!(&self.logger, "{id}: {path} blocked while `{query}` holds");
            let reason = format!("blocked: {query}");
            let out = (task.sched.add_attribute(&path, Attribute::Interrupt { reason })).unwrap_or_default();
            task.blocked = Some(query);
            out
        };
        self.apply(id, out);
    }

    /// Carry out what a scheduler asked for.
    pub(crate) fn apply(&mut self, id: &str, out: Vec<Output>) {
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        let stamp = lockstep_ros::time::clock_stamp(&self.events.clock);
        let mut follow_up = Vec::new();
        let mut finished = false;
        for o in out {
            task.dirty = true;
            let mut event = TaskEvent {
                stamp: stamp.clone(),
                task_id: task.id.clone(),
                robot: task.robot.clone(),
                ..Default::default()
            };
            match o {
                Output::Status(change) => {
                    event.kind = TaskEvent::STATUS as u8;
                    event.level = task.sched.tree().nodes[change.id].level as u32;
                    event.path = change.path;
                    event.old_status = change.old.name().into();
                    event.new_status = change.new.name().into();
                    event.reason = change.new.reason().into();
                }
                Output::GroupCompleted { path, level } => {
                    task.group_reports += 1;
                    event.kind = TaskEvent::GROUP_COMPLETED as u8;
                    event.path = path;
                    event.level = level as u32;
                }
                Output::Interrupted { path, level, reason } => {
                    event.kind = TaskEvent::INTERRUPTED as u8;
                    event.path = path;
                    event.level = level as u32;
                    event.reason = reason;
                }
                Output::Retry {
                    path,
                    level,
                    attempt,
                    attempts,
                    after_s,
                    reason,
                } => {
                    event.kind = TaskEvent::RETRY as u8;
                    event.path = path;
                    event.level = level as u32;
                    event.reason = format!("attempt {attempt}/{attempts} in {after_s} s: {reason}");
                    r2r::log_info!(&self.logger, "{}: {} {}", task.id, event.path, event.reason);
                }
                Output::TimedOut { path, level, after_s } => {
                    event.kind = TaskEvent::TIMED_OUT as u8;
                    event.path = path;
                    event.level = level as u32;
                    event.reason = format!("timed out after {after_s} s");
                }
                Output::Fallback {
                    path,
                    level,
                    fallback_path,
                    reason,
                } => {
                    event.kind = TaskEvent::FALLBACK as u8;
                    event.path = path;
                    event.level = level as u32;
                    event.reason = format!("{fallback_path}: {reason}");
                    r2r::log_info!(
                        &self.logger,
                        "{}: {} failed, fallback {}",
                        task.id,
                        event.path,
                        event.reason
                    );
                }
                Output::SendGoal {
                    leaf,
                    path,
                    actuator,
                    params,
                } => {
                    let server = self
                        .env
                        .server(&task.robot, &actuator)
                        .unwrap_or_default()
                        .to_owned();
                    let sent = send_goal(
                        task,
                        leaf,
                        &path,
                        &actuator,
                        &server,
                        &params,
                        &self.tx,
                        self.server_wait,
                    );
                    if let Err(reason) = sent {
                        follow_up.extend(task.sched.leaf_failed(leaf, &reason));
                    }
                    continue;
                }
                Output::CancelGoal { leaf, .. } => {
                    cancel_goal(task, leaf, &mut self.env);
                    continue;
                }
                Output::PauseGoal { leaf, .. } => {
                    pause_goal(task, leaf, &self.tx, self.server_wait, false);
                    continue;
                }
                Output::ResumeGoal { leaf, .. } => {
                    pause_goal(task, leaf, &self.tx, self.server_wait, true);
                    continue;
                }
                Output::Finished(outcome) => {
                    event.kind = TaskEvent::FINISHED as u8;
                    event.path = task.sched.tree().root().path.clone();
                    event.reason = State::Finished(outcome.clone()).name().into();
                    let result = task.result(&outcome);
                    r2r::log_info!(&self.logger, "{}: {}", task.id, result.summary);
                    // The end is on /task_events before the result goes out.
                    let _ = self.events.publisher.publish(&event);
                    if let Some(mut goal) = task.goal.take() {
                        let _ = match outcome {
                            Outcome::Completed => goal.succeed(result),
                            Outcome::Cancelled => goal.cancel(result),
                            Outcome::Failed { .. } => goal.abort(result),
                        };
                    }
                    task.state = State::Finished(outcome);
                    self.unsaved = true;
                    self.next_end += 1;
                    task.ended = self.next_end;
                    finished = true;
                    continue;
                }
            }
            let _ = self.events.publisher.publish(&event);
        }
        if !follow_up.is_empty() {
            self.apply(id, follow_up);
        }
        if finished {
            self.prune();
        }
    }

    fn leaf_event(&mut self, id: &str, leaf: Id, generation: u64, event: LeafEvent) {
        let ended = matches!(event, LeafEvent::Refused(_) | LeafEvent::Done { .. });
        let Some(task) = self.tasks.get_mut(id) else {
            let key = (id.to_owned(), generation);
            match event {
                // Cancelled before it was accepted, and its task forgotten since: cancel it now.
                LeafEvent::Accepted(handle) if self.orphans.contains_key(&key) => handle.cancel(),
                _ if ended => {
                    if let Some(server) = self.orphans.remove(&key) {
                        self.env.drained(&server);
                    }
                }
                _ => {}
            }
            return;
        };
        if ended {
            if let Some(server) = task.cancelled.remove(&generation) {
                self.env.drained(&server);
            }
        }
        let current = task.goals.get(&leaf).is_some_and(|g| g.generation == generation);
        let out = match event {
            LeafEvent::Accepted(handle) => {
                match task.goals.get_mut(&leaf).filter(|_| current) {
                    Some(g) if !g.cancel_pending => {
                        g.handle = Some(handle);
                        // Its goal id goes into the state file: a restart asks the actuator how it ended.
                        self.unsaved = true;
                    }
                    // Cancelled before it was accepted (or a goal of an earlier send): cancel it now.
                    _ => {
                        handle.cancel();
                        task.goals.remove(&leaf);
                    }
                }
                return;
            }
            LeafEvent::Feedback(feedback) => {
                if let Some(g) = task.goals.get_mut(&leaf).filter(|_| current) {
                    g.feedback = Some(feedback);
                }
                return;
            }
            LeafEvent::Refused(reason) if current => {
                let Some(g) = task.goals.remove(&leaf) else { return };
                if g.cancel_pending {
                    return;
                }
                let reason = match self.env.for_robot(&task.robot).busy_secs(&g.actuator) {
                    Some(secs) => format!("{reason} (it reports busy for another {secs:.2} s)"),
                    None => reason,
                };
                task.sched.leaf_failed(leaf, &reason)
            }
            LeafEvent::Done { success, message } if current => {
                task.goals.remove(&leaf);
                self.unsaved = true;
                if success {
                    task.leaves_executed += 1;
                    // A drive that completed leaves the robot at the route's last station.
                    let arrived = (task.sched.tree().nodes[leaf].params.get("route_stations"))
                        .and_then(|s| s.as_array()?.last()?.as_str().map(str::to_owned));
                    if let (Some(station), Some(robot)) = (arrived, self.robots.get_mut(&task.robot)) {
                        robot.station = Some(station);
                    }
                    task.sched.leaf_succeeded(leaf)
                } else {
                    task.sched.leaf_failed(leaf, &message)
                }
            }
            _ => return,
        };
        self.apply(id, out);
    }

    fn cancel(&mut self, id: &str) {
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        if let Ok(out) = task.sched.cancel() {
            r2r::log_info!(&self.logger, "{id}: cancel requested");
            self.apply(id, out);
        }
    }

    fn pause(&mut self, id: &str, reason: &str) -> Result<String, String> {
        self.task(id)?;
        let Some(task) = self.tasks.get_mut(id) else {
            return Err(format!("no task `{id}`"));
        };
        if task.state != State::Running {
            return Err(format!(
                "{id} is {}: only a running task pauses",
                task.state.name()
            ));
        }
        let reason = if reason.is_empty() { "paused" } else { reason };
        let out =
            (task.sched.pause_with(reason, &self.env.for_robot(&task.robot))).map_err(|e| e.to_string())?;
        task.state = State::Paused;
        self.unsaved = true;
        let cancelled = out
            .iter()
            .filter(|o| matches!(o, Output::CancelGoal { .. } | Output::PauseGoal { .. }))
            .count();
        self.apply(id, out);
        Ok(format!(
            "{id} paused ({reason}); {cancelled} actuator goal(s) cancelled or paused"
        ))
    }

    fn resume(&mut self, id: &str) -> Result<String, String> {
        let task = self.task(id)?;
        if task.state == State::Restored && !task.recovering.is_empty() {
            let waiting: Vec<&str> = task.recovering.iter().map(String::as_str).collect();
            return Err(format!(
                "{id}: still asking the actuators how {} ended (their goals were out when the manager stopped); \
                 resume once that is known",
                waiting.join(", ")
            ));
        }
        if task.state == State::Restored {
            // Queued on its robot; its scheduler resumes when the robot starts it.
            task.state = State::Queued;
            task.resume_pending = true;
            task.dirty = true;
            self.unsaved = true;
            return Ok(format!(
                "{id} resumed: queued on its robot; its completed actions do not run again"
            ));
        }
        // Paused by an operator, or running but interrupted by an interrupt attribute.
        if !matches!(task.state, State::Paused | State::Running) {
            return Err(format!(
                "{id} is {}: only a paused or interrupted task resumes",
                task.state.name()
            ));
        }
        let out = task.sched.resume().map_err(|e| e.to_string())?;
        task.state = State::Running;
        task.blocked = None;
        self.unsaved = true;
        self.apply(id, out);
        Ok(format!("{id} resumed"))
    }

    fn add_attribute(&mut self, id: &str, path: &str, attribute: Attribute) -> Result<String, String> {
        if let Attribute::Condition { query } = &attribute {
            check_query(query)?;
        }
        let task = self.task(id)?;
        let what = format!("{attribute:?}");
        let out = task
            .sched
            .add_attribute(path, attribute)
            .map_err(|e| format!("{id}: {e}"))?;
        self.apply(id, out);
        Ok(format!("{id} {path}: {what} added"))
    }

    fn task(&mut self, id: &str) -> Result<&mut Task, String> {
        let known = self.tasks.keys().cloned().collect::<Vec<_>>().join(", ");
        self.tasks
            .get_mut(id)
            .ok_or_else(|| format!("no task `{id}` (tasks: {known})"))
    }

    /// Forget the tasks that finished before the last `keep_finished` ones. Their cancelled actuator goals
    /// still free their actuators when they end.
    fn prune(&mut self) {
        let mut finished: Vec<(u64, String)> = (self.tasks.values())
            .filter(|t| t.is_finished())
            .map(|t| (t.ended, t.id.clone()))
            .collect();
        finished.sort();
        let excess = finished.len().saturating_sub(self.keep_finished);
        for (_, id) in finished.into_iter().take(excess) {
            if let Some(task) = self.tasks.remove(&id) {
                for (generation, server) in task.cancelled {
                    self.orphans.insert((id.clone(), generation), server);
                }
            }
        }
    }

    /// A pausable actuator could not pause (or resume) its goal: cancel the goal instead; the leaf is sent
    /// again when the task resumes.
    fn pause_failed(&mut self, id: &str, leaf: Id, reason: &str) {
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        r2r::log_warn!(&self.logger, "{id}: {reason}; cancelling its goal instead");
        if !task.goals.contains_key(&leaf) {
            return;
        }
        if task.sched.is_paused() {
            cancel_goal(task, leaf, &mut self.env);
            task.sched.forget_live(leaf);
            return;
        }
        // It did not resume: its action fails (a retry or fallback may take over).
        cancel_goal(task, leaf, &mut self.env);
        let out = task.sched.leaf_failed(leaf, reason);
        self.apply(id, out);
    }
}
