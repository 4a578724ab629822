//! Pause and resume. Pause stops at the leaf boundary: each live goal is cancelled, or paused where it is
//! when its actuator is pausable (an arm stopping along its path), and the live leaves with everything above
//! them go interrupted. Resume makes every interrupted subtask sendable again (dispatched at the next step);
//! a paused goal goes on ([`Output::ResumeGoal`]) with its leaf and the subtasks above it running again at
//! once, and a result that came for it while paused is applied then.

use super::{Conditions, Held, Output, Refused, Scheduler};
use crate::status::Status;
use crate::tree::Id;

/// No actuator pauses: every goal is cancelled.
fn none_pausable(_: &str) -> bool {
    true
}

impl Scheduler {
    /// Pause at the leaf boundary: live goals are cancelled and their leaves, with everything above them,
    /// interrupted for `reason`. Nothing is dispatched until [`Self::resume`].
    pub fn pause(&mut self, reason: &str) -> Result<Vec<Output>, Refused> {
        self.pause_with(reason, &none_pausable)
    }

    /// As [`Self::pause`], except that the goal of a live leaf whose actuator is pausable (per
    /// `conditions`) is paused ([`Output::PauseGoal`]) instead of cancelled: it stays out, its leaf goes
    /// interrupted like the others, and [`Self::resume`] goes on with it.
    pub fn pause_with(&mut self, reason: &str, conditions: &dyn Conditions) -> Result<Vec<Output>, Refused> {
        if self.outcome.is_some() {
            return Err(Refused::Over);
        }
        let mut out = Vec::new();
        self.paused = true;
        let pausable: Vec<Id> = (self.live.iter().copied())
            .filter(|l| !self.held.contains_key(l))
            .filter(|&l| (self.tree.nodes[l].actuator.as_deref()).is_some_and(|a| conditions.pausable(a)))
            .collect();
        for leaf in pausable {
            out.push(Output::PauseGoal {
                leaf,
                path: self.tree.nodes[leaf].path.clone(),
            });
            self.held.insert(leaf, Held::Paused);
        }
        // From the first live leaf still running: its branch up to the root, then every other live leaf.
        let first = (self.live.iter().copied()).find(|&l| self.tree.nodes[l].status == Status::Running);
        if let Some(first) = first {
            self.interrupt_branch(first, reason, &mut out);
        }
        Ok(out)
    }

    /// Resume: every interrupted subtask is sendable again and scheduling goes on (at the next step).
    /// Completed leaves stay completed; an interrupted leaf is sent again, except a paused one, which goes on
    /// (its leaf and the subtasks above it running again now) or takes the result that came meanwhile.
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
        let held = std::mem::take(&mut self.held);
        for &leaf in held.keys() {
            let mut branch = vec![leaf];
            while let Some(parent) = self.tree.nodes[branch[branch.len() - 1]].parent {
                branch.push(parent);
            }
            for &n in branch.iter().rev() {
                if self.tree.nodes[n].status == Status::Sendable {
                    self.set(n, Status::Running, &mut out);
                }
            }
        }
        for (&leaf, what) in &held {
            if *what == Held::Paused && self.live.contains(&leaf) {
                out.push(Output::ResumeGoal {
                    leaf,
                    path: self.tree.nodes[leaf].path.clone(),
                });
            }
        }
        for (&leaf, what) in &held {
            if *what == Held::Succeeded && self.outcome.is_none() {
                self.complete_leaf(leaf, &mut out);
            }
        }
        for (leaf, what) in held {
            if let Held::Failed(reason) = what {
                if self.outcome.is_none() && self.tree.nodes[leaf].status == Status::Running {
                    self.fail(leaf, reason, &mut out);
                }
            }
        }
        Ok(out)
    }

    /// The caller cancelled `leaf`'s paused goal itself (its actuator could not pause it): the goal is no
    /// longer out, and the leaf is sent again after [`Self::resume`] like a cancelled one. Whether it was a
    /// paused goal.
    pub fn forget_live(&mut self, leaf: Id) -> bool {
        let paused = self.held.get(&leaf) == Some(&Held::Paused)
            && matches!(
                self.tree.nodes.get(leaf).map(|n| &n.status),
                Some(Status::Interrupted(_))
            );
        if paused {
            self.held.remove(&leaf);
            self.live.remove(&leaf);
        }
        paused
    }
}
