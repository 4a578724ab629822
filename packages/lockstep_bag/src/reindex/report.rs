//! What reindexing reports: per storage file and for the whole bag.

use super::salvage::SkippedBytes;
use crate::metadata::BagMetadata;
use std::path::PathBuf;

/// What reindexing did to one storage file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReindexedFile {
    /// The input file.
    pub path: PathBuf,
    /// Where its messages are now (the input itself when left in place).
    pub output: PathBuf,
    /// The file had a valid footer and no damage: copied (or, in place, left) as it is.
    pub was_complete: bool,
    /// Messages kept.
    pub messages: u64,
    /// Chunks whose messages were kept.
    pub chunks: u64,
    /// Damaged parts skipped in the middle of the file (reading went on after each).
    pub skipped: Vec<SkippedBytes>,
    /// Bytes not used: the skipped parts and the unusable end (0 for complete files).
    pub bytes_dropped: u64,
    /// Why the end of the file could not be used, if so.
    pub stop_reason: Option<String>,
    /// Messages dropped because the file holds no channel record for them.
    pub messages_without_channel: u64,
}

/// The outcome of [`reindex_with`](super::reindex_with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReindexReport {
    /// The bag directory or file written (the input itself in place).
    pub output: PathBuf,
    /// One entry per storage file, in bag order.
    pub files: Vec<ReindexedFile>,
    /// The metadata written (for a bag directory) or embedded (for a single file).
    pub metadata: BagMetadata,
}
