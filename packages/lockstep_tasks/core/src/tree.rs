//! Eager decomposition (before any scheduling): a task becomes a tree of subtasks, level by
//! level down to the actuator actions, kept in one list per level. Any template error rejects the task with
//! the key path, before anything is dispatched. Status changes go through [`Tree::set_status`], which enforces
//! the transition table and "a parent is never completed while a child is not".
//!
//! Fallbacks are decomposed with the task too, so a broken one rejects the task before anything runs. Until one
//! takes over, it is on standby: in [`Tree::nodes`] (its path `<replaced path>~fallback`), in no level's list
//! and in no parent's children. [`Tree::activate_fallback`] puts it in the slot of the subtask it replaces.

use crate::config::recovery::fallback_of;
use crate::config::{Attribute, Child, Config, Retry, MAX_FALLBACK_CHAIN};
use crate::params::{self, ParamError, Params};
use crate::status::{EndReason, Status};

/// Index of a subtask in [`Tree::nodes`].
pub type Id = usize;

/// One subtask.
#[derive(Debug, Clone, PartialEq)]
pub struct Subtask {
    /// `task/duty[0]/message[1]/action[0]`: level names and the index among siblings.
    pub path: String,
    pub level: usize,
    pub template: String,
    pub parent: Option<Id>,
    pub children: Vec<Id>,
    /// Its children run at the same time.
    pub parallel: bool,
    pub params: Params,
    /// The template's attributes, then those of the entry that made it; run-time ones are appended.
    pub attributes: Vec<Attribute>,
    /// At the last level: the actuator it drives.
    pub actuator: Option<String>,
    pub status: Status,
    /// Tries again after a failure (its entry's `retry`, else its template's).
    pub retry: Option<Retry>,
    /// Fails once it has run this long in one attempt [s] (its entry's `timeout_s`, else its template's).
    pub timeout_s: Option<f64>,
    /// The standby subtask that runs in its place once it has failed for good.
    pub fallback: Option<Id>,
    /// A fallback (or a subtask under one) that has not taken over: it is in no level's list and in no
    /// parent's children, and is never dispatched; it stays sendable when the task ends.
    pub standby: bool,
}

/// A decomposed task.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub nodes: Vec<Subtask>,
    /// The subtasks of each level that are part of the task, in decomposition order (one list per level).
    /// Standby fallbacks are not; one that takes over joins its levels right after the subtask it replaces
    /// (which stays, ended).
    pub levels: Vec<Vec<Id>>,
}

/// Why a task cannot be decomposed: the configuration key (or goal parameter) at fault and the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{key}: {source}")]
pub struct DecomposeError {
    pub key: String,
    #[source]
    pub source: ParamError,
}

/// A refused status change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TransitionError {
    #[error("{path}: {from} -> {to} is not an allowed transition")]
    NotAllowed { path: String, from: String, to: String },
    #[error("{path}: cannot complete while {child} is {status}")]
    ChildNotCompleted {
        path: String,
        child: String,
        status: String,
    },
}

/// A subtask to add: its template, where it goes, and the entry (child or fallback) that made it.
struct Made<'a> {
    template: &'a str,
    parent: Option<Id>,
    path: String,
    entry: Option<&'a Child>,
    /// The entry's key path, for errors.
    entry_key: String,
    standby: bool,
    /// Fallbacks in a row before this one.
    chain: usize,
}

/// The parameters of the subtask `made`: the template's own values, then the entry's (both templated from
/// what the parent has), merged with `inherited` by the configured rules.
fn merged_params(config: &Config, made: &Made<'_>, inherited: &Params) -> Result<Params, DecomposeError> {
    let template = &config.templates[made.template];
    let key = format!("templates.{}", made.template);
    let at = |key: String| move |source: ParamError| DecomposeError { key, source };
    let mut own = Params::new();
    for (name, value) in &template.parameters {
        let v = params::substitute(value, inherited).map_err(at(format!("{key}.parameters.{name}")))?;
        own.insert(name.clone(), v);
    }
    for (name, value) in made.entry.map(|e| &e.parameters).into_iter().flatten() {
        let v = params::substitute(value, inherited)
            .map_err(at(format!("{}.parameters.{name}", made.entry_key)))?;
        own.insert(name.clone(), v);
    }
    params::derive(inherited, &own, |n| config.merge_of(n)).map_err(at(format!("{key}.parameters")))
}

/// One status change, as published.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub id: Id,
    pub path: String,
    pub old: Status,
    pub new: Status,
}

impl Tree {
    /// Decompose a task of type `task_type` with the goal's `goal` parameters.
    pub fn decompose(config: &Config, task_type: &str, goal: &Params) -> Result<Self, DecomposeError> {
        let unknown = || DecomposeError {
            key: "task_type".into(),
            source: ParamError::NotATaskType {
                name: task_type.to_owned(),
                available: config.task_types().join(", "),
            },
        };
        let template = config.templates.get(task_type).ok_or_else(unknown)?;
        if template.level != config.levels[0] {
            return Err(unknown());
        }
        for name in &template.required {
            if !goal.contains_key(name) {
                return Err(DecomposeError {
                    key: format!("goal.parameters.{name}"),
                    source: ParamError::Missing {
                        name: name.clone(),
                        template: task_type.to_owned(),
                        required: template.required.join(", "),
                    },
                });
            }
        }
        let mut tree = Tree {
            nodes: Vec::new(),
            levels: vec![Vec::new(); config.levels.len()],
        };
        let root = Made {
            template: task_type,
            parent: None,
            path: config.levels[0].clone(),
            entry: None,
            entry_key: String::new(),
            standby: false,
            chain: 0,
        };
        tree.add(config, root, goal)?;
        Ok(tree)
    }

    /// Add the subtask `made` with what it inherits, and (recursively) its children and its fallback.
    fn add(&mut self, config: &Config, made: Made<'_>, inherited: &Params) -> Result<Id, DecomposeError> {
        let template = &config.templates[made.template];
        let merged = merged_params(config, &made, inherited)?;
        let level = config.level_index(&template.level).unwrap_or_default();
        let id = self.nodes.len();
        let entry = made.entry;
        let mut attributes = template.attributes.clone();
        attributes.extend_from_slice(entry.map(|e| e.attributes.as_slice()).unwrap_or_default());
        self.nodes.push(Subtask {
            path: made.path.clone(),
            level,
            template: made.template.to_owned(),
            parent: made.parent,
            children: Vec::new(),
            parallel: template.parallel,
            params: merged.clone(),
            attributes,
            actuator: template.actuator.clone(),
            status: Status::Sendable,
            retry: entry.and_then(|e| e.retry).or(template.retry),
            timeout_s: entry.and_then(|e| e.timeout_s).or(template.timeout_s),
            fallback: None,
            standby: made.standby,
        });
        if !made.standby {
            self.levels[level].push(id);
        }
        self.add_children(config, &made, id, level, &merged)?;
        self.add_fallback(config, &made, id, inherited)?;
        Ok(id)
    }

    /// The children of subtask `id` (at `level`, made from `made`), each inheriting `merged`.
    fn add_children(
        &mut self,
        config: &Config,
        made: &Made<'_>,
        id: Id,
        level: usize,
        merged: &Params,
    ) -> Result<(), DecomposeError> {
        let template = &config.templates[made.template];
        let path = &made.path;
        for (i, child) in template.children.iter().enumerate() {
            let child_level = &config.levels[level + 1];
            let child_made = Made {
                template: &child.template,
                parent: Some(id),
                path: format!("{path}/{child_level}[{i}]"),
                entry: Some(child),
                entry_key: format!("templates.{}.children[{i}]", made.template),
                standby: made.standby,
                chain: 0,
            };
            let child_id = self.add(config, child_made, merged)?;
            self.nodes[id].children.push(child_id);
        }
        Ok(())
    }

    /// What runs in the place of subtask `id` if it fails: with the same parent and what it inherits. Not
    /// for the task itself; a configuration that was not checked cannot make an endless chain.
    fn add_fallback(
        &mut self,
        config: &Config,
        made: &Made<'_>,
        id: Id,
        inherited: &Params,
    ) -> Result<(), DecomposeError> {
        let entry = made.entry;
        let fallback = entry
            .and_then(|e| fallback_of(config, e))
            .filter(|_| made.chain < MAX_FALLBACK_CHAIN);
        if let (Some(fallback), Some(entry)) = (fallback, entry.filter(|_| made.parent.is_some())) {
            let fallback_made = Made {
                template: &fallback.template,
                parent: made.parent,
                path: format!("{}~fallback", made.path),
                entry: Some(fallback),
                entry_key: match entry.fallback {
                    Some(_) => format!("{}.fallback", made.entry_key),
                    None => format!("templates.{}.fallback", entry.template),
                },
                standby: true,
                chain: made.chain + 1,
            };
            let fallback_id = self.add(config, fallback_made, inherited)?;
            self.nodes[id].fallback = Some(fallback_id);
        }
        Ok(())
    }

    /// The root (the task itself).
    pub fn root(&self) -> &Subtask {
        &self.nodes[0]
    }

    /// The subtask at `path`.
    pub fn find(&self, path: &str) -> Option<Id> {
        self.nodes.iter().position(|n| n.path == path)
    }

    /// The leaves (actuator actions) in decomposition order: those of the task, not those of standby
    /// fallbacks; a fallback's leaves once it has taken over (right after the leaves of the subtask it
    /// replaced).
    pub fn leaves(&self) -> impl Iterator<Item = Id> + '_ {
        self.levels.last().into_iter().flatten().copied()
    }

    /// Change `id`'s status, if the table allows it and, for `completed`, every child is completed.
    pub fn set_status(&mut self, id: Id, to: Status) -> Result<Change, TransitionError> {
        let node = &self.nodes[id];
        if !node.status.allows(&to) {
            return Err(TransitionError::NotAllowed {
                path: node.path.clone(),
                from: node.status.to_string(),
                to: to.to_string(),
            });
        }
        if to == Status::Completed {
            if let Some(&child) = node
                .children
                .iter()
                .find(|&&c| self.nodes[c].status != Status::Completed)
            {
                return Err(TransitionError::ChildNotCompleted {
                    path: node.path.clone(),
                    child: self.nodes[child].path.clone(),
                    status: self.nodes[child].status.to_string(),
                });
            }
        }
        let old = std::mem::replace(&mut self.nodes[id].status, to.clone());
        Ok(Change {
            id,
            path: self.nodes[id].path.clone(),
            old,
            new: to,
        })
    }
}

impl Tree {
    /// Whether `id` is `ancestor` or under it (through the parents: also under a subtask it replaced).
    pub fn is_under(&self, id: Id, ancestor: Id) -> bool {
        let mut at = Some(id);
        while let Some(n) = at {
            if n == ancestor {
                return true;
            }
            at = self.nodes.get(n).and_then(|node| node.parent);
        }
        false
    }

    /// `id` and every subtask under it through the children, parents before children.
    pub fn subtree(&self, id: Id) -> Vec<Id> {
        let mut all = vec![id];
        let mut i = 0;
        while i < all.len() {
            all.extend_from_slice(&self.nodes[all[i]].children);
            i += 1;
        }
        all
    }

    /// `id`'s standby fallback takes over: it goes in `id`'s slot among its parent's children, and it and the
    /// subtasks under it join their levels right after `id`'s own (`id` stays in its level, with its status:
    /// the caller ends it). `None` when `id` has no fallback, or it has taken over already. No status changes.
    pub fn activate_fallback(&mut self, id: Id) -> Option<Id> {
        let fallback = self.nodes.get(id)?.fallback?;
        let parent = self.nodes[id].parent?;
        if !self.nodes[fallback].standby {
            return None;
        }
        let slot = self.nodes[parent].children.iter().position(|&c| c == id)?;
        self.nodes[parent].children[slot] = fallback;
        let mut joining = self.subtree(fallback);
        // Decomposition order: a subtask was added before the ones under it, and siblings in order.
        joining.sort_unstable();
        for &n in &joining {
            self.nodes[n].standby = false;
        }
        for level in 0..self.levels.len() {
            let new: Vec<Id> = joining
                .iter()
                .copied()
                .filter(|&n| self.nodes[n].level == level)
                .collect();
            if new.is_empty() {
                continue;
            }
            let list = &self.levels[level];
            let at = (list.iter())
                .rposition(|&n| self.is_under(n, id))
                .map_or(list.len(), |i| i + 1);
            self.levels[level].splice(at..at, new);
        }
        Some(fallback)
    }

    /// Rebuild the statuses of a task from what had completed before the manager restarted: statuses are set
    /// directly, as a state and not as transitions (no [`Change`]s). Every subtask becomes sendable; each
    /// leaf of `completed` completed; a standby fallback holding one of them takes over from the subtask it
    /// replaces, which ends failed (what had not completed under it, forced); then every group all of whose
    /// children are completed, completed. The statuses keep "a parent is never completed while a child is
    /// not". `completed` should hold leaves of this tree (others are ignored).
    pub fn restore(&mut self, completed: &[Id]) {
        for node in &mut self.nodes {
            node.status = Status::Sendable;
        }
        let completed: Vec<Id> = (completed.iter().copied())
            .filter(|&id| id < self.nodes.len() && self.nodes[id].children.is_empty())
            .collect();
        let mut replaced = Vec::new();
        for &leaf in &completed {
            self.take_over_for(leaf, &mut replaced);
        }
        for &leaf in &completed {
            self.nodes[leaf].status = Status::Completed;
        }
        for &gone in &replaced {
            for n in 0..self.nodes.len() {
                if self.nodes[n].status == Status::Sendable
                    && !self.nodes[n].standby
                    && self.is_under(n, gone)
                {
                    self.nodes[n].status = Status::Ended(EndReason::Forced);
                }
            }
            self.nodes[gone].status = Status::Ended(EndReason::Failed);
        }
        for level in (0..self.levels.len()).rev() {
            for i in 0..self.levels[level].len() {
                let id = self.levels[level][i];
                let node = &self.nodes[id];
                let done = !node.children.is_empty()
                    && node.status == Status::Sendable
                    && (node.children.iter()).all(|&c| self.nodes[c].status == Status::Completed);
                if done {
                    self.nodes[id].status = Status::Completed;
                }
            }
        }
    }

    /// Make standby `id` part of the task: the fallbacks it is in take over (outermost first); the subtasks
    /// they replace are added to `replaced`.
    fn take_over_for(&mut self, id: Id, replaced: &mut Vec<Id>) {
        if !self.nodes[id].standby {
            return;
        }
        match self.nodes.iter().position(|n| n.fallback == Some(id)) {
            Some(owner) => {
                self.take_over_for(owner, replaced);
                if self.activate_fallback(owner).is_some() {
                    replaced.push(owner);
                }
            }
            None => {
                if let Some(parent) = self.nodes[id].parent {
                    self.take_over_for(parent, replaced);
                }
            }
        }
    }
}
