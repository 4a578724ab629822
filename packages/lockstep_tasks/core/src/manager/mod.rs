//! The task manager's policy as a state machine, without ROS: every task, each robot's queue, and what the
//! schedulers ask for. The node turns what it observes into an [`Event`] and carries out the [`Command`]s
//! that [`Manager::handle`] returns; one event is handled at a time, so each level's list is never scheduled
//! while an event changes it (no lock needed). Time comes in with each event: nothing here reads a clock.
//!
//! - A new ExecuteTask goal is decomposed at once and every action's goal is built and type-checked before
//!   the goal is accepted as a task; any error rejects the goal and the log says why, with the key path or
//!   subtask path.
//! - Each robot runs one task at a time; its other tasks queue by priority, then arrival. A task of higher
//!   priority than the robot's running one preempts it (pause, run, resume). A new task goes to the robot it
//!   names, else to the one that can start it soonest ([`crate::fleet`]).
//! - An actuator that reports itself busy delays the action about to go to it; after a cancel, that actuator
//!   gets no new goal until the cancelled one has ended (at most `drain_timeout_s`).
//! - Retries, time-outs and fallbacks are the scheduler's; each is published on `task_events`.
//! - With a state file, the unfinished tasks are written after each change and restored at start.
//! - Cancels reach every live actuator goal; a goal not yet accepted is cancelled the moment it is.
//! - An interrupted navigation is sent again with the route it had left (its last feedback).
//! - Finished tasks stay listed (ListTasks) until `keep_finished` tasks have finished after them.
//! - A goal beyond [`limits::MAX_UNFINISHED_TASKS`] unfinished tasks is refused as busy; names and
//!   parameters past their limits are refused unread, and request text is repeated in log lines and answers
//!   only as [`Manager::echo`] shows it (clipped).

mod apply;
pub mod charge_policy;
pub mod charging;
pub mod energy;
pub mod environment;
pub mod floor;
mod floor_drive;
mod floor_replan;
pub mod goals;
mod io;
mod leaves;
pub mod limits;
mod lost;
mod queue;
pub mod refusals;
mod restore;
pub mod task;
pub mod view;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::rc::Rc;

pub use environment::{ActuatorLoad, Environment};
pub use io::{
    AttributeRequest, Command, Event, EventKind, Feedback, GoalRequest, Level, Listing, RequestId, RobotInfo,
    Setup, TaskEvent, TaskInfo, TaskResult, Unchecked,
};
pub use task::{LeafGoal, State, Task};

use crate::map::StationMap;
use crate::robots::Robot;
use refusals::Refusals;

pub struct Manager<S> {
    pub setup: Rc<S>,
    pub env: Environment,
    pub tasks: BTreeMap<String, Task<S>>,
    /// Finished tasks kept for ListTasks.
    pub keep_finished: usize,
    /// Goals rejected at once and /task_facts messages refused: counted, logged at a bounded rate.
    pub rejected_goals: Refusals,
    pub refused_facts: Refusals,
    /// Cancelled actuator goals of tasks forgotten before those goals ended: (task, generation) -> server.
    pub orphans: BTreeMap<(String, u64), String>,
    pub next_seq: u64,
    pub next_end: u64,
    /// The robots, by name ("" alone: the manager's own namespace).
    pub robots: BTreeMap<String, Robot>,
    pub map: Option<StationMap>,
    /// Whether unfinished tasks are kept in a state file (written by [`Command::WriteJournal`]).
    pub journal: bool,
    /// Something a restart must know changed since the state file was last written.
    pub unsaved: bool,
    /// The time of the event being handled [s].
    pub now: f64,
    /// How request text (and actuators' messages) is repeated in log lines and answers.
    pub echo: limits::Echo,
    /// Unfinished tasks at most; a goal beyond them is refused as busy.
    pub max_unfinished: usize,
    /// How robots spend energy; `None`: tasks are not checked against batteries.
    pub energy: Option<energy::EnergyModel>,
    /// Each robot's latest battery state, by robot name.
    pub batteries: BTreeMap<String, energy::BatteryView>,
    /// The shared floor's reservations (set up at first use, with a map).
    pub floor: Option<floor::Floor>,
    /// Whether drives hold lanes and stations before they go (on by default; off only to measure what
    /// reservations cost and prevent).
    pub reservations: bool,
    /// A robot none of whose own actuators was heard for this long is lost [s]; `None`: never.
    pub robot_timeout_s: Option<f64>,
    /// The robots lost (their actuators silent), until one is heard again.
    pub lost: std::collections::BTreeSet<String>,
    /// A robot that has waited this long for a lane or station plans a way around it, if the map has one [s];
    /// `None`: it waits for its planned way.
    pub replan_after_s: Option<f64>,
    /// When robots charge; `None`: they never go to a charger by themselves.
    pub charging: Option<charge_policy::ChargePolicy>,
    /// What the event being handled asks the node to do.
    out: Vec<Command<S>>,
}

impl<S: Setup> Manager<S> {
    /// A manager for `setup`, with the rules in `env` (its actuators are taken from `setup`), driving one
    /// robot in its own namespace until [`Self::robots`] says otherwise.
    pub fn new(setup: Rc<S>, env: Environment) -> Self {
        let mut manager = Self {
            setup: setup.clone(),
            env,
            tasks: BTreeMap::new(),
            keep_finished: 100,
            rejected_goals: Refusals::new("ExecuteTask goal"),
            refused_facts: Refusals::new("/task_facts message"),
            orphans: BTreeMap::new(),
            next_seq: 0,
            next_end: 0,
            robots: BTreeMap::from([(
                String::new(),
                Robot {
                    name: String::new(),
                    station: None,
                },
            )]),
            map: None,
            journal: false,
            unsaved: false,
            now: 0.0,
            echo: limits::length_only,
            max_unfinished: limits::MAX_UNFINISHED_TASKS,
            energy: None,
            batteries: BTreeMap::new(),
            floor: None,
            reservations: true,
            robot_timeout_s: None,
            lost: Default::default(),
            charging: None,
            replan_after_s: None,
            out: Vec::new(),
        };
        manager.use_setup(setup);
        manager
    }

    /// Handle one event observed at `now` (seconds on the node's steady clock) and return what the node must
    /// do, in order. After the event, each robot's next task starts if none holds it, the running tasks are
    /// stepped, feedback goes out where something changed, and the state file is written if needed (its
    /// command comes first, before whatever announces the change).
    pub fn handle(&mut self, now: f64, event: Event<S>) -> Vec<Command<S>> {
        self.now = now;
        self.event(event);
        self.check_robots();
        self.check_charging();
        self.step();
        self.floor_step();
        let errors: Vec<(String, String)> = self.env.errors.borrow_mut().drain(..).collect();
        for (query, e) in errors {
            let line = format!("condition `{}`: {}", (self.echo)(&query), (self.echo)(&e));
            self.log(Level::Warn, line);
        }
        self.save();
        let mut out = std::mem::take(&mut self.out);
        // The state file first: whoever sees an event, a goal or an answer this produced and then kills the
        // node finds at least that much in the state file after the restart.
        if let Some(at) = out.iter().position(|c| matches!(c, Command::WriteJournal(_))) {
            let journal = out.remove(at);
            out.insert(0, journal);
        }
        out
    }

    fn event(&mut self, event: Event<S>) {
        match event {
            Event::Goal { request, goal } => self.new_goal(request, goal),
            Event::GoalLost { task } => self.goal_lost(&task),
            Event::Cancel { task } => self.cancel(&task),
            Event::Accepted {
                task,
                leaf,
                generation,
                goal_id,
            } => self.accepted(&task, leaf, generation, goal_id),
            Event::Feedback {
                task,
                leaf,
                generation,
                feedback,
            } => self.leaf_feedback(&task, leaf, generation, feedback),
            Event::Refused {
                task,
                leaf,
                generation,
                reason,
            } => self.leaf_ended(&task, leaf, generation, Err(self.echoed(&reason))),
            Event::Done {
                task,
                leaf,
                generation,
                success,
                message,
            } => self.leaf_ended(&task, leaf, generation, Ok((success, self.echoed(&message)))),
            Event::Pause {
                request,
                task,
                reason,
            } => {
                let reason = self.echoed(&reason);
                let answer = limits::check_task_id(&task).and_then(|()| self.pause(&task, &reason));
                self.reply(request, answer);
            }
            Event::Resume { request, task } => {
                let answer = limits::check_task_id(&task).and_then(|()| self.resume(&task));
                self.reply(request, answer);
            }
            Event::AddAttribute {
                request,
                task,
                path,
                attribute,
            } => self.add_attribute_request(request, &task, &path, &attribute),
            Event::List { request } => {
                let listing = self.listing();
                self.out.push(Command::Listed { request, listing });
            }
            Event::PauseFailed { task, leaf, reason } => {
                self.pause_failed(&task, leaf, &self.echoed(&reason))
            }
            Event::Recovered {
                task,
                path,
                outcome,
                reason,
            } => self.recovered(&task, &path, outcome, &self.echoed(&reason)),
            Event::Reload { request, setup } => self.reload(request, setup),
            Event::Facts(text) => self.facts(text),
            Event::ActuatorState {
                server,
                busy,
                remaining_s,
            } => self.env.set_busy(&server, busy, remaining_s, self.now),
            Event::Restore(saved) => self.restore(saved),
            Event::Battery { robot, battery } => self.battery(robot, battery),
            Event::Tick => {}
        }
    }

    /// AddAttribute: the attribute as requested, added at `path` of `task`; the answer says how it went (the
    /// request's text in it as [`Self::echo`] shows it; an interrupt's reason is kept so, and a kind is
    /// judged so: no kind is long).
    fn add_attribute_request(
        &mut self,
        request: RequestId,
        task: &str,
        path: &str,
        attribute: &AttributeRequest,
    ) {
        let attribute = AttributeRequest {
            kind: self.echoed(&attribute.kind),
            reason: self.echoed(&attribute.reason),
            ..attribute.clone()
        };
        let answer = limits::check_task_id(task)
            .and_then(|()| goals::attribute(&attribute))
            .and_then(|a| self.add_attribute(task, path, a));
        self.reply(request, answer);
    }

    /// `~/reload`: the new configuration (or why it failed to load) is taken for new tasks; running tasks
    /// keep theirs.
    fn reload(&mut self, request: RequestId, setup: Result<Rc<S>, String>) {
        let answer = setup.map(|setup| {
            let types = setup.config().task_types().join(", ");
            self.use_setup(setup);
            format!("reloaded: task types {types}; running tasks keep the configuration they started with")
        });
        self.reply(request, answer);
    }

    /// New facts for the conditions; facts that do not parse are refused (a throttled warning) and the
    /// previous ones stay.
    fn facts(&mut self, text: String) {
        if let Err(e) = self.env.set_facts(text) {
            let reason = format!("{}; the previous facts stay", (self.echo)(&e));
            if let Some(line) = self.refused_facts.refused(&reason, self.now) {
                self.log(Level::Warn, line);
            }
        }
    }

    /// New tasks are decomposed with `setup`; the environment takes its actuators (servers, blocking
    /// conditions, pausable ones).
    fn use_setup(&mut self, setup: Rc<S>) {
        let actuators = &setup.config().actuators;
        self.env.servers = setup.servers().clone();
        self.env.blocked_by = (actuators.iter())
            .filter_map(|(name, a)| Some((name.clone(), a.blocked_by.clone()?)))
            .collect();
        self.env.pausable = (actuators.iter())
            .filter(|(_, a)| a.pause.is_some())
            .map(|(name, _)| name.clone())
            .collect();
        self.setup = setup;
    }

    /// `text` as [`Self::echo`] shows it.
    pub(crate) fn echoed(&self, text: &str) -> String {
        (self.echo)(text).into_owned()
    }

    pub(crate) fn log(&mut self, level: Level, text: String) {
        self.out.push(Command::Log(level, text));
    }

    fn reply(&mut self, request: RequestId, answer: Result<String, String>) {
        self.out.push(Command::Reply { request, answer });
    }

    /// ListTasks: running and queued tasks first, then the finished ones; the actuators heard; the robots.
    pub fn listing(&self) -> Listing {
        let mut all: Vec<&Task<S>> = self.tasks.values().collect();
        all.sort_by_key(|t| (t.is_finished(), std::cmp::Reverse(t.priority), t.seq));
        Listing {
            tasks: all.into_iter().map(Task::info).collect(),
            actuators: self.env.actuator_loads(self.now),
            robots: self.robot_infos(),
        }
    }

    /// The task `id`, or why there is none (with the first tasks known).
    fn task(&mut self, id: &str) -> Result<&mut Task<S>, String> {
        if !self.tasks.contains_key(id) {
            const SHOWN: usize = 10;
            let mut known: Vec<Cow<str>> = self.tasks.keys().take(SHOWN).map(|k| (self.echo)(k)).collect();
            if self.tasks.len() > SHOWN {
                known.push(format!("... ({} in all)", self.tasks.len()).into());
            }
            return Err(format!(
                "no task `{}` (tasks: {})",
                (self.echo)(id),
                known.join(", ")
            ));
        }
        self.tasks
            .get_mut(id)
            .ok_or_else(|| format!("no task `{}`", (self.echo)(id)))
    }
}
