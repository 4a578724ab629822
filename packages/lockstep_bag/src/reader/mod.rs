//! Reads rosbag2 bags: a bag directory (metadata.yaml + MCAP or sqlite3 files), or a single MCAP or
//! sqlite3 file. Messages come in log-time order across all files and, for equal times, in the
//! order they were written: file order, then position in the file (MCAP: record offset and index
//! within the chunk; sqlite3: row id). Channel ids and MCAP sequence numbers do not take part.
//!
//! Bags compressed by rosbag2 itself (`compression_mode` `FILE` or `MESSAGE`, format `zstd`) are
//! read too, see [`BagCompression`].
//!
//! Reading never writes into the bag directory: MCAP files are opened read-only and sqlite3 files
//! read-only and, when no `-wal` or `-journal` file lies beside them, as immutable, so that sqlite
//! creates no `-shm`/`-wal` file and a read-only copy of a bag opens. (The decompressed copies of a
//! `FILE`-compressed bag go to a temporary directory elsewhere.) Only [`crate::reindex`] writes.

mod bag;
mod chunk_cache;
mod compressed;
mod iter;
mod located;
mod location;
mod mcap_file;
mod sqlite_file;
mod storage;
mod types;

pub(crate) use storage::bag_path_metadata;

pub use bag::BagReader;
pub use compressed::BagCompression;
pub use iter::MessageIter;
pub use located::{LocatedIter, LocatedMessage, Payload};
pub use location::{Location, DEFAULT_CHUNK_CACHE_BYTES};
pub use types::{AttachmentRecord, BagMessage, BagTopic, MetadataRecord, ReadOptions, StorageKind};

use crate::metadata::{file_name_of, BagMetadata, FileInformation, TopicMetadata, METADATA_FILE};
use crate::qos::parse_qos_yaml;
use crate::{Error, Result};
use bag::{in_file, BagFile};
use chunk_cache::ChunkCache;
use compressed::Scratch;
use mcap::records::Record;
use mcap_file::ExtraKind;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
pub(crate) use storage::storage_files_in;
use storage::{storage_by_magic, storage_of, StorageFile};
use types::ChannelInfo;

impl BagReader {
    /// Opens a bag directory, or a single MCAP or sqlite3 file (recognised by its magic number).
    ///
    /// A bag compressed by rosbag2 (metadata.yaml `compression_mode` `FILE` or `MESSAGE`, format
    /// `zstd`) opens too: with `FILE`, each storage file is decompressed here, once, into a
    /// temporary directory that is removed when the reader is dropped; with `MESSAGE`, each
    /// message is decompressed as it is read. Another mode or format is an
    /// [`Error::UnsupportedCompression`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let meta = storage::bag_path_metadata(&path)?;
        if !meta.is_dir() {
            let storage = storage_by_magic(&path, None)?;
            return Self::from_parts(path.clone(), storage, vec![path], None, BagCompression::None);
        }
        let md_path = path.join(METADATA_FILE);
        if !md_path.exists() {
            let files = storage_files_in(&path)?;
            let Some(storage) = files.first().and_then(|f| storage_of(f)) else {
                return Err(Error::NotABag {
                    path,
                    reason: "no metadata.yaml and no .mcap or .db3 file".into(),
                });
            };
            let files = files
                .into_iter()
                .filter(|p| storage_of(p) == Some(storage))
                .collect();
            return Self::from_parts(path, storage, files, None, BagCompression::None);
        }
        let md = BagMetadata::read(&md_path)?;
        let compression = compressed::compression_of(&path, &md)?;
        let storage = match md.storage_identifier.as_str() {
            "mcap" => StorageKind::Mcap,
            "sqlite3" => StorageKind::Sqlite3,
            other => {
                return Err(Error::UnsupportedStorage {
                    path,
                    storage: other.to_string(),
                })
            }
        };
        // Old bags store paths relative to the bag's parent; only the file name matters.
        let files: Vec<PathBuf> = md
            .relative_file_paths
            .iter()
            .map(|p| path.join(Path::new(p).file_name().unwrap_or(p.as_ref())))
            .collect();
        if let Some(missing) = files.iter().find(|p| !p.exists()) {
            return Err(Error::NotABag {
                path: path.clone(),
                reason: format!("metadata.yaml lists {} which does not exist", missing.display()),
            });
        }
        Self::from_parts(path, storage, files, Some(md), compression)
    }

    /// Opens the given storage files (all of one kind) as one bag rooted at `dir`, ignoring any
    /// metadata.yaml: the metadata is built from the files.
    pub fn open_files(dir: &Path, files: &[PathBuf]) -> Result<Self> {
        let storage = files
            .first()
            .and_then(|p| storage_of(p))
            .ok_or_else(|| Error::NotABag {
                path: dir.to_path_buf(),
                reason: "no .mcap or .db3 file given".into(),
            })?;
        if let Some(other) = files.iter().find(|p| storage_of(p) != Some(storage)) {
            return Err(Error::UnsupportedStorage {
                path: other.clone(),
                storage: "mixed storage kinds".into(),
            });
        }
        Self::from_parts(
            dir.to_path_buf(),
            storage,
            files.to_vec(),
            None,
            BagCompression::None,
        )
    }

    fn from_parts(
        path: PathBuf,
        storage: StorageKind,
        file_paths: Vec<PathBuf>,
        metadata: Option<BagMetadata>,
        compression: BagCompression,
    ) -> Result<Self> {
        let scratch = match compression {
            BagCompression::File => Some(Scratch::new()?),
            BagCompression::None | BagCompression::Message => None,
        };
        let mut files = Vec::new();
        for (index, p) in file_paths.iter().enumerate() {
            let size = std::fs::metadata(p).map_err(|e| Error::io(p, e))?.len();
            let copy = match &scratch {
                Some(s) if compressed::is_compressed_file(p)? => Some(s.decompress_file(index, p)?),
                _ => None,
            };
            let decompressed = copy.is_some();
            let storage = StorageFile::open(copy.as_deref().unwrap_or(p), storage)
                .map_err(|e| in_file(p, decompressed, e))?;
            files.push(BagFile {
                path: p.clone(),
                size,
                decompressed,
                storage,
            });
        }
        let has_metadata_file = metadata.is_some();
        let mut reader = BagReader {
            path,
            storage,
            compression,
            metadata: metadata.unwrap_or_default(),
            has_metadata_file,
            files,
            topics: Vec::new(),
            chunk_cache: Mutex::new(ChunkCache::new(DEFAULT_CHUNK_CACHE_BYTES)),
            _scratch: scratch,
        };
        reader.topics = reader.build_topics();
        if !has_metadata_file {
            reader.metadata = reader.synthesize_metadata();
        }
        Ok(reader)
    }

    /// Where the bag was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The storage plugin.
    pub fn storage(&self) -> StorageKind {
        self.storage
    }

    /// The rosbag2 compression the bag uses (its messages are read decompressed either way).
    pub fn compression(&self) -> BagCompression {
        self.compression
    }

    /// The bag metadata: metadata.yaml as written, or (for a lone file or a directory without one)
    /// built from the storage files.
    pub fn metadata(&self) -> &BagMetadata {
        &self.metadata
    }

    /// Whether the bag directory has a metadata.yaml.
    pub fn has_metadata_file(&self) -> bool {
        self.has_metadata_file
    }

    /// The storage files, in bag order.
    pub fn file_paths(&self) -> Vec<PathBuf> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }

    /// What is wrong with the bag's storage files, one line per damaged file naming it and the byte
    /// offset: an MCAP file cut short or damaged (its summary is then not trusted and what it holds
    /// comes from reading the file up to the damage). Empty for an intact bag. Only what opening the
    /// bag sees: a chunk that an intact summary indexes is checked when its messages are read.
    pub fn damage(&self) -> Vec<String> {
        self.files
            .iter()
            .filter_map(|f| match &f.storage {
                StorageFile::Mcap(m) => m.damage.as_ref().map(|d| {
                    if f.decompressed {
                        format!(
                            "{} (compressed storage file, read from its decompressed copy): {d}",
                            f.path.display()
                        )
                    } else {
                        d.clone()
                    }
                }),
                StorageFile::Sqlite(_) => None,
            })
            .collect()
    }

    /// [`damage`](Self::damage) as the tail of an error that it may explain (a bag cut short that yields no
    /// messages or no topology): `" (the bag is damaged: ...)"`, or empty for an intact bag.
    pub fn damage_note(&self) -> String {
        let damage = self.damage();
        if damage.is_empty() {
            String::new()
        } else {
            format!(" (the bag is damaged: {})", damage.join("; "))
        }
    }

    /// Total size of the storage files in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// Topics: those of metadata.yaml in its order, then any others found only in the storage.
    pub fn topics(&self) -> &[BagTopic] {
        &self.topics
    }

    /// Total messages: the sum of [`BagTopic::message_count`] over [`topics`](Self::topics).
    pub fn message_count(&self) -> u64 {
        self.topics.iter().map(|t| t.message_count).sum()
    }

    /// Earliest and latest message time over the storage files.
    pub fn time_range(&self) -> Option<(u64, u64)> {
        self.files
            .iter()
            .filter_map(|f| f.storage.time_range())
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
    }

    fn build_topics(&self) -> Vec<BagTopic> {
        // Storage view: topic -> (info, count), first occurrence wins across files.
        let mut storage: Vec<(ChannelInfo, u64)> = Vec::new();
        let mut index: HashMap<Arc<str>, usize> = HashMap::new();
        for (_, info, count) in self.files.iter().flat_map(|f| f.storage.channels()) {
            match index.get(&info.topic) {
                Some(&i) => {
                    storage[i].1 += count;
                    if storage[i].0.definition.is_none() {
                        storage[i].0.definition.clone_from(&info.definition);
                    }
                }
                None => {
                    index.insert(info.topic.clone(), storage.len());
                    storage.push((info.clone(), count));
                }
            }
        }
        let mut topics = Vec::new();
        let mut listed = BTreeSet::new();
        for t in &self.metadata.topics_with_message_count {
            let name: &str = &t.topic_metadata.name;
            listed.insert(name.to_string());
            let found = index.get(name).map(|&i| &storage[i]);
            topics.push(BagTopic {
                metadata: t.topic_metadata.clone(),
                message_count: found.map_or(t.message_count, |s| s.1),
                definition: found.and_then(|s| s.0.definition.clone()).or_else(|| {
                    // A schema of the same type on another topic describes this one too.
                    storage
                        .iter()
                        .find(|s| s.0.type_name == t.topic_metadata.type_name && s.0.definition.is_some())
                        .and_then(|s| s.0.definition.clone())
                }),
            });
        }
        for (info, count) in &storage {
            if listed.contains(&*info.topic) {
                continue;
            }
            topics.push(BagTopic {
                metadata: TopicMetadata {
                    name: info.topic.to_string(),
                    type_name: info.type_name.clone(),
                    serialization_format: info.encoding.clone(),
                    offered_qos_profiles: parse_qos_yaml(&info.qos_text, &info.topic).unwrap_or_default(),
                    type_description_hash: info.type_hash.clone(),
                },
                message_count: *count,
                definition: info.definition.clone(),
            });
        }
        topics
    }

    fn synthesize_metadata(&self) -> BagMetadata {
        let files = self
            .files
            .iter()
            .map(|f| {
                let count = f.storage.channels().iter().map(|c| c.2).sum();
                FileInformation::new(file_name_of(&f.path), f.storage.time_range(), count)
            })
            .collect();
        let topics = self.topics.iter().map(|t| (t.metadata.clone(), t.message_count));
        BagMetadata::describe(self.storage.identifier(), topics, files)
    }

    /// All messages in timestamp order.
    pub fn messages(&self) -> MessageIter<'_> {
        self.messages_with(ReadOptions::default())
    }

    /// Messages selected by `opts`, in timestamp order. See [`MessageIter`] for what it holds in
    /// memory.
    pub fn messages_with(&self, opts: ReadOptions) -> MessageIter<'_> {
        MessageIter::new(self, opts)
    }

    /// All MCAP attachments, file by file in file order.
    pub fn attachments(&self) -> Result<Vec<AttachmentRecord>> {
        self.extra_records(ExtraKind::Attachments, |file_index, record| match record {
            Record::Attachment { header, data, .. } => Some(AttachmentRecord {
                file_index,
                name: header.name,
                media_type: header.media_type,
                log_time_ns: header.log_time,
                create_time_ns: header.create_time,
                data: data.into_owned(),
            }),
            _ => None,
        })
    }

    /// All MCAP metadata records (including rosbag2's own `rosbag2` record), file by file.
    pub fn metadata_records(&self) -> Result<Vec<MetadataRecord>> {
        self.extra_records(ExtraKind::Metadata, |file_index, record| match record {
            Record::Metadata(md) => Some(MetadataRecord {
                file_index,
                name: md.name,
                entries: md.metadata,
            }),
            _ => None,
        })
    }

    /// The records of one kind of every MCAP file, converted by `convert` (file index, record).
    fn extra_records<T>(
        &self,
        kind: ExtraKind,
        mut convert: impl FnMut(usize, Record<'_>) -> Option<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        for (file_index, f) in self.files.iter().enumerate() {
            if let StorageFile::Mcap(m) = &f.storage {
                m.for_each_extra(kind, |record| out.extend(convert(file_index, record)))
                    .map_err(|e| f.wrap(e))?;
            }
        }
        Ok(out)
    }
}
