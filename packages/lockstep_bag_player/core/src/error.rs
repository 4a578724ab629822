//! What can be wrong with a playback request.

use std::path::PathBuf;

/// A playback option or input that cannot be used; each names the option, topic or file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("option `{option}`: {reason}")]
    Option { option: &'static str, reason: String },
    #[error("topic `{topic}` (in `--topics`) is not in the bag; its topics are: {available}")]
    UnknownTopic { topic: String, available: String },
    #[error("option `{option}`: `{pattern}` is not a regular expression: {reason}")]
    Regex {
        option: &'static str,
        pattern: String,
        reason: String,
    },
    #[error("`--remap {rule}`: {reason} (expected `from:=to` with absolute topic names)")]
    Remap { rule: String, reason: String },
    #[error("{}: {reason}", path.display())]
    QosOverrides { path: PathBuf, reason: String },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn option(option: &'static str, reason: impl Into<String>) -> Error {
    Error::Option {
        option,
        reason: reason.into(),
    }
}
