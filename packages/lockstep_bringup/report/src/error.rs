//! What can go wrong rendering a report.

use std::path::PathBuf;

/// What a folder must hold, said when it holds none of it.
pub const EXPECTED: &str =
    "expected report.json from the demo or lockstep replay, or calibration.yaml from lockstep calibrate";

/// What can go wrong rendering a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The folder holds nothing a Lockstep tool writes (or is missing, or is a file).
    #[error("{dir}: not a Lockstep output folder ({}{EXPECTED})", why.map(|w| format!("{w}; ")).unwrap_or_default())]
    NotOutputFolder {
        /// The folder given.
        dir: PathBuf,
        /// Why, when it is not simply the files: `no such folder`, `a file, not a folder`.
        why: Option<&'static str>,
    },
    /// `report.json` is JSON, but neither the demo's nor lock-step replay's.
    #[error(
        "{path}: not a report a Lockstep tool writes (expected the demo's `stages`, or lockstep replay's \
         `channels` and `frames_replayed`)"
    )]
    UnknownReport {
        /// report.json.
        path: PathBuf,
    },
    /// `calibration.yaml` is YAML, but not what `lockstep calibrate` writes.
    #[error("{path}: not a calibration lockstep calibrate writes: {reason}")]
    NotCalibration {
        /// calibration.yaml.
        path: PathBuf,
        /// What is missing.
        reason: String,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A JSON file does not hold what it should.
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// serde_json's error, with line and column.
        source: serde_json::Error,
    },
    /// A YAML file does not parse.
    #[error("{path}: {source}")]
    Yaml {
        /// The file.
        path: PathBuf,
        /// The parser's error, with line and column.
        source: serde_norway::Error,
    },
    /// A file is not a PNG (or not one this reader understands).
    #[error("{path}: not a PNG image")]
    NotPng {
        /// The file.
        path: PathBuf,
    },
    /// `report.json` names a plot this crate does not know how to draw.
    #[error("{path}: plot `{key}`: {reason}")]
    Plot {
        /// report.json.
        path: PathBuf,
        /// The key under `plots`.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// Drawing failed.
    #[error(transparent)]
    Draw(#[from] lockstep_plot::PlotError),
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// `Result` with a [`ReportError`].
pub type Result<T, E = ReportError> = std::result::Result<T, E>;
