//! What can go wrong reading a launch file or running its processes; every error of a file says where.

use std::fmt;
use std::path::{Path, PathBuf};

/// A place in a launch file: path, line and column (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", shown(&self.file), self.line, self.column)
    }
}

/// Errors of reading a launch file into a [`crate::Plan`] and of running it.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("{}: {source}", shown(path))]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: not well-formed XML: {}", shown(path), one_line(&source.to_string()))]
    Xml { path: PathBuf, source: roxmltree::Error },
    /// A Python or YAML launch file: only `ros2 launch` runs those.
    #[error("{}: a {kind} launch file; lockstep launch reads XML launch files only (run this one with ros2 launch)", shown(path))]
    NotXml { path: PathBuf, kind: &'static str },
    /// A tag `lockstep launch` does not run (a silent skip would start a different system).
    #[error("{at}: <{tag}> is not supported by lockstep launch{hint}")]
    UnsupportedTag { at: Location, tag: String, hint: String },
    #[error("{at}: <{tag}> has no attribute `{attribute}` that lockstep launch knows (known: {known})")]
    UnknownAttribute {
        at: Location,
        tag: String,
        attribute: String,
        known: String,
    },
    #[error("{at}: <{tag}> needs the attribute `{attribute}`")]
    MissingAttribute {
        at: Location,
        tag: String,
        attribute: String,
    },
    #[error("{at}: {message}")]
    Invalid { at: Location, message: String },
    /// A file past one of the bounds of [`crate::limits`]; the message names the limit.
    #[error("{at}: {message}")]
    Limit { at: Location, message: String },
    #[error("{}: not UTF-8 text (invalid byte at offset {offset})", shown(path))]
    NotText { path: PathBuf, offset: usize },
    /// A command-line number out of its range.
    #[error("{option} {value}: expected {expected}")]
    BadOption {
        option: &'static str,
        value: String,
        expected: String,
    },
    #[error("{at}: argument `{name}` has no value and no default: give it as {name}:=<value>")]
    ArgumentWithoutValue { at: Location, name: String },
    #[error("launch argument `{0}` is not of the form name:=value")]
    BadArgument(String),
    #[error("cannot start {label} ({program}): {source}")]
    Spawn {
        label: String,
        program: String,
        source: std::io::Error,
    },
}

impl LaunchError {
    pub(crate) fn invalid(at: &Location, message: impl Into<String>) -> Self {
        Self::Invalid {
            at: at.clone(),
            message: one_line(&message.into()),
        }
    }
}

/// A path for an error message, on one line.
fn shown(path: &Path) -> String {
    one_line(&path.display().to_string())
}

/// `text` with its control characters (a newline from `&#10;` in an attribute, say) escaped, so that an
/// error quoting it stays on one line.
pub(crate) fn one_line(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `Result` with a [`LaunchError`].
pub type Result<T, E = LaunchError> = std::result::Result<T, E>;
