//! A task rebuilt after the manager restarted: from the paths of the leaves that had completed.

use super::io::RestoreError;
use super::Scheduler;
use crate::status::Status;
use crate::tree::Tree;

impl Scheduler {
    /// Rebuild a task that ran before the manager restarted: `tree` as decomposed again, and the paths of the
    /// leaves that had completed (from [`Self::completed_leaves`], kept across the restart). Those leaves are
    /// completed, so is every group all of whose children are; a fallback holding one of them has taken
    /// over (see [`Tree::restore`]); the rest is sendable. The task is paused: nothing runs until
    /// [`Self::resume`], and then only what had not completed is sent. Retry counts and timeout clocks start
    /// from zero; a task all of whose leaves had completed is over (completed).
    pub fn restore(mut tree: Tree, completed_leaves: &[String]) -> Result<Scheduler, RestoreError> {
        let mut ids = Vec::with_capacity(completed_leaves.len());
        for path in completed_leaves {
            let id = tree
                .find(path)
                .ok_or_else(|| RestoreError::UnknownPath(path.clone()))?;
            if tree.nodes[id].actuator.is_none() || !tree.nodes[id].children.is_empty() {
                return Err(RestoreError::NotALeaf(path.clone()));
            }
            ids.push(id);
        }
        tree.restore(&ids);
        let mut scheduler = Scheduler::new(tree);
        scheduler.paused = true;
        scheduler.last_completed = ids.last().copied();
        if scheduler.tree.nodes[0].status == Status::Completed {
            scheduler.outcome = Some(super::Outcome::Completed);
        }
        Ok(scheduler)
    }

    /// The paths of the completed leaves, in decomposition order: what a restarted manager needs to
    /// [`Self::restore`] the task.
    pub fn completed_leaves(&self) -> Vec<String> {
        (self.tree.leaves())
            .filter(|&id| self.tree.nodes[id].status == Status::Completed)
            .map(|id| self.tree.nodes[id].path.clone())
            .collect()
    }

    /// The path of the leaf that completed last (after [`Self::restore`]: the last one named).
    pub fn last_completed_leaf(&self) -> Option<String> {
        self.last_completed.map(|id| self.tree.nodes[id].path.clone())
    }
}
