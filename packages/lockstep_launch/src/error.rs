//! What can go wrong reading a launch file or running its processes; every error of a file says where.

use std::fmt;
use std::path::PathBuf;

/// A place in a launch file: path, line and column (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// Errors of reading a launch file into a [`crate::Plan`] and of running it.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not well-formed XML: {source}")]
    Xml { path: PathBuf, source: roxmltree::Error },
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
            message: message.into(),
        }
    }
}

/// `Result` with a [`LaunchError`].
pub type Result<T, E = LaunchError> = std::result::Result<T, E>;
