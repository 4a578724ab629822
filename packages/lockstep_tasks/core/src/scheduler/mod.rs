//! Layered scheduling of one decomposed task, without I/O: the caller feeds events
//! (time, actuator outcomes, pause / resume / cancel, attributes) and carries out what comes back (goals to
//! send or cancel, reports to publish).
//!
//! - Top-down, level by level: a running subtask dispatches its children, one after the other (or all at
//!   once with `parallel`). A child is dispatched only when its attributes allow it:
//!   - `delay`: it is "delayed" until the delay has passed, once;
//!   - `condition`: it stays sendable until the query holds (the caller evaluates it);
//!   - `interrupt`: it becomes interrupted, and one report goes up per ancestor, leaf to root.
//! - A leaf's dispatch is a goal for its actuator. A leaf that succeeds is completed; a group whose subtasks
//!   are all completed completes its parent (one group-completion report each), up to the task.
//! - A failure (a leaf's goal failed, or a subtask ran past its `timeout_s`) is taken by the nearest subtask
//!   from there up with a `retry` left, which runs again from where it failed, or with a `fallback`, which
//!   runs in its place; with neither, the task fails: the other live goals are cancelled and the rest ends
//!   as forced. See [`recovery`](self#recovery).
//! - Pause interrupts the live leaves (their goals are cancelled, or paused on a pausable actuator) and
//!   everything above them; resume makes every interrupted subtask sendable again. Completed leaves are never
//!   sent again.
//! - Cancel cancels every live goal, including one sent but not yet accepted, and ends everything.
//! - A task that ran before the manager restarted is rebuilt from its completed leaves
//!   ([`Scheduler::restore`]).
//!
//! # Recovery
//! - `retry: {attempts: N, backoff_s: S}`: the subtask may be tried N more times after its first failure,
//!   each try S seconds after the failure (from the first step after it). A try goes on from where it
//!   failed: the failed leaf and the subtasks above it up to the retried one go interrupted
//!   (`retry k/N: <reason>`) then sendable, the retried one delayed for S; actions already completed under
//!   it are not sent again. Other goals still out under it (parallel branches) are cancelled and sent
//!   again. Attempts are counted per subtask over the whole task: a group's retry does not give the
//!   subtasks under it new attempts.
//! - `timeout_s: T`: a subtask that has been running T seconds in one attempt (at a step at or after that)
//!   fails with "timed out after T s"; its live goals are cancelled first. The clock runs only while it is
//!   running: paused or interrupted time does not count (a resumed subtask keeps what it had used), and a
//!   retry starts it again from 0.
//! - `fallback`: once the subtask has failed for good (no retry left), it ends failed (what is left under it,
//!   forced) and the fallback, decomposed with the task, runs in its slot among its parent's children; a
//!   fallback that completes completes its parent as the subtask would have. A fallback has its own retry,
//!   timeout and fallback. Fallbacks that never run stay standby and sendable when the task ends (no status
//!   change is reported for them).
//! - The task fails only when nothing takes the failure; [`Outcome::Failed`] names the leaf (or the subtask
//!   that timed out) whose failure ended it, and its reason what was tried: `route blocked (after 3
//!   attempts)`, `<first reason>; fallback task/duty[0]/message[1]~fallback failed: <its reason>`.

mod io;
mod pause;
mod recovery;
mod restore;

use std::collections::{BTreeMap, BTreeSet};

use crate::config::Attribute;
use crate::status::{EndReason, Status};
use crate::tree::{Id, Tree};

pub use io::{Conditions, Outcome, Output, Refused, RestoreError};

/// One task being scheduled.
#[derive(Debug, Clone)]
pub struct Scheduler {
    tree: Tree,
    /// Delayed subtasks and when they may go (s).
    until: BTreeMap<Id, f64>,
    /// Attributes already applied, by subtask and index (a delay or an interrupt applies once).
    used: BTreeSet<(Id, usize)>,
    /// Leaves whose goal was sent and has not finished.
    live: BTreeSet<Id>,
    paused: bool,
    outcome: Option<Outcome>,
    /// Leaves in the order their goals were sent (a resumed leaf appears again).
    pub sent: Vec<Id>,
    /// Leaves whose goals are paused (pausable actuators), with what came back for them meanwhile.
    held: BTreeMap<Id, Held>,
    /// Retries used, per subtask.
    attempts: BTreeMap<Id, u32>,
    /// Running time in this attempt, per subtask with a timeout.
    clock: BTreeMap<Id, Clock>,
    /// Retry waits to start at the next step [s].
    backoff: BTreeMap<Id, f64>,
    /// Fallbacks that took over: what the subtask they replaced failed with.
    replaced: BTreeMap<Id, String>,
    /// The time of the latest step.
    now: f64,
    last_completed: Option<Id>,
}

/// A paused goal, and its result if it came while paused (applied on resume).
#[derive(Debug, Clone, PartialEq)]
enum Held {
    Paused,
    Succeeded,
    Failed(String),
}

/// Time running so far in this attempt: `spent`, plus since `since` if running now.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Clock {
    spent: f64,
    since: Option<f64>,
}

impl Scheduler {
    pub fn new(tree: Tree) -> Self {
        Self {
            tree,
            until: BTreeMap::new(),
            used: BTreeSet::new(),
            live: BTreeSet::new(),
            paused: false,
            outcome: None,
            sent: Vec::new(),
            held: BTreeMap::new(),
            attempts: BTreeMap::new(),
            clock: BTreeMap::new(),
            backoff: BTreeMap::new(),
            replaced: BTreeMap::new(),
            now: 0.0,
            last_completed: None,
        }
    }

    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Leaves with a goal out (paused ones included).
    pub fn live(&self) -> impl Iterator<Item = Id> + '_ {
        self.live.iter().copied()
    }

    /// Schedule at time `now_secs`: top-down, each level's running subtasks dispatch what may go.
    /// Subtasks running past their `timeout_s` fail first.
    pub fn step(&mut self, now_secs: f64, conditions: &dyn Conditions) -> Vec<Output> {
        let mut out = Vec::new();
        self.now = now_secs;
        // An interrupt reaches the root: while the task is interrupted nothing is dispatched.
        if self.paused
            || self.outcome.is_some()
            || matches!(self.tree.nodes[0].status, Status::Interrupted(_))
        {
            return out;
        }
        self.check_timeouts(now_secs, &mut out);
        if self.outcome.is_some() {
            return out;
        }
        for (id, secs) in std::mem::take(&mut self.backoff) {
            self.until.insert(id, now_secs + secs);
        }
        if matches!(self.tree.nodes[0].status, Status::Sendable | Status::Delayed) {
            self.consider(0, now_secs, conditions, &mut out);
        }
        // Only down a chain of running subtasks from the root: a running group under a parent that is not
        // running (delayed again after a resume, say) waits for it.
        let mut active = vec![false; self.tree.nodes.len()];
        for level in 0..self.tree.levels.len() {
            for i in 0..self.tree.levels[level].len() {
                let id = self.tree.levels[level][i];
                let parent_active = self.tree.nodes[id].parent.is_none_or(|p| active[p]);
                if !parent_active || self.tree.nodes[id].status != Status::Running || self.paused {
                    continue;
                }
                active[id] = true;
                for child in self.ready_children(id) {
                    self.consider(child, now_secs, conditions, &mut out);
                }
            }
        }
        out
    }

    /// The children of running `id` that may be dispatched now: the first unfinished one, or all with
    /// `parallel`; only those sendable or delayed.
    fn ready_children(&self, id: Id) -> Vec<Id> {
        let node = &self.tree.nodes[id];
        let waiting = |c: &Id| matches!(self.tree.nodes[*c].status, Status::Sendable | Status::Delayed);
        if node.parallel {
            node.children.iter().copied().filter(waiting).collect()
        } else {
            let first = node
                .children
                .iter()
                .copied()
                .find(|&c| self.tree.nodes[c].status != Status::Completed);
            first.filter(waiting).into_iter().collect()
        }
    }

    /// Dispatch `id` if its attributes allow it now.
    fn consider(&mut self, id: Id, now_secs: f64, conditions: &dyn Conditions, out: &mut Vec<Output>) {
        if self.tree.nodes[id].status == Status::Delayed {
            if self.until.get(&id).is_some_and(|t| now_secs < *t) {
                return;
            }
            self.until.remove(&id);
            self.set(id, Status::Sendable, out);
        }
        let attributes = self.tree.nodes[id].attributes.clone();
        for (k, attribute) in attributes.iter().enumerate() {
            if self.used.contains(&(id, k)) {
                continue;
            }
            match attribute {
                Attribute::Interrupt { reason } => {
                    self.used.insert((id, k));
                    self.interrupt_branch(id, reason, out);
                    return;
                }
                Attribute::Delay { secs } => {
                    self.used.insert((id, k));
                    self.until.insert(id, now_secs + secs);
                    self.set(id, Status::Delayed, out);
                    return;
                }
                Attribute::Condition { query } => {
                    if !conditions.holds(query) {
                        return;
                    }
                }
            }
        }
        if (self.tree.nodes[id].actuator.as_deref()).is_some_and(|a| !conditions.available(a)) {
            return;
        }
        let busy = (self.tree.nodes[id].actuator.as_deref())
            .and_then(|actuator| conditions.busy_secs(actuator))
            .filter(|secs| *secs > 0.0 && secs.is_finite());
        if let Some(secs) = busy {
            // An attribute from the environment, applied at once: the action waits out the busy time.
            let k = self.tree.nodes[id].attributes.len();
            self.tree.nodes[id].attributes.push(Attribute::Delay { secs });
            self.used.insert((id, k));
            self.until.insert(id, now_secs + secs);
            self.set(id, Status::Delayed, out);
            return;
        }
        self.set(id, Status::Running, out);
        let node = &self.tree.nodes[id];
        if let Some(actuator) = &node.actuator {
            out.push(Output::SendGoal {
                leaf: id,
                path: node.path.clone(),
                actuator: actuator.clone(),
                params: node.params.clone(),
            });
            self.live.insert(id);
            self.sent.push(id);
        }
    }

    /// A leaf's goal succeeded: complete it and every group it completes, up to the task. For a paused goal,
    /// on resume.
    pub fn leaf_succeeded(&mut self, leaf: Id) -> Vec<Output> {
        let mut out = Vec::new();
        if !self.live.remove(&leaf) {
            return out;
        }
        if let Some(held) = self.held.get_mut(&leaf) {
            *held = Held::Succeeded;
            return out;
        }
        self.complete_leaf(leaf, &mut out);
        out
    }

    /// Complete running `leaf` and every group it completes, up to the task.
    fn complete_leaf(&mut self, leaf: Id, out: &mut Vec<Output>) {
        self.set(leaf, Status::Completed, out);
        self.last_completed = Some(leaf);
        let mut child = leaf;
        while let Some(parent) = self.tree.nodes[child].parent {
            let done = self.tree.nodes[parent]
                .children
                .iter()
                .all(|&c| self.tree.nodes[c].status == Status::Completed);
            if !done {
                break;
            }
            out.push(Output::GroupCompleted {
                path: self.tree.nodes[parent].path.clone(),
                level: self.tree.nodes[parent].level,
            });
            self.set(parent, Status::Completed, out);
            child = parent;
        }
        if self.tree.nodes[0].status == Status::Completed {
            self.finish(Outcome::Completed, out);
        }
    }

    /// A leaf's goal failed (or was rejected): the nearest subtask from the leaf up with a retry left or a
    /// fallback takes it; with none, the task ends with the leaf's path. For a paused goal, on resume.
    pub fn leaf_failed(&mut self, leaf: Id, reason: &str) -> Vec<Output> {
        let mut out = Vec::new();
        if !self.live.remove(&leaf) {
            return out;
        }
        if let Some(held) = self.held.get_mut(&leaf) {
            *held = Held::Failed(reason.to_owned());
            return out;
        }
        self.fail(leaf, reason.to_owned(), &mut out);
        out
    }

    /// Cancel the task: every live goal is cancelled and everything unfinished ends as cancelled.
    pub fn cancel(&mut self) -> Result<Vec<Output>, Refused> {
        if self.outcome.is_some() {
            return Err(Refused::Over);
        }
        let mut out = Vec::new();
        self.cancel_live(&mut out);
        self.end_rest(EndReason::Cancelled, &mut out);
        self.finish(Outcome::Cancelled, &mut out);
        Ok(out)
    }

    /// Add an attribute at run time (an operator's AddAttribute, or the environment's). On a subtask not yet
    /// running it is checked at dispatch; on a running group, an interrupt interrupts it now, a delay holds
    /// its next child and a condition all its children not yet started.
    pub fn add_attribute(&mut self, path: &str, attribute: Attribute) -> Result<Vec<Output>, Refused> {
        if self.outcome.is_some() {
            return Err(Refused::Over);
        }
        let id = self
            .tree
            .find(path)
            .ok_or_else(|| Refused::UnknownPath(path.to_owned()))?;
        let node = &self.tree.nodes[id];
        if node.status.is_final() {
            return Err(Refused::Finished {
                path: path.to_owned(),
                status: node.status.to_string(),
            });
        }
        let mut out = Vec::new();
        if node.status != Status::Running {
            self.tree.nodes[id].attributes.push(attribute);
            return Ok(out);
        }
        let is_leaf = node.actuator.is_some();
        match attribute {
            Attribute::Interrupt { reason } => {
                // From a live leaf under it (one report per level from there), else from the group itself.
                let from = self
                    .tree
                    .subtree(id)
                    .into_iter()
                    .find(|l| self.live.contains(l))
                    .unwrap_or(id);
                self.interrupt_branch(from, &reason, &mut out);
            }
            _ if is_leaf => return Err(Refused::RunningLeaf(path.to_owned())),
            attribute @ Attribute::Delay { .. } => {
                if let Some(next) = self.not_started(id).first() {
                    self.tree.nodes[*next].attributes.push(attribute);
                }
            }
            attribute @ Attribute::Condition { .. } => {
                for child in self.not_started(id) {
                    self.tree.nodes[child].attributes.push(attribute.clone());
                }
            }
        }
        Ok(out)
    }

    /// Children of `id` still sendable or delayed, in order.
    fn not_started(&self, id: Id) -> Vec<Id> {
        self.tree.nodes[id]
            .children
            .iter()
            .copied()
            .filter(|&c| matches!(self.tree.nodes[c].status, Status::Sendable | Status::Delayed))
            .collect()
    }

    /// Interrupt `id` (cancelling its goal if it is a live leaf) and every ancestor not yet interrupted, one
    /// report per subtask from `id` up to the root; then every other live leaf (its goal cancelled).
    /// A paused goal stays out (paused).
    fn interrupt_branch(&mut self, id: Id, reason: &str, out: &mut Vec<Output>) {
        if !self.held.contains_key(&id) && self.live.remove(&id) {
            out.push(Output::CancelGoal {
                leaf: id,
                path: self.tree.nodes[id].path.clone(),
            });
        }
        let mut at = Some(id);
        while let Some(n) = at {
            let node = &self.tree.nodes[n];
            if !matches!(node.status, Status::Interrupted(_)) {
                self.set(n, Status::Interrupted(reason.to_owned()), out);
            }
            out.push(Output::Interrupted {
                path: self.tree.nodes[n].path.clone(),
                level: self.tree.nodes[n].level,
                reason: reason.to_owned(),
            });
            at = self.tree.nodes[n].parent;
        }
        // The task is interrupted up to its root: nothing of it may run on (a parallel branch's goal would
        // otherwise complete a group under an interrupted parent). Resume sends these again.
        let held: Vec<Id> = self.held.keys().copied().collect();
        for leaf in self.cancel_where(|_| true, false, out).into_iter().chain(held) {
            let status = &self.tree.nodes[leaf].status;
            if !status.is_final() && !matches!(status, Status::Interrupted(_)) {
                self.set(leaf, Status::Interrupted(reason.to_owned()), out);
            }
        }
    }

    /// Cancel every goal out, paused ones included; the leaves whose goals they were.
    fn cancel_live(&mut self, out: &mut Vec<Output>) -> BTreeSet<Id> {
        self.cancel_where(|_| true, true, out)
    }

    /// Cancel the goals out of the leaves `which` takes (paused ones only `with_held`); those leaves.
    fn cancel_where(
        &mut self,
        which: impl Fn(Id) -> bool,
        with_held: bool,
        out: &mut Vec<Output>,
    ) -> BTreeSet<Id> {
        let cancelled: BTreeSet<Id> = (self.live.iter().copied())
            .filter(|&l| which(l) && (with_held || !self.held.contains_key(&l)))
            .collect();
        for &leaf in &cancelled {
            self.live.remove(&leaf);
            self.held.remove(&leaf);
            out.push(Output::CancelGoal {
                leaf,
                path: self.tree.nodes[leaf].path.clone(),
            });
        }
        cancelled
    }

    /// End everything not yet final, leaves first so no parent ends before its subtasks.
    fn end_rest(&mut self, reason: EndReason, out: &mut Vec<Output>) {
        for level in (0..self.tree.levels.len()).rev() {
            for i in 0..self.tree.levels[level].len() {
                let id = self.tree.levels[level][i];
                if !self.tree.nodes[id].status.is_final() {
                    self.set(id, Status::Ended(reason), out);
                }
            }
        }
    }

    fn finish(&mut self, outcome: Outcome, out: &mut Vec<Output>) {
        self.outcome = Some(outcome.clone());
        out.push(Output::Finished(outcome));
    }

    /// A status change the scheduler makes; the table allows every one it asks for.
    fn set(&mut self, id: Id, to: Status, out: &mut Vec<Output>) {
        match self.tree.set_status(id, to) {
            Ok(change) => {
                if self.tree.nodes[id].timeout_s.is_some() {
                    let clock = self.clock.entry(id).or_default();
                    if let (Status::Running, Some(since)) = (&change.old, clock.since) {
                        clock.spent += self.now - since;
                        clock.since = None;
                    }
                    if change.new == Status::Running {
                        clock.since = Some(self.now);
                    }
                }
                out.push(Output::Status(change));
            }
            // A bug in this file, not the caller's input: loud in tests, ignored in a running node.
            Err(e) if cfg!(debug_assertions) => panic!("scheduler asked for a refused transition: {e}"),
            Err(_) => {}
        }
    }
}
