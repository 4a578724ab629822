//! The one error type of the suite library.

use std::path::PathBuf;

/// What went wrong, naming the file and the key path (or the case) it is about.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The suite file is not what `lockstep test` reads: `file: key.path: reason`.
    #[error("{file}: {key}: {reason}")]
    Suite {
        /// The suite file.
        file: PathBuf,
        /// Where in it (`modules.variants.fast.arguments`; `(file)` for the whole file).
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A recording (or a baseline output) could not be read.
    #[error("{path}: {reason}")]
    Recording {
        /// The bag.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A case could not be run to the end (modules not started, replay failed, ...).
    #[error("{0}")]
    Case(String),
    /// The assertion rules could not be evaluated over a case's outputs.
    #[error("assert: {0}")]
    Rules(#[from] lockstep_rules::Error),
}

/// The suite library's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn suite(file: &std::path::Path, key: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Suite {
            file: file.to_owned(),
            key: key.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_owned(),
            source,
        }
    }
}
