//! Eager decomposition (before any scheduling): a task becomes a tree of subtasks, level by
//! level down to the actuator actions, kept in one list per level. Any template error rejects the task with
//! the key path, before anything is dispatched. Status changes go through [`Tree::set_status`], which enforces
//! the transition table and "a parent is never completed while a child is not".

use crate::config::{Attribute, Config};
use crate::params::{self, ParamError, Params};
use crate::status::Status;

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
}

/// A decomposed task.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub nodes: Vec<Subtask>,
    /// The subtasks of each level, in decomposition order (one list per level).
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
        tree.add(
            config,
            task_type,
            None,
            config.levels[0].clone(),
            goal,
            &Params::new(),
            &[],
            "",
        )?;
        Ok(tree)
    }

    /// Add a subtask of `template` under `parent` with what it inherits, its entry's values and attributes,
    /// and (recursively) its children.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        config: &Config,
        template_name: &str,
        parent: Option<Id>,
        path: String,
        inherited: &Params,
        entry: &Params,
        entry_attributes: &[Attribute],
        entry_key: &str,
    ) -> Result<Id, DecomposeError> {
        let template = &config.templates[template_name];
        let key = format!("templates.{template_name}");
        let at = |key: String| move |source: ParamError| DecomposeError { key, source };
        // The template's own values, then the entry's (both templated from what the parent has).
        let mut own = Params::new();
        for (name, value) in &template.parameters {
            let v = params::substitute(value, inherited).map_err(at(format!("{key}.parameters.{name}")))?;
            own.insert(name.clone(), v);
        }
        for (name, value) in entry {
            let v =
                params::substitute(value, inherited).map_err(at(format!("{entry_key}.parameters.{name}")))?;
            own.insert(name.clone(), v);
        }
        let merged = params::derive(inherited, &own, |n| config.merge_of(n))
            .map_err(at(format!("{key}.parameters")))?;
        let level = config.level_index(&template.level).unwrap_or_default();
        let id = self.nodes.len();
        let mut attributes = template.attributes.clone();
        attributes.extend_from_slice(entry_attributes);
        self.nodes.push(Subtask {
            path: path.clone(),
            level,
            template: template_name.to_owned(),
            parent,
            children: Vec::new(),
            parallel: template.parallel,
            params: merged.clone(),
            attributes,
            actuator: template.actuator.clone(),
            status: Status::Sendable,
        });
        self.levels[level].push(id);
        for (i, child) in template.children.iter().enumerate() {
            let child_level = &config.levels[level + 1];
            let child_path = format!("{path}/{child_level}[{i}]");
            let child_key = format!("{key}.children[{i}]");
            let child_id = self.add(
                config,
                &child.template,
                Some(id),
                child_path,
                &merged,
                &child.parameters,
                &child.attributes,
                &child_key,
            )?;
            self.nodes[id].children.push(child_id);
        }
        Ok(id)
    }

    /// The root (the task itself).
    pub fn root(&self) -> &Subtask {
        &self.nodes[0]
    }

    /// The subtask at `path`.
    pub fn find(&self, path: &str) -> Option<Id> {
        self.nodes.iter().position(|n| n.path == path)
    }

    /// The leaves (actuator actions) in decomposition order.
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
