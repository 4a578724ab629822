//! The robots' queues: which robot a new task goes to, when each robot's next task starts, preemption, and
//! what the state file keeps.
//!
//! - A task naming a robot goes to it; any other goes to the robot that can start it soonest: a free robot
//!   before a busy one, then the shortest route (by time) from where the robot is, or will be when its
//!   queue is done, to the task's first station (`from`). [`crate::fleet`] decides; ties go to the robot
//!   with fewer queued tasks, then by name.
//! - The manager adds two parameters to the goal's: `robot` (its name) and `at` (the station it starts the
//!   task from), so templates can plan the drive to the first station (`route: {from: "{at}", to: "{from}"}`).
//! - Each robot runs one task at a time; its queue is ordered by priority, then arrival.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value;

use super::energy;
use super::goals::{decompose, goal_parameters};
use super::io::{Command, GoalRequest, Level, RequestId, RobotInfo, Setup};
use super::limits;
use super::task::{State, Task};
use super::Manager;
use crate::fleet::{assign, RobotView, TaskNeeds};
use crate::journal::{self, TaskRecord};
use crate::params::Params;
use crate::scheduler::Scheduler;
use crate::tree::Tree;

/// Seconds a task is expected to keep its robot busy: its planned drives at their speed, plus one second
/// for every other action (the assignment's estimate of when a busy robot is free).
fn estimate_s(tree: &Tree) -> f64 {
    tree.leaves()
        .map(|leaf| {
            let p = &tree.nodes[leaf].params;
            let length = p.get("route_length_m").and_then(Value::as_f64);
            let speed = p.get("speed").and_then(Value::as_f64).filter(|s| *s > 0.0);
            match (length, speed) {
                (Some(l), Some(s)) => l / s,
                _ => 1.0,
            }
        })
        .sum()
}

/// The last station a task's drives end at.
fn end_station(tree: &Tree) -> Option<String> {
    let leaves: Vec<_> = tree.leaves().collect();
    leaves.into_iter().rev().find_map(|leaf| {
        let stations = tree.nodes[leaf].params.get("route_stations")?.as_array()?;
        stations.last()?.as_str().map(str::to_owned)
    })
}

/// A new task as decomposed for its robot, before it is a [`Task`].
pub(crate) struct NewTask {
    pub id: String,
    pub seq: u64,
    pub task_type: String,
    pub parameters: Params,
    pub priority: i32,
    pub robot: String,
}

impl<S: Setup> Manager<S> {
    fn unfinished<'a>(&'a self, robot: &'a str) -> impl Iterator<Item = &'a Task<S>> + 'a {
        (self.tasks.values())
            .filter(move |t| t.robot == robot && !t.is_finished() && t.state != State::Restored)
    }

    /// Where `robot` will be when its unfinished tasks are done, and when that is (s from now).
    fn free_at(&self, robot: &str) -> (Option<String>, Option<f64>) {
        let mut station = self.robots.get(robot).and_then(|r| r.station.clone());
        let mut busy = None::<f64>;
        let mut queue: Vec<&Task<S>> = self.unfinished(robot).collect();
        queue.sort_by_key(|t| t.seq);
        for task in queue {
            let tree = task.sched.tree();
            *busy.get_or_insert(0.0) += estimate_s(tree);
            if let Some(end) = end_station(tree) {
                station = Some(end);
            }
        }
        (station, busy)
    }

    /// The robot a new task goes to, with the reason.
    pub(crate) fn choose_robot(&self, named: &str, params: &Params) -> Result<(String, String), String> {
        if self.robots.len() == 1 && named.is_empty() {
            let only = self.robots.keys().next().cloned().unwrap_or_default();
            return Ok((only, "the only robot".into()));
        }
        // A lost robot takes no new task unless the goal names it (it waits for the robot to come back).
        let views: Vec<RobotView> = (self.robots.keys())
            .filter(|name| !self.lost.contains(*name) || *name == named)
            .map(|name| {
                let (station, busy) = self.free_at(name);
                // A robot that will have to charge first starts that much later.
                let charge_s = self.charge_first_s(name);
                let busy = (charge_s > 0.0).then(|| busy.unwrap_or(0.0) + charge_s).or(busy);
                RobotView {
                    name: name.clone(),
                    station: station.unwrap_or_default(),
                    busy_until_s: busy,
                    queued: self.unfinished(name).count(),
                }
            })
            .collect();
        let needs = TaskNeeds {
            first_station: params.get("from").and_then(Value::as_str).map(str::to_owned),
            robot: (!named.is_empty()).then(|| named.to_owned()),
        };
        let Some(map) = &self.map else {
            // No map: free robots first, then the shortest queue, then by name.
            if let Some(robot) = needs.robot {
                return if self.robots.contains_key(&robot) {
                    Ok((robot.clone(), format!("{robot}: named in the goal")))
                } else {
                    Err(format!("no robot `{robot}` (robots: {})", self.robot_names()))
                };
            }
            let best = views.iter().min_by_key(|v| (v.queued, v.name.clone()));
            return best
                .map(|v| (v.name.clone(), format!("{}: {} queued", v.name, v.queued)))
                .ok_or_else(|| "no robot".into());
        };
        let chosen = assign(&views, &needs, map, 0.0).map_err(|e| e.to_string())?;
        Ok((chosen.robot, chosen.reason))
    }

    /// A robot's battery state: kept for the energy check (its first one is logged).
    pub(crate) fn battery(&mut self, robot: String, battery: energy::BatteryView) {
        if !(battery.capacity_wh.is_finite() && battery.capacity_wh > 0.0 && battery.charge_wh.is_finite()) {
            return;
        }
        let before = self.batteries.insert(robot.clone(), battery);
        let now = self.now;
        if let Some(policy) = self.charging.as_mut() {
            policy.heard(&robot, now, battery.charge_wh);
        }
        if before.is_some_and(|b| battery.charge_wh > b.charge_wh) {
            // It charges again: chargers where it did not are worth another try.
            if let Some(policy) = self.charging.as_mut() {
                policy.stalled.retain(|(r, _)| *r != robot);
            }
        }
        if before.is_none() {
            let name = energy::robot_name(&robot);
            let line = format!(
                "battery of {name}: {:.2} Wh of {:.2} Wh",
                battery.charge_wh, battery.capacity_wh
            );
            self.log(Level::Info, line);
        }
    }

    pub(crate) fn robot_names(&self) -> String {
        self.robots.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// The goal's robot, its parameters with `robot` and `at` added, and its tree; or why it cannot run
    /// (first: whether it is within the limits, and whether the manager can take another task).
    fn judge(&self, wanted: &GoalRequest) -> Result<(Tree, String, String, Params), String> {
        limits::check_goal(wanted)?;
        let unfinished = self.tasks.values().filter(|t| !t.is_finished()).count();
        limits::busy(unfinished, self.max_unfinished)?;
        let mut params = goal_parameters(&wanted.parameters_json)?;
        let (robot, why) = self.choose_robot(&wanted.robot, &params)?;
        params.insert("robot".into(), Value::String(robot.clone()));
        if !params.contains_key("at") {
            if let Some(at) = self.free_at(&robot).0 {
                params.insert("at".into(), Value::String(at));
            }
        }
        let tree = decompose(
            &*self.setup,
            &wanted.task_type,
            &params,
            &robot,
            self.map.as_ref(),
        )?;
        if let Some(why_not) =
            (self.energy.as_ref()).and_then(|m| energy::too_long(&tree, m, &self.batteries))
        {
            return Err(why_not);
        }
        Ok((tree, robot, why, params))
    }

    /// A new ExecuteTask goal: judged at once; a goal that cannot run is rejected, never accepted.
    pub(crate) fn new_goal(&mut self, request: RequestId, wanted: GoalRequest) {
        let (tree, robot, why, params) = match self.judge(&wanted) {
            Ok(judged) => judged,
            Err(reason) => {
                let reason = format!(
                    "goal {} (task type `{}`): {}",
                    wanted.uuid,
                    (self.echo)(&wanted.task_type),
                    (self.echo)(&reason)
                );
                if let Some(line) = self.rejected_goals.refused(&reason, self.now) {
                    self.log(Level::Warn, line);
                }
                self.out.push(Command::RejectGoal { request });
                return;
            }
        };
        self.next_seq += 1;
        let seq = self.next_seq;
        let id = format!("task-{seq}");
        self.out.push(Command::AcceptGoal {
            request,
            task: id.clone(),
        });
        let leaves = tree.leaves().count();
        let line = format!(
            "{id}: {} (priority {}) on {why}; {} subtasks, {leaves} actions, decomposed and checked",
            wanted.task_type,
            wanted.priority,
            tree.nodes.len(),
        );
        self.log(Level::Info, line);
        let new = NewTask {
            id: id.clone(),
            seq,
            task_type: wanted.task_type,
            parameters: params,
            priority: wanted.priority,
            robot,
        };
        let mut task = self.make_task(new, Scheduler::new(tree), self.setup.clone());
        task.client = true;
        task.named = !wanted.robot.is_empty();
        self.tasks.insert(id.clone(), task);
        // Queued tasks are in the state file too: a restart finds them.
        self.unsaved = true;
        self.preempt_for(&id);
    }

    pub(crate) fn make_task(&self, new: NewTask, sched: Scheduler, setup: Rc<S>) -> Task<S> {
        Task {
            id: new.id,
            task_type: new.task_type,
            parameters: new.parameters.into_iter().collect(),
            robot: new.robot,
            resume_pending: false,
            recovering: Default::default(),
            priority: new.priority,
            seq: new.seq,
            sched,
            state: State::Queued,
            setup,
            client: false,
            goals: BTreeMap::new(),
            cancelled: BTreeMap::new(),
            blocked: None,
            generation: 0,
            resume_with: BTreeMap::new(),
            group_reports: 0,
            leaves_executed: 0,
            dirty: true,
            started_s: self.now,
            ended: 0,
            named: true,
            charging: None,
        }
    }

    /// A new task of higher priority than its robot's running one pauses that one.
    fn preempt_for(&mut self, id: &str) {
        let Some(new) = self.tasks.get(id) else { return };
        let (robot, priority) = (new.robot.clone(), new.priority);
        let low = (self.tasks.values())
            .find(|t| t.robot == robot && t.state == State::Running && t.priority < priority)
            .map(|t| t.id.clone());
        let Some(low) = low else { return };
        self.log(Level::Info, format!("{id} preempts {low} on robot `{robot}`"));
        let Some(task) = self.tasks.get_mut(&low) else {
            return;
        };
        let env = self.env.for_robot(&task.robot, self.now);
        let out = (task.sched.pause_with("preempted", &env)).unwrap_or_default();
        task.state = State::Preempted;
        task.dirty = true;
        self.apply(&low, out);
    }

    /// `robot`'s next task: by priority, then arrival.
    fn next_task(&self, robot: &str) -> Option<String> {
        (self.tasks.values())
            .filter(|t| t.robot == robot && matches!(t.state, State::Queued | State::Preempted))
            .min_by_key(|t| (std::cmp::Reverse(t.priority), t.seq))
            .map(|t| t.id.clone())
    }

    /// Plan the unstarted task `id` again for `robot`, from the station the robot stands at now.
    pub(crate) fn replan(&mut self, id: &str, robot: &str) -> Result<(), String> {
        let task = self.tasks.get(id).ok_or_else(|| format!("no task `{id}`"))?;
        let mut params: Params = task.parameters.clone().into_iter().collect();
        params.insert("robot".into(), Value::String(robot.to_owned()));
        params.remove("at");
        if let Some(at) = self.robots.get(robot).and_then(|r| r.station.clone()) {
            params.insert("at".into(), Value::String(at));
        }
        let tree = decompose(&*self.setup, &task.task_type, &params, robot, self.map.as_ref())?;
        if let Some(task) = self.tasks.get_mut(id) {
            task.robot = robot.to_owned();
            task.parameters = params.into_iter().collect();
            task.sched = Scheduler::new(tree);
            task.dirty = true;
        }
        Ok(())
    }

    /// Start `robot`'s next task if no task holds it (a charging task first, when its battery asks for one).
    /// A task that has not started yet and was planned from another station than the one the robot stands
    /// at is planned again from there.
    fn start_next(&mut self, robot: &str) {
        let holder = (self.tasks.values())
            .any(|t| t.robot == robot && matches!(t.state, State::Running | State::Paused));
        if holder {
            return;
        }
        if self.charge_first(robot, self.next_task(robot).as_deref()) {
            return;
        }
        let Some(id) = self.next_task(robot) else {
            return;
        };
        let here = self.robots.get(robot).and_then(|r| r.station.clone());
        let fresh = (self.tasks.get(&id))
            .filter(|t| {
                t.state == State::Queued && !t.resume_pending && t.sched.completed_leaves().is_empty()
            })
            .and_then(|t| t.parameters.get("at").and_then(Value::as_str))
            .is_some_and(|at| here.as_deref().is_some_and(|h| h != at));
        if fresh {
            if let Err(e) = self.replan(&id, robot) {
                self.log(
                    Level::Warn,
                    format!("{id}: planned from where `{robot}` stands: {e}"),
                );
            }
        }
        let Some(task) = self.tasks.get_mut(&id) else {
            return;
        };
        let id = task.id.clone();
        let was = std::mem::replace(&mut task.state, State::Running);
        task.dirty = true;
        let resume = was == State::Preempted || std::mem::take(&mut task.resume_pending);
        self.unsaved = true;
        self.log(Level::Info, format!("{id}: {} -> running", was.name()));
        if resume {
            let out = (self.tasks.get_mut(&id)).map(|t| t.sched.resume().unwrap_or_default());
            self.apply(&id, out.unwrap_or_default());
        }
    }

    /// Start each robot's next task if none holds it, step the running ones, send feedback where it changed.
    pub(crate) fn step(&mut self) {
        let robots: Vec<String> = (self.robots.keys())
            .filter(|r| !self.lost.contains(*r))
            .cloned()
            .collect();
        for robot in robots {
            self.start_next(&robot);
        }
        let running: Vec<String> = (self.tasks.values())
            .filter(|t| t.state == State::Running)
            .map(|t| t.id.clone())
            .collect();
        for id in running {
            self.check_blocked(&id);
            let out = match self.tasks.get_mut(&id) {
                Some(task) => task
                    .sched
                    .step(self.now, &self.env.for_robot(&task.robot, self.now)),
                None => continue,
            };
            self.apply(&id, out);
        }
        for task in self.tasks.values_mut().filter(|t| t.dirty) {
            task.dirty = false;
            if task.client {
                self.out.push(Command::Feedback(task.feedback()));
            }
        }
    }

    /// ListTasks' robots.
    pub(crate) fn robot_infos(&self) -> Vec<RobotInfo> {
        (self.robots.values())
            .map(|r| {
                let running = (self.tasks.values())
                    .find(|t| t.robot == r.name && matches!(t.state, State::Running | State::Paused));
                RobotInfo {
                    name: r.name.clone(),
                    station: r.station.clone().unwrap_or_default(),
                    state: if self.lost.contains(&r.name) {
                        "lost"
                    } else if running.is_some() {
                        "busy"
                    } else {
                        "idle"
                    }
                    .into(),
                    running_task: running.map(|t| t.id.clone()).unwrap_or_default(),
                    queued_tasks: (self.tasks.values())
                        .filter(|t| t.robot == r.name && matches!(t.state, State::Queued | State::Preempted))
                        .count() as u32,
                }
            })
            .collect()
    }

    /// What the state file keeps now: the unfinished tasks and where each robot is.
    pub fn journal_state(&self) -> journal::State {
        let mut tasks: Vec<TaskRecord> = (self.tasks.values())
            .filter(|t| !t.is_finished())
            .map(Task::record)
            .collect();
        tasks.sort_by_key(|t| t.seq);
        journal::State {
            version: journal::VERSION,
            next_seq: self.next_seq,
            stations: (self.robots.values())
                .filter_map(|r| Some((r.name.clone(), r.station.clone()?)))
                .collect(),
            tasks,
            held: (self.floor.as_ref())
                .map(|f| f.traffic.held().robots)
                .unwrap_or_default(),
        }
    }

    /// Ask for the state file to be written if anything a restart needs changed.
    pub(crate) fn save(&mut self) {
        if !self.journal || !std::mem::take(&mut self.unsaved) {
            return;
        }
        let state = self.journal_state();
        self.out.push(Command::WriteJournal(state));
    }
}
