//! Taking back the unfinished tasks of a state file after a restart, and learning how the actions whose
//! goals were out when the manager stopped ended.

use super::goals::decompose;
use super::io::{Command, EventKind, Level, Setup, TaskEvent};
use super::queue::NewTask;
use super::task::{State, Task};
use super::Manager;
use crate::journal::{self, TaskRecord};
use crate::params::Params;
use crate::scheduler::{Outcome, Output, Scheduler};

impl<S: Setup> Manager<S> {
    /// Take back the unfinished tasks of a state file: each is decomposed again, its completed actions
    /// marked completed, and it waits as interrupted for `resume_task`. A task that no longer decomposes
    /// (the configuration changed) is logged with its record and dropped.
    pub(crate) fn restore(&mut self, saved: journal::State) {
        self.next_seq = self.next_seq.max(saved.next_seq);
        for (name, station) in &saved.stations {
            if let Some(robot) = self.robots.get_mut(name) {
                robot.station = Some(station.clone());
            }
        }
        // What robots held on the floor stays held: a drive taken up again holds nothing twice.
        if !saved.held.is_empty() {
            let held = crate::traffic::Held { robots: saved.held };
            self.floor = self.new_floor(held);
        }
        for record in saved.tasks {
            self.restore_task(record);
        }
        self.unsaved = true;
    }

    fn restore_task(&mut self, record: TaskRecord) {
        let params: Params = record.parameters.clone().into_iter().collect();
        let restored = if self.robots.contains_key(&record.robot) {
            decompose(
                &*self.setup,
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
                let line = format!(
                    "state file: {} ({}) cannot be restored: {e}; dropped (its record was {})",
                    record.id,
                    record.task_type,
                    serde_json::to_string(&record).unwrap_or_default()
                );
                return self.log(Level::Error, line);
            }
        };
        let last = sched.last_completed_leaf().unwrap_or_default();
        let in_flight = if record.in_flight.is_empty() {
            String::new()
        } else {
            let paths: Vec<&str> = record.in_flight.iter().map(|f| f.path.as_str()).collect();
            format!("; running when the manager stopped: {}", paths.join(", "))
        };
        let line = format!(
            "{}: restored ({}, robot `{}`), {} of {} actions completed, last {last}{in_flight}; resume_task runs it on",
            record.id,
            record.task_type,
            record.robot,
            record.completed.len(),
            sched.tree().leaves().count()
        );
        self.log(Level::Info, line);
        let new = NewTask {
            id: record.id.clone(),
            seq: record.seq,
            task_type: record.task_type.clone(),
            parameters: params,
            priority: record.priority,
            robot: record.robot.clone(),
        };
        let mut task = self.make_task(new, sched, self.setup.clone());
        task.state = State::Restored;
        self.recover(&mut task, &record);
        self.out.push(Command::Publish(TaskEvent {
            task_id: record.id.clone(),
            kind: EventKind::Restored,
            path: task.sched.tree().root().path.clone(),
            reason: format!("interrupted: the manager restarted; last completed action: {last}{in_flight}"),
            robot: record.robot.clone(),
            ..Default::default()
        }));
        self.tasks.insert(record.id, task);
    }

    /// Ask the actuators how the goals that were out when the manager stopped ended; each answer comes back
    /// as [`super::Event::Recovered`]. A goal the actuator had not accepted (no id) is unknown at once.
    fn recover(&mut self, task: &mut Task<S>, record: &TaskRecord) {
        for flight in &record.in_flight {
            let known = task.setup.config().actuators.contains_key(&flight.actuator);
            let goal_id = journal::unhex(&flight.goal_id);
            let Some(goal_id) = goal_id.filter(|_| known) else {
                let line = format!(
                    "{}: {} had no accepted goal when the manager stopped: it runs again on resume",
                    task.id, flight.path
                );
                self.log(Level::Warn, line);
                continue;
            };
            task.recovering.insert(flight.path.clone());
            self.out.push(Command::AskResult {
                task: task.id.clone(),
                path: flight.path.clone(),
                robot: task.robot.clone(),
                actuator: flight.actuator.clone(),
                goal_id,
                setup: task.setup.clone(),
            });
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
        let line = match outcome {
            Some(true) => {
                let mut completed = task.sched.completed_leaves();
                completed.push(path.to_owned());
                match Scheduler::restore(task.sched.tree().clone(), &completed) {
                    Ok(sched) => {
                        task.sched = sched;
                        task.leaves_executed += 1;
                        self.unsaved = true;
                        let over = task.sched.outcome().is_some();
                        if over {
                            // That was its last action: the task is over.
                            task.state = State::Running;
                        }
                        self.log(Level::Info, format!(
                            "{id}: {path} succeeded while the manager was down: completed, it does not run again"
                        ));
                        if over {
                            self.apply(id, vec![Output::Finished(Outcome::Completed)]);
                        }
                        return;
                    }
                    Err(e) => (Level::Error, format!("{id}: {path}: {e}")),
                }
            }
            Some(false) => (
                Level::Info,
                format!(
                "{id}: {path} did not succeed while the manager was down ({reason}): it runs again on resume"
            ),
            ),
            None => (
                Level::Warn,
                format!("{id}: how {path} ended is unknown ({reason}): it runs again on resume"),
            ),
        };
        self.log(line.0, line.1);
    }
}
