//! The task configuration: levels, decomposition templates, parameter compatibility rules, attributes and the
//! actuator mapping, read from YAML. Every error names the file, the path of the key at fault and, where the
//! parser knows it, the line.
//!
//! ```yaml
//! levels: [task, duty, message, action]      # any number >= 2; this is the default
//! parameters:                                # how a child's value meets its parent's (default: child)
//!   speed: min                               # min | max | parent | child | intersect ([lo, hi] ranges)
//! actuators:
//!   navigation:
//!     server: /navigate                      # action server name
//!     type: lockstep_interfaces/action/Navigate
//!     goal: {route: route, speed_mps: speed} # goal field: parameter
//!     blocked_by: obstacle(_)                # optional: held back and interrupted while this holds
//!     pause: {pause: pause, resume: resume}  # optional: services that pause its goal along its path
//! templates:
//!   move_material:                           # a task type: a template at the first level
//!     level: task
//!     required: [from, to, speed]            # parameters the ExecuteTask goal must give
//!     children:
//!       - {type: transfer, parameters: {map: "{from}-{to}"}}
//!   transfer:
//!     level: duty
//!     parameters: {speed: 0.8}               # the area map's limit: speed = min(task, 0.8)
//!     children: [...]
//!   drive:
//!     level: action
//!     actuator: navigation                   # the last level drives one actuator
//!     attributes: [{kind: delay, secs: 1.5}]
//!     retry: {attempts: 2, backoff_s: 1.0}   # recovery, on a template or a child entry: see [`recovery`]
//!     timeout_s: 60
//!     fallback: {type: drive_around}
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

pub mod recovery;

pub use recovery::{Retry, MAX_FALLBACK_CHAIN, MAX_SUBTASKS};

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
    /// Read and check a configuration file.
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: file.clone(),
            line: None,
            key: ".".into(),
            reason: e.to_string(),
        })?;
        Self::parse(&file, &text)
    }

    /// Parse and check YAML text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Self, ConfigError> {
        let config: Config = crate::yaml::deserialize(text).map_err(|(line, key, reason)| ConfigError {
            file: file.to_owned(),
            line,
            key,
            reason,
        })?;
        config.check().map_err(|(key, reason)| ConfigError {
            file: file.to_owned(),
            line: line_of(text, &key),
            key,
            reason,
        })?;
        Ok(config)
    }

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

    /// What deserializing cannot check: (key path, reason) of the first problem.
    fn check(&self) -> Result<(), (String, String)> {
        if self.levels.len() < 2 {
            return Err((
                "levels".into(),
                "needs at least two levels (a task and its actions)".into(),
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, level) in self.levels.iter().enumerate() {
            if level.is_empty() || !seen.insert(level) {
                return Err((format!("levels[{i}]"), format!("`{level}` is empty or repeated")));
            }
        }
        let last = self.levels.len() - 1;
        for (name, actuator) in &self.actuators {
            if actuator.server.is_empty() {
                return Err((format!("actuators.{name}.server"), "is empty".into()));
            }
            if let Some(pause) = &actuator.pause {
                for (field, service) in [("pause", &pause.pause), ("resume", &pause.resume)] {
                    if service.is_empty() {
                        return Err((format!("actuators.{name}.pause.{field}"), "is empty".into()));
                    }
                }
            }
        }
        // Every template's level first: the checks of children rely on them.
        for (name, t) in &self.templates {
            if self.level_index(&t.level).is_none() {
                return Err((
                    format!("templates.{name}.level"),
                    format!(
                        "`{}` is not one of the levels [{}]",
                        t.level,
                        self.levels.join(", ")
                    ),
                ));
            }
        }
        for (name, t) in &self.templates {
            let key = format!("templates.{name}");
            let level = self.level_index(&t.level).unwrap_or_default();
            if level == last {
                let actuator = t.actuator.as_ref().ok_or_else(|| {
                    (
                        format!("{key}.actuator"),
                        format!(
                            "missing: `{}` is the last level, which drives an actuator",
                            t.level
                        ),
                    )
                })?;
                if !self.actuators.contains_key(actuator) {
                    return Err((
                        format!("{key}.actuator"),
                        format!(
                            "`{actuator}` is not one of the actuators [{}]",
                            keys(&self.actuators)
                        ),
                    ));
                }
                if !t.children.is_empty() {
                    return Err((
                        format!("{key}.children"),
                        format!("`{}` is the last level: no children", t.level),
                    ));
                }
            } else {
                if t.actuator.is_some() {
                    return Err((
                        format!("{key}.actuator"),
                        format!("only the last level (`{}`) drives actuators", self.levels[last]),
                    ));
                }
                if t.children.is_empty() {
                    return Err((
                        format!("{key}.children"),
                        format!(
                            "missing: a `{}` decomposes into `{}` subtasks",
                            t.level,
                            self.levels[level + 1]
                        ),
                    ));
                }
            }
            if level != 0 && !t.required.is_empty() {
                return Err((
                    format!("{key}.required"),
                    "only task types (the first level) take goal parameters".into(),
                ));
            }
            for (i, child) in t.children.iter().enumerate() {
                let child_key = format!("{key}.children[{i}].type");
                let Some(ct) = self.templates.get(&child.template) else {
                    return Err((child_key, format!("`{}` is not a template", child.template)));
                };
                if self.level_index(&ct.level) != Some(level + 1) {
                    return Err((
                        child_key,
                        format!(
                            "`{}` is at level `{}`; children of a `{}` must be at `{}`",
                            child.template,
                            ct.level,
                            t.level,
                            self.levels[level + 1]
                        ),
                    ));
                }
                check_attributes(&child.attributes, &format!("{key}.children[{i}].attributes"))?;
                recovery::check_entry(self, child, level + 1, &format!("{key}.children[{i}]"))?;
            }
            check_attributes(&t.attributes, &format!("{key}.attributes"))?;
            if level == 0 && t.fallback.is_some() {
                return Err((
                    format!("{key}.fallback"),
                    "a task type has no parent to run a fallback in: put it on its children".into(),
                ));
            }
            recovery::check_own(self, t, level, &key)?;
        }
        if self.task_types().is_empty() {
            return Err((
                "templates".into(),
                format!(
                    "no task type: no template at the first level `{}`",
                    self.levels[0]
                ),
            ));
        }
        recovery::check_sizes(self)
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

fn keys<V>(map: &BTreeMap<String, V>) -> String {
    map.keys().cloned().collect::<Vec<_>>().join(", ")
}

/// The line of the key at the end of `path` (`templates.leg.children[1].type`: after the line of `leg:`, the
/// line of `children:`, then its second `- ` item, then `type:`); the deepest found, `None` if none.
fn line_of(text: &str, path: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut from = 0;
    let mut found = None;
    for part in path.split('.') {
        let mut pieces = part.split('[');
        let name = pieces.next().unwrap_or(part);
        if name.is_empty() {
            continue;
        }
        // A key inside a flow map (`{kind: delay, secs: -1}`) has no line of its own: keep the last found.
        let Some(at) = (from..lines.len()).find(|&i| {
            let t = lines[i]
                .trim_start()
                .trim_start_matches("- ")
                .trim_start_matches('{');
            t.starts_with(&format!("{name}:"))
        }) else {
            break;
        };
        found = Some(at + 1);
        from = at + 1;
        for index in pieces {
            let k: usize = index.trim_end_matches(']').parse().ok()?;
            let depth = indent(lines[at]);
            // Block items ("- ") below the key; a flow list on the key's own line has no lines of its own.
            let items: Vec<usize> = (from..lines.len())
                .take_while(|&i| {
                    lines[i].trim().is_empty()
                        || indent(lines[i]) > depth
                        || lines[i].trim_start().starts_with("- ")
                })
                .filter(|&i| lines[i].trim_start().starts_with("- "))
                .collect();
            // Only the list's own items, not those of lists nested in them.
            let own = items.first().map(|&i| indent(lines[i]));
            let items: Vec<usize> = items
                .into_iter()
                .filter(|&i| Some(indent(lines[i])) == own)
                .collect();
            if let Some(&item) = items.get(k) {
                found = Some(item + 1);
                from = item;
            }
        }
    }
    found
}
