//! The open bag: its storage files and what was read from them when it was opened. The methods of
//! [`BagReader`] live beside what they do: opening and listing in the parent module, reading in
//! order in `iter` and `located`, random access in `location`.

use super::chunk_cache::ChunkCache;
use super::compressed::{BagCompression, Scratch};
use super::storage::StorageFile;
use super::types::{BagTopic, StorageKind};
use crate::metadata::BagMetadata;
use crate::Error;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One storage file of a bag.
pub(super) struct BagFile {
    /// The file in the bag (for `FILE` compression, the compressed file).
    pub(super) path: PathBuf,
    /// Its size on disk.
    pub(super) size: u64,
    /// Whether `storage` reads a decompressed copy of `path` (in the reader's scratch directory).
    pub(super) decompressed: bool,
    pub(super) storage: StorageFile,
}

impl BagFile {
    /// `error`, from reading this file, said against the file of the bag: an error reading a
    /// decompressed copy is wrapped in one naming the compressed file.
    pub(super) fn wrap(&self, error: Error) -> Error {
        in_file(&self.path, self.decompressed, error)
    }
}

/// `error`, from reading the storage file `path` of a bag (from its decompressed copy when
/// `decompressed`), said against `path`.
pub(super) fn in_file(path: &Path, decompressed: bool, error: Error) -> Error {
    if decompressed {
        Error::InDecompressedFile {
            path: path.to_path_buf(),
            source: Box::new(error),
        }
    } else {
        error
    }
}

/// An open bag. Reading it never writes into its directory.
pub struct BagReader {
    pub(super) path: PathBuf,
    pub(super) storage: StorageKind,
    pub(super) compression: BagCompression,
    pub(super) metadata: BagMetadata,
    pub(super) has_metadata_file: bool,
    pub(super) files: Vec<BagFile>,
    pub(super) topics: Vec<BagTopic>,
    /// Decompressed MCAP chunks kept for [`BagReader::read_at`].
    pub(super) chunk_cache: Mutex<ChunkCache>,
    /// Decompressed copies of `FILE`-compressed storage files; declared last so that it is dropped
    /// (and the directory removed) after the files reading from it are closed.
    pub(super) _scratch: Option<Scratch>,
}

impl std::fmt::Debug for BagReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BagReader")
            .field("path", &self.path)
            .field("storage", &self.storage)
            .field("compression", &self.compression)
            .finish_non_exhaustive()
    }
}
