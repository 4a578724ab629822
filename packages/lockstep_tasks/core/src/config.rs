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

pub mod recovery;
mod types;

pub(crate) use types::check_attributes;
pub use types::{
    Actuator, Attribute, Child, Config, ConfigError, Merge, PauseServices, Retry, Template,
    MAX_FALLBACK_CHAIN, MAX_SUBTASKS,
};

impl Config {
    /// Read and check a configuration file.
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        // Only a regular file, of at most a station map's size: a FIFO would block, `/dev/zero` never end.
        let max = crate::map::MAX_FILE_BYTES as u64;
        let text = lockstep_ranges::file::read_text(path, max).map_err(|e| ConfigError {
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

    /// What deserializing cannot check: (key path, reason) of the first problem.
    fn check(&self) -> Result<(), (String, String)> {
        self.check_levels()?;
        self.check_actuators()?;
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
            self.check_template(name, t)?;
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

    /// At least two levels, none empty or repeated.
    fn check_levels(&self) -> Result<(), (String, String)> {
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
        Ok(())
    }

    /// Every actuator names its server, and its pause services if it has them.
    fn check_actuators(&self) -> Result<(), (String, String)> {
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
        Ok(())
    }

    /// One template (its level known to exist): what it drives or decomposes into, its goal parameters,
    /// children, attributes and recovery.
    fn check_template(&self, name: &str, t: &Template) -> Result<(), (String, String)> {
        let key = format!("templates.{name}");
        let level = self.level_index(&t.level).unwrap_or_default();
        if level == self.levels.len() - 1 {
            self.check_last_level(&key, t)?;
        } else {
            self.check_inner_level(&key, t, level)?;
        }
        if level != 0 && !t.required.is_empty() {
            return Err((
                format!("{key}.required"),
                "only task types (the first level) take goal parameters".into(),
            ));
        }
        for (i, child) in t.children.iter().enumerate() {
            self.check_child(&key, t, level, i, child)?;
        }
        check_attributes(&t.attributes, &format!("{key}.attributes"))?;
        if level == 0 && t.fallback.is_some() {
            return Err((
                format!("{key}.fallback"),
                "a task type has no parent to run a fallback in: put it on its children".into(),
            ));
        }
        recovery::check_own(self, t, level, &key)
    }

    /// A template of the last level drives a known actuator and has no children.
    fn check_last_level(&self, key: &str, t: &Template) -> Result<(), (String, String)> {
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
        Ok(())
    }

    /// A template above the last level drives no actuator and has children.
    fn check_inner_level(&self, key: &str, t: &Template, level: usize) -> Result<(), (String, String)> {
        let last = self.levels.len() - 1;
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
        Ok(())
    }

    /// Child `i` of template `t` (at `level`): a known template one level down, with valid attributes and
    /// recovery.
    fn check_child(
        &self,
        key: &str,
        t: &Template,
        level: usize,
        i: usize,
        child: &Child,
    ) -> Result<(), (String, String)> {
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
        recovery::check_entry(self, child, level + 1, &format!("{key}.children[{i}]"))
    }
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
