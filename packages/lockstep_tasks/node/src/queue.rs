//! The robots' queues: which robot a new task goes to, when each robot's next task starts, and the state
//! file that lets unfinished tasks outlive the manager.
//!
//! - A task naming a robot goes to it; any other goes to the robot that can start it soonest: a free robot
//!   before a busy one, then the shortest route (by time) from where the robot is, or will be when its
//!   queue is done, to the task's first station (`from`). [`lockstep_tasks::fleet`] decides; ties go to the
//!   robot with fewer queued tasks, then by name.
//! - The manager adds two parameters to the goal's: `robot` (its name) and `at` (the station it starts the
//!   task from), so templates can plan the drive to the first station (`route: {from: "{at}", to: "{from}"}`).
//! - Each robot runs one task at a time; its queue is ordered by priority, then arrival.

use std::collections::BTreeMap;
use std::time::Instant;

use futures::StreamExt as _;
use lockstep_tasks::fleet::{assign, RobotView, TaskNeeds};
use lockstep_tasks::{Outcome, Output, Scheduler, Tree};
use r2r::lockstep_interfaces::action::ExecuteTask;
use r2r::lockstep_interfaces::msg::{RobotInfo, TaskEvent};
use serde_json::Value;

use crate::actuators::LeafEvent;
use crate::goals::{decompose, goal_parameters};
use crate::journal::{self, TaskRecord};
use crate::manager::{Event, Manager};
use crate::task::{State, Task};
use lockstep_tasks_node::action_server::ActionServerGoalRequest;

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

impl Manager {
    fn unfinished<'a>(&'a self, robot: &'a str) -> impl Iterator<Item = &'a Task> + 'a {
        (self.tasks.values())
            .filter(move |t| t.robot == robot && !t.is_finished() && t.state != State::Restored)
    }

    /// Where `robot` will be when its unfinished tasks are done, and when that is (s from now).
    fn free_at(&self, robot: &str) -> (Option<String>, Option<f64>) {
        let mut station = self.robots.get(robot).and_then(|r| r.station.clone());
        let mut busy = None::<f64>;
        let mut queue: Vec<&Task> = self.unfinished(robot).collect();
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
    fn choose_robot(&self, named: &str, params: &lockstep_tasks::Params) -> Result<(String, String), String> {
        if self.robots.len() == 1 && named.is_empty() {
            let only = self.robots.keys().next().cloned().unwrap_or_default();
            return Ok((only, "the only robot".into()));
        }
        let views: Vec<RobotView> = (self.robots.keys())
            .map(|name| {
                let (station, busy) = self.free_at(name);
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

    pub(crate) fn robot_names(&self) -> String {
        self.robots.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    pub(crate) fn new_goal(&mut self, request: ActionServerGoalRequest<ExecuteTask::Action>) {
        let wanted = request.goal.clone();
        let began = Instant::now();
        let checked = goal_parameters(&wanted).and_then(|mut params| {
            let (robot, why) = self.choose_robot(&wanted.robot, &params)?;
            params.insert("robot".into(), Value::String(robot.clone()));
            if !params.contains_key("at") {
                if let Some(at) = self.free_at(&robot).0 {
                    params.insert("at".into(), Value::String(at));
                }
            }
            let tree = decompose(
                &self.loaded,
                &wanted.task_type,
                &params,
                &robot,
                self.map.as_ref(),
            )?;
            Ok((tree, robot, why, params))
        });
        let decompose_ms = began.elapsed().as_secs_f64() * 1e3;
        // Judged at once: a goal that cannot run is rejected in the goal response, never accepted.
        let (tree, robot, why, params) = match checked {
            Ok(checked) => checked,
            Err(reason) => {
                let uuid = request.uuid;
                let reason = format!("goal {uuid} (task type `{}`): {reason}", wanted.task_type);
                if let Some(line) = self.rejected_goals.refused(&reason, Instant::now()) {
                    r2r::log_warn!(&self.logger, "{line}");
                }
                if let Err(e) = request.reject() {
                    r2r::log_warn!(&self.logger, "could not answer goal {uuid} (rejected): {e}");
                }
                return;
            }
        };
        self.next_seq += 1;
        let seq = self.next_seq;
        let id = format!("task-{seq}");
        let (goal, mut cancels) = match request.accept() {
            Ok(accepted) => accepted,
            Err(e) => {
                r2r::log_error!(
                    &self.logger,
                    "could not answer goal {id} ({e}); dropped unstarted: the client may send it again"
                );
                return;
            }
        };
        let tx = self.tx.clone();
        let cancel_id = id.clone();
        tokio::spawn(async move {
            while let Some(request) = cancels.next().await {
                request.accept();
                if tx.send(Event::Cancel(cancel_id.clone())).is_err() {
                    return;
                }
            }
        });
        let leaves = tree.leaves().count();
        r2r::log_info!(
            &self.logger,
            "{id}: {} (priority {}) on {why}; {} subtasks, {leaves} actions, decomposed and checked in {decompose_ms:.3} ms",
            wanted.task_type,
            wanted.priority,
            tree.nodes.len(),
        );
        let task = self.make_task(
            id.clone(),
            seq,
            &wanted.task_type,
            params,
            wanted.priority,
            robot,
            tree,
        );
        self.tasks.insert(
            id.clone(),
            Task {
                goal: Some(goal),
                ..task
            },
        );
        // Queued tasks are in the state file too: a restart finds them.
        self.unsaved = true;
        self.preempt_for(&id);
    }

    #[allow(clippy::too_many_arguments)]
    fn make_task(
        &self,
        id: String,
        seq: u64,
        task_type: &str,
        parameters: lockstep_tasks::Params,
        priority: i32,
        robot: String,
        tree: Tree,
    ) -> Task {
        Task {
            id,
            task_type: task_type.to_owned(),
            parameters: parameters.into_iter().collect(),
            robot,
            resume_pending: false,
            recovering: Default::default(),
            priority,
            seq,
            sched: Scheduler::new(tree),
            state: State::Queued,
            loaded: self.loaded.clone(),
            goal: None,
            goals: BTreeMap::new(),
            cancelled: BTreeMap::new(),
            blocked: None,
            generation: 0,
            resume_with: BTreeMap::new(),
            group_reports: 0,
            leaves_executed: 0,
            dirty: true,
            started: Instant::now(),
            ended: 0,
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
        r2r::log_info!(&self.logger, "{id} preempts {low} on robot `{robot}`");
        let Some(task) = self.tasks.get_mut(&low) else {
            return;
        };
        let out = (task
            .sched
            .pause_with("preempted", &self.env.for_robot(&task.robot)))
        .unwrap_or_default();
        task.state = State::Preempted;
        task.dirty = true;
        self.apply(&low, out);
    }

    /// Start each robot's next task if none holds it, step the running ones, send feedback where it changed.
    pub(crate) fn step(&mut self) {
        let robots: Vec<String> = self.robots.keys().cloned().collect();
        for robot in robots {
            let holder = (self.tasks.values())
                .any(|t| t.robot == robot && matches!(t.state, State::Running | State::Paused));
            if holder {
                continue;
            }
            let next = (self.tasks.values())
                .filter(|t| t.robot == robot && matches!(t.state, State::Queued | State::Preempted))
                .min_by_key(|t| (-t.priority, t.seq))
                .map(|t| t.id.clone());
            let Some(task) = next.and_then(|id| self.tasks.get_mut(&id)) else {
                continue;
            };
            let id = task.id.clone();
            let was = std::mem::replace(&mut task.state, State::Running);
            task.dirty = true;
            self.unsaved = true;
            r2r::log_info!(&self.logger, "{id}: {} -> running", was.name());
            if was == State::Preempted || std::mem::take(&mut task.resume_pending) {
                let out = task.sched.resume().unwrap_or_default();
                self.apply(&id, out);
            }
        }
        let now = self.epoch.elapsed().as_secs_f64();
        let running: Vec<String> = (self.tasks.values())
            .filter(|t| t.state == State::Running)
            .map(|t| t.id.clone())
            .collect();
        for id in running {
            self.check_blocked(&id);
            let out = match self.tasks.get_mut(&id) {
                Some(task) => task.sched.step(now, &self.env.for_robot(&task.robot)),
                None => continue,
            };
            self.apply(&id, out);
        }
        for task in self.tasks.values_mut().filter(|t| t.dirty) {
            task.dirty = false;
            if let Some(goal) = &task.goal {
                let _ = goal.publish_feedback(task.feedback());
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
                    robot_namespace: r.name.clone(),
                    station: r.station.clone().unwrap_or_default(),
                    state: if running.is_some() { "busy" } else { "idle" }.into(),
                    running_task: running.map(|t| t.id.clone()).unwrap_or_default(),
                    queued_tasks: (self.tasks.values())
                        .filter(|t| t.robot == r.name && matches!(t.state, State::Queued | State::Preempted))
                        .count() as u32,
                }
            })
            .collect()
    }

    /// Write the state file if anything a restart needs changed. A write that fails is logged; the tasks
    /// run on.
    pub(crate) fn save(&mut self) {
        let Some(path) = self.state_file.clone() else {
            return;
        };
        if !std::mem::take(&mut self.unsaved) {
            return;
        }
        let mut tasks: Vec<TaskRecord> = (self.tasks.values())
            .filter(|t| !t.is_finished())
            .map(Task::record)
            .collect();
        tasks.sort_by_key(|t| t.seq);
        let state = journal::State {
            version: journal::VERSION,
            next_seq: self.next_seq,
            stations: (self.robots.values())
                .filter_map(|r| Some((r.name.clone(), r.station.clone()?)))
                .collect(),
            tasks,
        };
        if let Err(e) = journal::write(&path, &state) {
            r2r::log_error!(&self.logger, "{e}");
        }
    }

    /// Take back the unfinished tasks of a state file: each is decomposed again, its completed actions
    /// marked completed, and it waits as interrupted for `resume_task`. A task that no longer decomposes
    /// (the configuration changed) stays in the state file's log line and is dropped.
    pub fn restore(&mut self, saved: journal::State) {
        self.next_seq = self.next_seq.max(saved.next_seq);
        for (name, station) in &saved.stations {
            if let Some(robot) = self.robots.get_mut(name) {
                robot.station = Some(station.clone());
            }
        }
        for record in saved.tasks {
            let params: lockstep_tasks::Params = record.parameters.clone().into_iter().collect();
            let restored = if self.robots.contains_key(&record.robot) {
                decompose(
                    &self.loaded,
                    &record.task_type,
                    &params,
                    &record.robot,
                    self.map.as_ref(),
                )
                .and_then(|tree| Scheduler::restore(tree, &record.completed).map_err(|e| e.to_string()))
            } else {
                Err(format!(
                    "robot `{}` is not one of [{}]",
                    record.robot,
                    self.robot_names()
                ))
            };
            let sched = match restored {
                Ok(sched) => sched,
                Err(e) => {
                    r2r::log_error!(
                        &self.logger,
                        "state file: {} ({}) cannot be restored: {e}; dropped (its record was {})",
                        record.id,
                        record.task_type,
                        serde_json::to_string(&record).unwrap_or_default()
                    );
                    continue;
                }
            };
            let last = sched.last_completed_leaf().unwrap_or_default();
            let in_flight = if record.in_flight.is_empty() {
                String::new()
            } else {
                let paths: Vec<&str> = record.in_flight.iter().map(|f| f.path.as_str()).collect();
                format!("; running when the manager stopped: {}", paths.join(", "))
            };
            r2r::log_info!(
                &self.logger,
                "{}: restored ({}, robot `{}`), {} of {} actions completed, last {last}{in_flight}; resume_task runs it on",
                record.id,
                record.task_type,
                record.robot,
                record.completed.len(),
                sched.tree().leaves().count()
            );
            let mut task = self.make_task(
                record.id.clone(),
                record.seq,
                &record.task_type,
                params,
                record.priority,
                record.robot.clone(),
                sched.tree().clone(),
            );
            task.sched = sched;
            task.state = State::Restored;
            self.recover(&mut task, &record);
            let stamp = lockstep_ros::time::clock_stamp(&self.events.clock);
            let _ = self.events.publisher.publish(&TaskEvent {
                stamp,
                task_id: record.id.clone(),
                kind: TaskEvent::RESTORED as u8,
                path: task.sched.tree().root().path.clone(),
                reason: format!(
                    "interrupted: the manager restarted; last completed action: {last}{in_flight}"
                ),
                robot: record.robot.clone(),
                ..Default::default()
            });
            self.tasks.insert(record.id, task);
        }
        self.unsaved = true;
    }

    /// Ask the actuators how the goals that were out when the manager stopped ended; each answer comes back
    /// as [`Event::Recovered`]. A goal the actuator had not accepted (no id) is unknown at once.
    fn recover(&self, task: &mut Task, record: &TaskRecord) {
        for flight in &record.in_flight {
            let client = (task.loaded.clients.get(&task.robot)).and_then(|c| c.get(&flight.actuator));
            let (Some(client), Some(goal_id)) = (client, journal::unhex(&flight.goal_id)) else {
                r2r::log_warn!(
                    &self.logger,
                    "{}: {} had no accepted goal when the manager stopped: it runs again on resume",
                    task.id,
                    flight.path
                );
                continue;
            };
            task.recovering.insert(flight.path.clone());
            let tx = self.tx.clone();
            let (id, path) = (task.id.clone(), flight.path.clone());
            client.result_of(
                goal_id,
                self.server_wait,
                Box::new(move |event| {
                    let (outcome, reason) = match event {
                        LeafEvent::Done { success, message } => (Some(success), message),
                        LeafEvent::Refused(reason) => (None, reason),
                        _ => return,
                    };
                    let _ = tx.send(Event::Recovered {
                        task: id.clone(),
                        path: path.clone(),
                        outcome,
                        reason,
                    });
                }),
            );
        }
    }

    /// An action of a restored task whose goal was out: completed if its actuator says it succeeded (it never
    /// runs again), else it runs again on resume.
    pub(crate) fn recovered(&mut self, id: &str, path: &str, outcome: Option<bool>, reason: &str) {
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        if !task.recovering.remove(path) || task.state != State::Restored {
            return;
        }
        match outcome {
            Some(true) => {
                let mut completed = task.sched.completed_leaves();
                completed.push(path.to_owned());
                match Scheduler::restore(task.sched.tree().clone(), &completed) {
                    Ok(sched) => {
                        task.sched = sched;
                        task.leaves_executed += 1;
                        self.unsaved = true;
                        r2r::log_info!(
                            &self.logger,
                            "{id}: {path} succeeded while the manager was down: completed, it does not run again"
                        );
                        if task.sched.outcome().is_some() {
                            // That was its last action: the task is over.
                            task.state = State::Running;
                            self.apply(id, vec![Output::Finished(Outcome::Completed)]);
                        }
                    }
                    Err(e) => r2r::log_error!(&self.logger, "{id}: {path}: {e}"),
                }
            }
            Some(false) => r2r::log_info!(
                &self.logger,
                "{id}: {path} did not succeed while the manager was down ({reason}): it runs again on resume"
            ),
            None => r2r::log_warn!(
                &self.logger,
                "{id}: how {path} ended is unknown ({reason}): it runs again on resume"
            ),
        }
    }
}
