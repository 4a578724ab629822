//! The configuration's data: levels, merge rules, actuators and templates with their children, as read from
//! the YAML file, and the accessors the checks and the decomposition use. Reading and checking a file is
//! `config.rs`; the recovery keys' checks are `recovery.rs`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// The longest chain of fallbacks (a fallback's fallback's ...) a subtask may have.
pub const MAX_FALLBACK_CHAIN: usize = 8;

/// The most subtasks one task may decompose into, the fallbacks included.
pub const MAX_SUBTASKS: usize = 100_000;

/// Try a failed subtask again: `attempts` more times at most, each `backoff_s` after the failure.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// Tries after the first failure (not counting the first): `attempts: 2` runs the subtask 3 times at most.
    pub attempts: u32,
    /// Seconds between the failure and the next try (default 0).
    #[serde(default)]
    pub backoff_s: f64,
}

/// A configuration that cannot be used, and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}{}: {key}: {reason}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    pub file: String,
    /// 1-based line, when the YAML parser knows it.
    pub line: Option<usize>,
    /// Path of the key at fault, e.g. `templates.leg.children[0].type` (`.` for the whole file).
    pub key: String,
    pub reason: String,
}

/// How a child's value for a parameter meets the value it inherits from its parent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Merge {
    /// The smaller number (a limit: speed = min(task 1.0, map 0.8)).
    Min,
    /// The larger number.
    Max,
    /// The parent's value stands.
    Parent,
    /// The child's value replaces it.
    #[default]
    Child,
    /// Both are [lo, hi] ranges: their intersection; an empty one is an error.
    Intersect,
}

/// What holds a subtask back or stops it: condition-triggered, delayed, interrupt.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Attribute {
    /// Dispatched no earlier than `secs` after it became sendable; "delayed" meanwhile.
    Delay { secs: f64 },
    /// Dispatched only once this Datalog query (over facts from topics) holds.
    Condition { query: String },
    /// Not dispatched: the subtask is interrupted with `reason`, reported up every level.
    Interrupt { reason: String },
}

/// One child of a template: its template, and parameter values (templated from the parent's). A `fallback`
/// entry has the same form: the subtree that runs in place of a subtask that failed for good.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Child {
    #[serde(rename = "type")]
    pub template: String,
    #[serde(default)]
    pub parameters: BTreeMap<String, Value>,
    #[serde(default)]
    pub attributes: Vec<Attribute>,
    /// Tries again after a failure; replaces the template's `retry`.
    #[serde(default)]
    pub retry: Option<Retry>,
    /// Fails the subtask once it has run this long [s]; replaces the template's `timeout_s`.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Runs in its place once it has failed for good; replaces the template's `fallback`.
    #[serde(default)]
    pub fallback: Option<Box<Child>>,
}

/// How a subtask of one type decomposes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    /// The level this template's subtasks are at.
    pub level: String,
    /// Its own parameter values (templated from the parent's); merged with what it inherits.
    #[serde(default)]
    pub parameters: BTreeMap<String, Value>,
    /// At the first level: parameters the ExecuteTask goal must give.
    #[serde(default)]
    pub required: Vec<String>,
    /// Subtasks at the next level, in order.
    #[serde(default)]
    pub children: Vec<Child>,
    /// Children run at the same time instead of one after the other.
    #[serde(default)]
    pub parallel: bool,
    #[serde(default)]
    pub attributes: Vec<Attribute>,
    /// At the last level: the actuator it drives (a key of `actuators`).
    #[serde(default)]
    pub actuator: Option<String>,
    /// Every subtask of this type tries again after a failure (a child entry's `retry` replaces it).
    #[serde(default)]
    pub retry: Option<Retry>,
    /// Every subtask of this type fails once it has run this long [s] (a child entry's replaces it).
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Runs in place of a subtask of this type that failed for good (a child entry's replaces it). Not on
    /// task types: a task has no parent to run it in.
    #[serde(default)]
    pub fallback: Option<Box<Child>>,
}

/// One actuator kind: its action server, and how parameters fill the goal.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Actuator {
    pub server: String,
    #[serde(rename = "type")]
    pub action_type: String,
    /// Goal field -> parameter name.
    #[serde(default)]
    pub goal: BTreeMap<String, String>,
    /// While this condition (a Datalog rule body over the environment's facts, e.g. `obstacle(_)`) holds,
    /// the actuator is blocked: its running action is interrupted (reason `blocked: <condition>`, reported up
    /// every level) and no action goes to it; the task resumes by itself once the condition no longer holds.
    #[serde(default)]
    pub blocked_by: Option<String>,
    /// The actuator pauses a goal along its path (an arm stopping within its joint limits) through these
    /// services instead of having it cancelled when the task pauses; see [`crate::Conditions::pausable`].
    #[serde(default)]
    pub pause: Option<PauseServices>,
}

/// The services that pause and resume an actuator's goal (relative names resolve like its server's).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseServices {
    pub pause: String,
    pub resume: String,
}

fn default_levels() -> Vec<String> {
    ["task", "duty", "message", "action"].map(String::from).to_vec()
}

/// A checked configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_levels")]
    pub levels: Vec<String>,
    #[serde(default)]
    pub parameters: BTreeMap<String, Merge>,
    #[serde(default)]
    pub actuators: BTreeMap<String, Actuator>,
    pub templates: BTreeMap<String, Template>,
}

impl Config {
    /// The level index of `name`.
    pub fn level_index(&self, name: &str) -> Option<usize> {
        self.levels.iter().position(|l| l == name)
    }

    /// The task types: the templates at the first level, sorted.
    pub fn task_types(&self) -> Vec<&str> {
        self.templates
            .iter()
            .filter(|(_, t)| t.level == self.levels[0])
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// The merge rule of parameter `name` (default: the child's value).
    pub fn merge_of(&self, name: &str) -> Merge {
        self.parameters.get(name).copied().unwrap_or_default()
    }
}

pub(crate) fn check_attributes(attributes: &[Attribute], key: &str) -> Result<(), (String, String)> {
    for (i, a) in attributes.iter().enumerate() {
        match a {
            Attribute::Delay { secs } if !(secs.is_finite() && *secs >= 0.0) => {
                return Err((
                    format!("{key}[{i}].secs"),
                    format!("{secs}: must be a finite number >= 0"),
                ));
            }
            Attribute::Condition { query } if query.trim().is_empty() => {
                return Err((format!("{key}[{i}].query"), "is empty".into()));
            }
            _ => {}
        }
    }
    Ok(())
}
