//! Carrying out what a scheduler asks for (task events, actuator goals, the task's end), and the operator's
//! requests: cancel, pause, resume, add an attribute.

use super::io::{Command, EventKind, Level, Setup, TaskEvent};
use super::task::{State, Task};
use super::Manager;
use crate::config::Attribute;
use crate::scheduler::{Output, Refused};
use crate::tree::Id;

/// The `task_events` message of a reporting output, logging retries and fallbacks; any other output back.
fn task_event<S>(task: &mut Task<S>, output: Output, out: &mut Vec<Command<S>>) -> Result<TaskEvent, Output> {
    let mut event = TaskEvent {
        task_id: task.id.clone(),
        robot: task.robot.clone(),
        ..Default::default()
    };
    match output {
        Output::Status(change) => {
            event.kind = EventKind::Status;
            event.level = task.sched.tree().nodes[change.id].level as u32;
            event.path = change.path;
            event.old_status = change.old.name().into();
            event.new_status = change.new.name().into();
            event.reason = change.new.reason().into();
        }
        Output::GroupCompleted { path, level } => {
            task.group_reports += 1;
            (event.kind, event.path, event.level) = (EventKind::GroupCompleted, path, level as u32);
        }
        Output::Interrupted { path, level, reason } => {
            (event.kind, event.path, event.level) = (EventKind::Interrupted, path, level as u32);
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
            (event.kind, event.path, event.level) = (EventKind::Retry, path, level as u32);
            event.reason = format!("attempt {attempt}/{attempts} in {after_s} s: {reason}");
            let line = format!("{}: {} {}", task.id, event.path, event.reason);
            out.push(Command::Log(Level::Info, line));
        }
        Output::TimedOut { path, level, after_s } => {
            (event.kind, event.path, event.level) = (EventKind::TimedOut, path, level as u32);
            event.reason = format!("timed out after {after_s} s");
        }
        Output::Fallback {
            path,
            level,
            fallback_path,
            reason,
        } => {
            (event.kind, event.path, event.level) = (EventKind::Fallback, path, level as u32);
            event.reason = format!("{fallback_path}: {reason}");
            let line = format!("{}: {} failed, fallback {}", task.id, event.path, event.reason);
            out.push(Command::Log(Level::Info, line));
        }
        other => return Err(other),
    }
    Ok(event)
}

impl<S: Setup> Manager<S> {
    /// Carry out what a scheduler asked for, in order.
    pub(crate) fn apply(&mut self, id: &str, outputs: Vec<Output>) {
        let mut follow_up = Vec::new();
        let mut finished = false;
        for output in outputs {
            let Some(task) = self.tasks.get_mut(id) else {
                return;
            };
            task.dirty = true;
            let output = match task_event(task, output, &mut self.out) {
                Ok(event) => {
                    self.out.push(Command::Publish(event));
                    continue;
                }
                Err(output) => output,
            };
            match output {
                Output::SendGoal {
                    leaf,
                    path,
                    actuator,
                    params,
                } => {
                    let robot = task.robot.clone();
                    let server = (self.env.server(&robot, &actuator))
                        .unwrap_or_default()
                        .to_owned();
                    if self.start_drive(id, &robot, leaf, &path, &actuator, &server, &params) {
                        continue;
                    }
                    let Some(task) = self.tasks.get_mut(id) else {
                        return;
                    };
                    let sent = Self::send_goal(task, leaf, &path, &actuator, &server, &params, &mut self.out);
                    if let Err(reason) = sent {
                        follow_up.extend(task.sched.leaf_failed(leaf, &reason));
                    }
                }
                Output::CancelGoal { leaf, .. } => {
                    Self::cancel_goal(task, leaf, &mut self.env, self.now, &mut self.out);
                    self.drive_ended(id, leaf);
                }
                Output::PauseGoal { leaf, .. } => Self::pause_goal(task, leaf, false, &mut self.out),
                Output::ResumeGoal { leaf, .. } => Self::pause_goal(task, leaf, true, &mut self.out),
                Output::Finished(outcome) => {
                    self.finish(id, outcome);
                    finished = true;
                }
                _ => {}
            }
        }
        if !follow_up.is_empty() {
            self.apply(id, follow_up);
        }
        if finished {
            self.prune();
        }
    }

    /// The task is over: its end goes on `task_events` before the result goes to its client.
    pub(crate) fn finish(&mut self, id: &str, outcome: crate::scheduler::Outcome) {
        if self.hold_for_charge(id, &outcome) {
            return;
        }
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        let result = task.result(&outcome, self.now);
        self.out.push(Command::Log(
            Level::Info,
            format!("{}: {}", task.id, result.summary),
        ));
        self.out.push(Command::Publish(TaskEvent {
            task_id: task.id.clone(),
            robot: task.robot.clone(),
            kind: EventKind::Finished,
            path: task.sched.tree().root().path.clone(),
            reason: State::Finished(outcome.clone()).name().into(),
            ..Default::default()
        }));
        if std::mem::take(&mut task.client) {
            self.out.push(Command::Finish {
                task: task.id.clone(),
                outcome: outcome.clone(),
                result,
            });
        }
        task.state = State::Finished(outcome);
        self.unsaved = true;
        self.next_end += 1;
        task.ended = self.next_end;
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
            task.blocked = None;
            let out = task.sched.resume().unwrap_or_default();
            self.log(Level::Info, format!("{id}: `{query}` no longer holds: resuming"));
            out
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
            let reason = format!("blocked: {query}");
            let out = (task.sched.add_attribute(&path, Attribute::Interrupt { reason })).unwrap_or_default();
            task.blocked = Some(query.clone());
            self.log(Level::Info, format!("{id}: {path} blocked while `{query}` holds"));
            out
        };
        self.apply(id, out);
    }

    pub(crate) fn cancel(&mut self, id: &str) {
        if self.cancel_charging(id) {
            return;
        }
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        if let Ok(out) = task.sched.cancel() {
            self.log(Level::Info, format!("{id}: cancel requested"));
            self.apply(id, out);
        }
    }

    /// The node could not accept the goal after all: the task is dropped unstarted (whatever it sent is
    /// cancelled, and nothing goes to a client).
    pub(crate) fn goal_lost(&mut self, id: &str) {
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        task.client = false;
        let out = task.sched.cancel().unwrap_or_default();
        self.apply(id, out);
        if let Some(task) = self.tasks.remove(id) {
            for (generation, server) in task.cancelled {
                self.orphans.insert((id.to_owned(), generation), server);
            }
        }
        self.unsaved = true;
    }

    pub(crate) fn pause(&mut self, id: &str, reason: &str) -> Result<String, String> {
        let task = self.task(id)?;
        if task.state != State::Running {
            return Err(format!(
                "{id} is {}: only a running task pauses",
                task.state.name()
            ));
        }
        let reason = if reason.is_empty() { "paused" } else { reason };
        let Some(task) = self.tasks.get_mut(id) else {
            return Err(format!("no task `{id}`"));
        };
        let env = self.env.for_robot(&task.robot, self.now);
        let out = (task.sched.pause_with(reason, &env)).map_err(|e| e.to_string())?;
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

    pub(crate) fn resume(&mut self, id: &str) -> Result<String, String> {
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
        let out = task.sched.resume().map_err(|e: Refused| e.to_string())?;
        task.state = State::Running;
        task.blocked = None;
        self.unsaved = true;
        self.apply(id, out);
        Ok(format!("{id} resumed"))
    }

    pub(crate) fn add_attribute(
        &mut self,
        id: &str,
        path: &str,
        attribute: Attribute,
    ) -> Result<String, String> {
        if let Attribute::Condition { query } = &attribute {
            // A syntax error quotes the query: shown clipped.
            super::environment::check_query(query).map_err(|e| self.echoed(&e))?;
            // Refused, not added, when its evaluation overruns rules_max_seconds: it would hold the task.
            (self.env.check_in_time(query))
                .map_err(|e| format!("condition `{}`: {e}", (self.echo)(query)))?;
        }
        let what = self.echoed(&format!("{attribute:?}"));
        let echo = self.echo;
        let task = self.task(id)?;
        let out = (task.sched.add_attribute(path, attribute))
            .map_err(|e| format!("{id}: {}", echo(&e.to_string())))?;
        self.apply(id, out);
        Ok(format!("{id} {path}: {what} added"))
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
    pub(crate) fn pause_failed(&mut self, id: &str, leaf: Id, reason: &str) {
        if !self.tasks.contains_key(id) {
            return;
        }
        self.log(
            Level::Warn,
            format!("{id}: {reason}; cancelling its goal instead"),
        );
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        if !task.goals.contains_key(&leaf) {
            return;
        }
        Self::cancel_goal(task, leaf, &mut self.env, self.now, &mut self.out);
        if task.sched.is_paused() {
            task.sched.forget_live(leaf);
            return;
        }
        // It did not resume: its action fails (a retry or fallback may take over).
        let out = task.sched.leaf_failed(leaf, reason);
        self.apply(id, out);
    }
}
