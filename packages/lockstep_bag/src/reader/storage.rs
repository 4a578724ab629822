//! Which storage a bag's files hold (by extension and by magic number), the order of split files, and
//! an open storage file of either kind.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::mcap_file::McapFile;
use super::sqlite_file::SqliteFile;
use super::types::{ChannelInfo, StorageKind};
use crate::{Error, Result};

pub(super) fn storage_of(path: &Path) -> Option<StorageKind> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("mcap") => Some(StorageKind::Mcap),
        Some("db3") => Some(StorageKind::Sqlite3),
        _ => None,
    }
}

/// What the bag path a user gave is: a folder or a regular file. Anything else is refused before it is
/// opened (opening a FIFO waits for a writer for ever; a device never ends).
pub(crate) fn bag_path_metadata(path: &Path) -> Result<std::fs::Metadata> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.is_file() || meta.is_dir() {
        return Ok(meta);
    }
    Err(Error::NotABag {
        path: path.to_path_buf(),
        reason: "not a regular file or folder (a FIFO, device or socket)".into(),
    })
}

const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// The storage a file holds, from the magic number at its start (not from its name). `expected`
/// is the storage of the bag the file belongs to, or `None` for a file opened on its own; a file
/// that does not hold it gets an error saying what it is not.
pub(super) fn storage_by_magic(path: &Path, expected: Option<StorageKind>) -> Result<StorageKind> {
    let mut head = Vec::with_capacity(SQLITE_MAGIC.len());
    std::fs::File::open(path)
        .and_then(|f| f.take(SQLITE_MAGIC.len() as u64).read_to_end(&mut head))
        .map_err(|e| Error::io(path, e))?;
    let found = if head.starts_with(mcap::MAGIC) {
        Some(StorageKind::Mcap)
    } else if head.starts_with(SQLITE_MAGIC) {
        Some(StorageKind::Sqlite3)
    } else {
        None
    };
    match (found, expected) {
        (Some(kind), None) => return Ok(kind),
        (Some(kind), Some(want)) if kind == want => return Ok(kind),
        _ => {}
    }
    let reason = match expected {
        _ if head.is_empty() => "the file is empty".to_string(),
        None => "no metadata.yaml (not a directory) and no MCAP or sqlite3 magic number at its start".into(),
        Some(StorageKind::Mcap) => "no MCAP magic number at its start (not an MCAP file)".into(),
        Some(StorageKind::Sqlite3) => "no sqlite3 magic number at its start (not an sqlite3 file)".into(),
    };
    Err(Error::NotABag {
        path: path.to_path_buf(),
        reason,
    })
}

// Sorts storage files by the `_<N>` index rosbag2 appends, then by name.
fn file_order_key(path: &Path) -> (u64, String) {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let index = stem.rsplit('_').next().and_then(|n| n.parse().ok()).unwrap_or(0);
    (index, stem)
}

/// Storage files found directly in `dir` (sorted by split index).
pub(crate) fn storage_files_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_file() && storage_of(&path).is_some() {
            found.push(path);
        }
    }
    found.sort_by_key(|p| file_order_key(p));
    Ok(found)
}

/// An open storage file of either kind.
pub(super) enum StorageFile {
    Mcap(McapFile),
    Sqlite(SqliteFile),
}

impl StorageFile {
    /// Opens `path`, which must hold `kind` (checked by its magic number).
    pub(super) fn open(path: &Path, kind: StorageKind) -> Result<Self> {
        storage_by_magic(path, Some(kind))?;
        Ok(match kind {
            StorageKind::Mcap => StorageFile::Mcap(McapFile::open(path)?),
            StorageKind::Sqlite3 => StorageFile::Sqlite(SqliteFile::open(path)?),
        })
    }

    pub(super) fn time_range(&self) -> Option<(u64, u64)> {
        match self {
            StorageFile::Mcap(f) => f.time_range,
            StorageFile::Sqlite(f) => f.time_range,
        }
    }

    /// Every channel (MCAP) or topic (sqlite3) of the file by id, with its message count.
    pub(super) fn channels(&self) -> Vec<(u32, &ChannelInfo, u64)> {
        match self {
            StorageFile::Mcap(m) => m
                .channels
                .iter()
                .map(|(id, c)| (u32::from(*id), c, m.counts.get(id).copied().unwrap_or(0)))
                .collect(),
            StorageFile::Sqlite(s) => s
                .topics
                .iter()
                .map(|(id, c)| (*id as u32, c, s.counts.get(id).copied().unwrap_or(0)))
                .collect(),
        }
    }
}
