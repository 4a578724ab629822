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
//! - A failed leaf ends the task: the other live goals are cancelled and the rest ends as forced.
//! - Pause interrupts the live leaves (their goals are cancelled) and everything above them; resume makes
//!   every interrupted subtask sendable again. Completed leaves are never sent again.
//! - Cancel cancels every live goal, including one sent but not yet accepted, and ends everything.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::Attribute;
use crate::params::Params;
use crate::status::{EndReason, Status};
use crate::tree::{Change, Id, Tree};

/// What the caller must do or publish, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A status change (path, old, new; the reason is in the status).
    Status(Change),
    /// Send this leaf's goal to its actuator.
    SendGoal {
        leaf: Id,
        path: String,
        actuator: String,
        params: Params,
    },
    /// Cancel this leaf's goal (sent, whether or not accepted yet).
    CancelGoal { leaf: Id, path: String },
    /// Every subtask of the group under `path` completed (a report to the level above).
    GroupCompleted { path: String, level: usize },
    /// `path` (at `level`) is interrupted for `reason`: one per subtask from the interrupted one to the root.
    Interrupted {
        path: String,
        level: usize,
        reason: String,
    },
    /// The task is over.
    Finished(Outcome),
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Completed,
    Failed { path: String, reason: String },
    Cancelled,
}

/// What the environment says at dispatch time: `condition` attributes (a Datalog query over facts from topics,
/// evaluated in the node) and whether an actuator is busy.
pub trait Conditions {
    fn holds(&self, query: &str) -> bool;

    /// Seconds `actuator` stays busy (e.g. an arm in use), if it is: the action about to be sent to
    /// it gets a delay attribute of that length instead.
    fn busy_secs(&self, _actuator: &str) -> Option<f64> {
        None
    }

    /// Whether `actuator` may take a goal now. An action whose actuator may not stays sendable (no attribute,
    /// no status change) and is considered again at the next step: the node holds dispatch back while a
    /// goal it cancelled on that actuator has not ended yet.
    fn available(&self, _actuator: &str) -> bool {
        true
    }
}

impl<F: Fn(&str) -> bool> Conditions for F {
    fn holds(&self, query: &str) -> bool {
        self(query)
    }
}

/// Why an operator's request is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refused {
    #[error("no subtask `{0}` in this task")]
    UnknownPath(String),
    #[error("`{path}` is {status}: attributes apply to subtasks that have not finished")]
    Finished { path: String, status: String },
    #[error("`{0}` is an action already running: a delay or condition has nothing left to hold back (an interrupt does)")]
    RunningLeaf(String),
    #[error("the task is over")]
    Over,
    #[error("the task is not paused")]
    NotPaused,
}

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

    /// Leaves with a goal out.
    pub fn live(&self) -> impl Iterator<Item = Id> + '_ {
        self.live.iter().copied()
    }

    /// Schedule at time `now_secs`: top-down, each level's running subtasks dispatch what may go.
    pub fn step(&mut self, now_secs: f64, conditions: &dyn Conditions) -> Vec<Output> {
        let mut out = Vec::new();
        // An interrupt reaches the root: while the task is interrupted nothing is dispatched.
        if self.paused
            || self.outcome.is_some()
            || matches!(self.tree.nodes[0].status, Status::Interrupted(_))
        {
            return out;
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

    /// A leaf's goal succeeded: complete it and every group it completes, up to the task.
    pub fn leaf_succeeded(&mut self, leaf: Id) -> Vec<Output> {
        let mut out = Vec::new();
        if !self.live.remove(&leaf) {
            return out;
        }
        self.set(leaf, Status::Completed, &mut out);
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
            self.set(parent, Status::Completed, &mut out);
            child = parent;
        }
        if self.tree.nodes[0].status == Status::Completed {
            self.finish(Outcome::Completed, &mut out);
        }
        out
    }

    /// A leaf's goal failed (or was rejected): the task ends with the leaf's path.
    pub fn leaf_failed(&mut self, leaf: Id, reason: &str) -> Vec<Output> {
        let mut out = Vec::new();
        if !self.live.remove(&leaf) {
            return out;
        }
        self.set(leaf, Status::Ended(EndReason::Failed), &mut out);
        let mut up = self.tree.nodes[leaf].parent;
        while let Some(id) = up {
            self.set(id, Status::Ended(EndReason::Failed), &mut out);
            up = self.tree.nodes[id].parent;
        }
        self.cancel_live(&mut out);
        self.end_rest(EndReason::Forced, &mut out);
        let path = self.tree.nodes[leaf].path.clone();
        self.finish(
            Outcome::Failed {
                path,
                reason: reason.to_owned(),
            },
            &mut out,
        );
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

    /// Pause at the leaf boundary: live goals are cancelled and their leaves, with everything above them,
    /// interrupted for `reason`. Nothing is dispatched until [`Self::resume`].
    pub fn pause(&mut self, reason: &str) -> Result<Vec<Output>, Refused> {
        if self.outcome.is_some() {
            return Err(Refused::Over);
        }
        let mut out = Vec::new();
        self.paused = true;
        // From the first live leaf: its branch up to the root, then every other live leaf.
        if let Some(&first) = self.live.iter().next() {
            self.interrupt_branch(first, reason, &mut out);
        }
        Ok(out)
    }

    /// Resume: every interrupted subtask is sendable again and scheduling goes on (at the next step).
    /// Completed leaves stay completed; an interrupted leaf is sent again.
    pub fn resume(&mut self) -> Result<Vec<Output>, Refused> {
        if self.outcome.is_some() {
            return Err(Refused::Over);
        }
        let interrupted: Vec<Id> = (0..self.tree.nodes.len())
            .filter(|&id| matches!(self.tree.nodes[id].status, Status::Interrupted(_)))
            .collect();
        if !self.paused && interrupted.is_empty() {
            return Err(Refused::NotPaused);
        }
        self.paused = false;
        let mut out = Vec::new();
        for id in interrupted {
            self.set(id, Status::Sendable, &mut out);
        }
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

    /// `id` and everything under it.
    fn subtree(&self, id: Id) -> Vec<Id> {
        let mut all = vec![id];
        let mut i = 0;
        while i < all.len() {
            all.extend_from_slice(&self.tree.nodes[all[i]].children);
            i += 1;
        }
        all
    }

    /// Interrupt `id` (cancelling its goal if it is a live leaf) and every ancestor not yet interrupted, one
    /// report per subtask from `id` up to the root; then every other live leaf (its goal cancelled).
    fn interrupt_branch(&mut self, id: Id, reason: &str, out: &mut Vec<Output>) {
        if self.live.remove(&id) {
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
        for leaf in self.cancel_live(out) {
            self.set(leaf, Status::Interrupted(reason.to_owned()), out);
        }
    }

    /// Cancel every goal out; the leaves whose goals they were.
    fn cancel_live(&mut self, out: &mut Vec<Output>) -> BTreeSet<Id> {
        let live = std::mem::take(&mut self.live);
        for &leaf in &live {
            out.push(Output::CancelGoal {
                leaf,
                path: self.tree.nodes[leaf].path.clone(),
            });
        }
        live
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
            Ok(change) => out.push(Output::Status(change)),
            // A bug in this file, not the caller's input: loud in tests, ignored in a running node.
            Err(e) if cfg!(debug_assertions) => panic!("scheduler asked for a refused transition: {e}"),
            Err(_) => {}
        }
    }
}
