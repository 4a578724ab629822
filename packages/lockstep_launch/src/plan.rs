//! What a launch file amounts to: the processes to start, each with its full command line, environment and
//! exit policy. Reading a file ([`crate::plan_file`]) fills it; [`crate::run`] starts it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_norway::Value;

use crate::error::Location;

/// The processes of a launch file and its includes, in the order they appear.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub processes: Vec<ProcessSpec>,
    /// Every `<arg>` met, in order, with the value it took.
    pub arguments: Vec<DeclaredArg>,
    /// Command-line `name:=value`s that no `<arg>` of any file declared.
    pub undeclared_overrides: Vec<String>,
}

/// An `<arg>` of a launch file.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredArg {
    pub name: String,
    pub default: Option<String>,
    pub description: Option<String>,
    pub value: String,
    pub at: Location,
}

/// Where a process's standard output goes (`output=`), as in `ros2 launch`: `log` sends stdout to the
/// process's log file only (stderr, where ROS nodes log, still reaches the screen).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Screen,
    Log,
    Both,
}

/// One process to start.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Prefix of its output lines: the node name (or executable), `-2`, `-3`... when repeated.
    pub label: String,
    /// Words run before the program (`launch-prefix`, e.g. `gdb -ex run --args`); when there are any, the
    /// first is the program actually started.
    pub prefix: Vec<String>,
    pub program: PathBuf,
    /// Arguments before `--ros-args`.
    pub args: Vec<String>,
    /// ROS arguments, for a `<node>`.
    pub node: Option<NodeSpec>,
    /// Environment changes: `Some` sets, `None` removes.
    pub env: Vec<(String, Option<String>)>,
    pub cwd: Option<PathBuf>,
    pub output: Output,
    /// `on_exit="shutdown"`: when it ends, everything is shut down.
    pub shutdown_on_exit: bool,
    /// What must happen before it starts (`<?lockstep wait-for ...?>` before it in its scope).
    pub waits: Vec<Wait>,
    /// The element it comes from.
    pub at: Location,
}

/// A process held back until an earlier one prints a line: `<?lockstep wait-for process="..."
/// output="..."?>` in a launch file, in the spirit of `ros2 launch`'s `OnProcessIO` event handler.
#[derive(Debug, Clone, PartialEq)]
pub struct Wait {
    /// The label of the process waited for, declared before the wait.
    pub process: String,
    /// A regular expression that a line of that process's output (stdout or stderr) must match.
    pub output: String,
    /// How long after that process started the line may take; past it the launch stops with an error.
    pub timeout: Duration,
    /// The processing instruction it comes from.
    pub at: Location,
}

impl std::fmt::Display for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} to print a line matching `{}` (at most {:?}; {})",
            self.process, self.output, self.timeout, self.at
        )
    }
}

/// The ROS side of a `<node>`.
#[derive(Debug, Clone, Default)]
pub struct NodeSpec {
    pub name: Option<String>,
    /// Absolute namespace, or empty for none.
    pub namespace: String,
    /// In order: later sources override earlier ones.
    pub params: Vec<ParamSource>,
    /// `from:=to`, in the order rcl matches them (first match wins): group `set_remap`s, then the node's.
    pub remaps: Vec<(String, String)>,
    /// Extra arguments after `--ros-args` (`ros_args=`).
    pub ros_args: Vec<String>,
}

/// Writes inline parameter values into a parameter file and returns its path.
pub type ParamFileWriter<'a> = dyn FnMut(&[(String, Value)]) -> std::io::Result<PathBuf> + 'a;

/// Parameters of a node: a file (`<param from=...>`) or values given inline.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamSource {
    File(PathBuf),
    Inline(Vec<(String, Value)>),
}

impl NodeSpec {
    /// `/namespace/name`, when the launch file names the node.
    pub fn fully_qualified_name(&self) -> Option<String> {
        let name = self.name.as_ref()?;
        Some(if self.namespace.is_empty() || self.namespace == "/" {
            format!("/{name}")
        } else {
            format!("{}/{name}", self.namespace)
        })
    }
}

impl ProcessSpec {
    /// The command line; inline parameters go through `param_file` (which writes them into a parameter
    /// file and returns its path), as `ros2 launch` passes them.
    pub fn argv(&self, param_file: &mut ParamFileWriter<'_>) -> std::io::Result<Vec<String>> {
        let mut argv = self.prefix.clone();
        argv.push(self.program.display().to_string());
        argv.extend(self.args.iter().cloned());
        if let Some(node) = &self.node {
            argv.push("--ros-args".into());
            if let Some(name) = &node.name {
                argv.extend(["-r".into(), format!("__node:={name}")]);
            }
            if !node.namespace.is_empty() {
                argv.extend(["-r".into(), format!("__ns:={}", node.namespace)]);
            }
            for source in &node.params {
                let path = match source {
                    ParamSource::File(path) => path.clone(),
                    ParamSource::Inline(values) => param_file(values)?,
                };
                argv.extend(["--params-file".into(), path.display().to_string()]);
            }
            for (from, to) in &node.remaps {
                argv.extend(["-r".into(), format!("{from}:={to}")]);
            }
            argv.extend(node.ros_args.iter().cloned());
        }
        Ok(argv)
    }

    /// The command line for a person to read or paste: inline parameters as `-p name:=value`.
    pub fn display_argv(&self) -> Vec<String> {
        let mut inline = Vec::new();
        let mut argv = match self.argv(&mut |values| {
            inline.push(values.to_vec());
            Ok(PathBuf::from(format!("\u{0}{}", inline.len() - 1)))
        }) {
            Ok(argv) => argv,
            Err(_) => {
                let mut argv = self.prefix.clone();
                argv.push(self.program.display().to_string());
                return argv;
            }
        };
        let mut out = Vec::with_capacity(argv.len());
        let mut i = 0;
        while i < argv.len() {
            if argv[i] == "--params-file" && argv.get(i + 1).is_some_and(|p| p.starts_with('\u{0}')) {
                let index: usize = argv[i + 1][1..].parse().unwrap_or(0);
                for (name, value) in inline.get(index).map(Vec::as_slice).unwrap_or(&[]) {
                    out.push("-p".into());
                    out.push(format!("{name}:={}", value_text(value)));
                }
                i += 2;
            } else {
                out.push(std::mem::take(&mut argv[i]));
                i += 1;
            }
        }
        out
    }
}

/// A parameter value as it would be written on a command line (YAML flow style).
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) if s.is_empty() => "''".into(),
        Value::String(s) => s.clone(),
        Value::Sequence(items) => format!(
            "[{}]",
            items.iter().map(value_text).collect::<Vec<_>>().join(", ")
        ),
        other => serde_norway::to_string(other)
            .map(|text| text.trim_end().to_string())
            .unwrap_or_default(),
    }
}

/// A parameter value from launch-file text, typed as `ros2 launch` types it: YAML scalars and lists keep
/// their type (`1` integer, `1.0` double, `true` bool, `[1, 2]` integer array); anything else is a string.
pub fn typed_value(text: &str) -> Value {
    if nests_brackets(text) {
        // Never a scalar or a list of scalars, and the YAML parser takes quadratic time on deep nesting.
        return Value::String(text.to_string());
    }
    match serde_norway::from_str::<Value>(text) {
        Ok(value @ (Value::Bool(_) | Value::Number(_) | Value::String(_))) => value,
        Ok(Value::Sequence(items)) if items.iter().all(is_scalar) => Value::Sequence(items),
        _ => Value::String(text.to_string()),
    }
}

/// Whether `text` opens a `[` or `{` inside another one, outside quotes.
fn nests_brackets(text: &str) -> bool {
    let mut depth = 0usize;
    let mut quote = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => {
                depth += 1;
                if depth > 1 {
                    return true;
                }
            }
            (None, ']' | '}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

fn is_scalar(value: &Value) -> bool {
    matches!(value, Value::Bool(_) | Value::Number(_) | Value::String(_))
}

/// The parameter file of inline values, for every node of the process (`/**`), as `ros2 launch` writes it.
pub fn inline_params_yaml(values: &[(String, Value)]) -> String {
    let mut params = serde_norway::Mapping::new();
    for (name, value) in values {
        params.insert(Value::String(name.clone()), value.clone());
    }
    let mut node = serde_norway::Mapping::new();
    node.insert(Value::String("ros__parameters".into()), Value::Mapping(params));
    let mut root = serde_norway::Mapping::new();
    root.insert(Value::String("/**".into()), Value::Mapping(node));
    serde_norway::to_string(&Value::Mapping(root)).unwrap_or_default()
}

/// Joins a pushed namespace and a relative or absolute one into an absolute namespace ("" for none).
pub fn join_namespace(base: &str, namespace: &str) -> String {
    let joined = if namespace.starts_with('/') {
        namespace.to_string()
    } else if namespace.is_empty() {
        base.to_string()
    } else {
        format!("{}/{}", base.trim_end_matches('/'), namespace)
    };
    let trimmed = joined.trim_end_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("/{trimmed}")
    }
}

/// `path` made absolute against the current directory (the processes may run elsewhere).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_typed_like_ros2_launch() {
        assert_eq!(typed_value("1"), Value::Number(1.into()));
        assert_eq!(typed_value("1.5"), Value::Number(1.5.into()));
        assert_eq!(typed_value("true"), Value::Bool(true));
        assert_eq!(typed_value(""), Value::String(String::new()));
        assert_eq!(typed_value("a,b"), Value::String("a,b".into()));
        assert_eq!(typed_value("/a/b.yaml"), Value::String("/a/b.yaml".into()));
        assert_eq!(typed_value("{a: 1}"), Value::String("{a: 1}".into()));
        assert!(matches!(typed_value("[1, 2]"), Value::Sequence(ref s) if s.len() == 2));
        assert_eq!(value_text(&typed_value("")), "''");
        assert_eq!(value_text(&typed_value("[1, 2]")), "[1, 2]");
    }

    #[test]
    fn hostile_parameter_text_stays_text() {
        for text in [
            "[".repeat(100_000),
            format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000)),
            format!("{}a: 1", "- ".repeat(10_000)),
            "a: &a [1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b]"
                .into(),
            "[[1]]".into(),
            "{a: [1]}".into(),
        ] {
            let started = std::time::Instant::now();
            assert_eq!(typed_value(&text), Value::String(text.clone()));
            assert!(
                started.elapsed() < std::time::Duration::from_secs(1),
                "{:?}",
                started.elapsed()
            );
        }
        assert!(matches!(typed_value("['[a]', \"{b}\"]"), Value::Sequence(ref s) if s.len() == 2));
    }

    #[test]
    fn inline_parameters_become_a_file_for_every_node() {
        let yaml = inline_params_yaml(&[("a".into(), typed_value("1.0")), ("s".into(), typed_value(""))]);
        let parsed: Value = serde_norway::from_str(&yaml).unwrap();
        assert_eq!(parsed["/**"]["ros__parameters"]["a"], Value::Number(1.0.into()));
        assert_eq!(
            parsed["/**"]["ros__parameters"]["s"],
            Value::String(String::new())
        );
    }

    #[test]
    fn namespaces_join() {
        assert_eq!(join_namespace("", ""), "");
        assert_eq!(join_namespace("", "robot"), "/robot");
        assert_eq!(join_namespace("/a", "b"), "/a/b");
        assert_eq!(join_namespace("/a/", "/abs"), "/abs");
        assert_eq!(join_namespace("/a", ""), "/a");
        assert_eq!(join_namespace("", "/"), "");
    }
}
