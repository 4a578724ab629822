//! Reads rosbag2 bags: a bag directory (metadata.yaml + MCAP or sqlite3 files), or a single `.mcap`
//! / `.db3` file. Messages come in timestamp order across all files, with a stable tie-break for equal
//! timestamps: file order, then channel (topic) id, then MCAP sequence, then position in the file.

use crate::mcapio::{self, RecordPos};
use crate::metadata::{BagMetadata, FileInformation, TopicInformation, TopicMetadata, METADATA_FILE};
use crate::msgdefs::MessageDefinition;
use crate::qos::parse_qos_yaml;
use crate::{Error, Result};
use mcap::records::{ChunkIndex, Record};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The storage plugin of a bag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    /// MCAP files.
    Mcap,
    /// sqlite3 `.db3` files.
    Sqlite3,
}

impl StorageKind {
    /// rosbag2's storage identifier.
    pub fn identifier(self) -> &'static str {
        match self {
            StorageKind::Mcap => "mcap",
            StorageKind::Sqlite3 => "sqlite3",
        }
    }
}

/// A topic of an open bag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BagTopic {
    /// Name, type, format, QoS and hash.
    pub metadata: TopicMetadata,
    /// Messages on the topic (from the storage's own statistics where available).
    pub message_count: u64,
    /// The message definition stored in the bag, if any.
    pub definition: Option<MessageDefinition>,
}

/// One message read from a bag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BagMessage {
    /// Topic name.
    pub topic: Arc<str>,
    /// Receive time (ns since epoch), the bag's ordering key.
    pub log_time_ns: u64,
    /// Publish time (ns); equals `log_time_ns` for storages that do not keep it.
    pub publish_time_ns: u64,
    /// Serialized message (CDR).
    pub data: Vec<u8>,
    /// MCAP sequence number (0 for sqlite3).
    pub sequence: u32,
    /// Index of the storage file in the bag.
    pub file_index: usize,
    /// MCAP channel id or sqlite3 topic id within that file.
    pub channel_id: u32,
}

/// An MCAP attachment (extra data stored beside the topics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentRecord {
    /// Index of the storage file holding it.
    pub file_index: usize,
    /// Attachment name.
    pub name: String,
    /// Media type.
    pub media_type: String,
    /// Log time (ns).
    pub log_time_ns: u64,
    /// Creation time (ns).
    pub create_time_ns: u64,
    /// Content.
    pub data: Vec<u8>,
}

/// An MCAP metadata record (named string map).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataRecord {
    /// Index of the storage file holding it.
    pub file_index: usize,
    /// Record name.
    pub name: String,
    /// Entries.
    pub entries: BTreeMap<String, String>,
}

/// Which messages to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Only these topics (`None`: all).
    pub topics: Option<BTreeSet<String>>,
    /// Only messages at or after this time (ns).
    pub start_ns: Option<u64>,
    /// Only messages before this time (ns).
    pub end_ns: Option<u64>,
}

impl ReadOptions {
    /// All messages of the given topics.
    pub fn topics<I: IntoIterator<Item = S>, S: Into<String>>(topics: I) -> Self {
        ReadOptions {
            topics: Some(topics.into_iter().map(Into::into).collect()),
            ..Self::default()
        }
    }

    fn wants_time(&self, t: u64) -> bool {
        self.start_ns.is_none_or(|s| t >= s) && self.end_ns.is_none_or(|e| t < e)
    }
}

#[derive(Debug, Clone)]
struct ChannelInfo {
    topic: Arc<str>,
    type_name: String,
    encoding: String,
    qos_text: String,
    type_hash: String,
    definition: Option<MessageDefinition>,
}

struct McapFile {
    path: PathBuf,
    channels: BTreeMap<u16, ChannelInfo>,
    // Chunk indexes when the file has a usable summary; otherwise the file is read linearly.
    chunks: Option<Vec<ChunkIndex>>,
    summary: Option<mcap::Summary>,
    counts: BTreeMap<u16, u64>,
    time_range: Option<(u64, u64)>,
    size: u64,
}

struct SqliteFile {
    path: PathBuf,
    conn: rusqlite::Connection,
    topics: BTreeMap<i64, ChannelInfo>,
    counts: BTreeMap<i64, u64>,
    time_range: Option<(u64, u64)>,
    size: u64,
}

enum StorageFile {
    Mcap(McapFile),
    Sqlite(SqliteFile),
}

impl StorageFile {
    fn path(&self) -> &Path {
        match self {
            StorageFile::Mcap(f) => &f.path,
            StorageFile::Sqlite(f) => &f.path,
        }
    }
}

/// An open bag.
pub struct BagReader {
    path: PathBuf,
    storage: StorageKind,
    metadata: BagMetadata,
    has_metadata_file: bool,
    files: Vec<StorageFile>,
    topics: Vec<BagTopic>,
}

impl std::fmt::Debug for BagReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BagReader")
            .field("path", &self.path)
            .field("storage", &self.storage)
            .finish_non_exhaustive()
    }
}

fn storage_of(path: &Path) -> Option<StorageKind> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("mcap") => Some(StorageKind::Mcap),
        Some("db3") => Some(StorageKind::Sqlite3),
        _ => None,
    }
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

impl BagReader {
    /// Opens a bag directory or a single `.mcap` / `.db3` file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let meta = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?;
        let (storage, file_paths, metadata) = if meta.is_dir() {
            let md_path = path.join(METADATA_FILE);
            if md_path.exists() {
                let md = BagMetadata::read(&md_path)?;
                if !md.compression_mode.is_empty() && !md.compression_mode.eq_ignore_ascii_case("none") {
                    return Err(Error::UnsupportedCompression {
                        path: path.clone(),
                        mode: md.compression_mode.clone(),
                        format: md.compression_format.clone(),
                    });
                }
                let storage = match md.storage_identifier.as_str() {
                    "mcap" => StorageKind::Mcap,
                    "sqlite3" => StorageKind::Sqlite3,
                    other => {
                        return Err(Error::UnsupportedStorage {
                            path: path.clone(),
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
                (storage, files, Some(md))
            } else {
                let files = storage_files_in(&path)?;
                let Some(first) = files.first() else {
                    return Err(Error::NotABag {
                        path,
                        reason: "no metadata.yaml and no .mcap or .db3 file".into(),
                    });
                };
                let storage = storage_of(first).unwrap_or(StorageKind::Mcap);
                let files = files
                    .into_iter()
                    .filter(|p| storage_of(p) == Some(storage))
                    .collect();
                (storage, files, None)
            }
        } else {
            match storage_of(&path) {
                Some(kind) => (kind, vec![path.clone()], None),
                None => {
                    return Err(Error::NotABag {
                        path,
                        reason: "expected a directory, a .mcap or a .db3 file".into(),
                    })
                }
            }
        };

        Self::from_parts(path, storage, file_paths, metadata)
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
        Self::from_parts(dir.to_path_buf(), storage, files.to_vec(), None)
    }

    fn from_parts(
        path: PathBuf,
        storage: StorageKind,
        file_paths: Vec<PathBuf>,
        metadata: Option<BagMetadata>,
    ) -> Result<Self> {
        let mut files = Vec::new();
        for p in &file_paths {
            files.push(match storage {
                StorageKind::Mcap => StorageFile::Mcap(open_mcap(p)?),
                StorageKind::Sqlite3 => StorageFile::Sqlite(open_sqlite(p)?),
            });
        }
        let has_metadata_file = metadata.is_some();
        let mut reader = BagReader {
            path,
            storage,
            metadata: metadata.unwrap_or_default(),
            has_metadata_file,
            files,
            topics: Vec::new(),
        };
        reader.build_topics()?;
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
        self.files.iter().map(|f| f.path().to_path_buf()).collect()
    }

    /// Total size of the storage files in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.files
            .iter()
            .map(|f| match f {
                StorageFile::Mcap(m) => m.size,
                StorageFile::Sqlite(s) => s.size,
            })
            .sum()
    }

    /// Topics: those of metadata.yaml in its order, then any others found only in the storage.
    pub fn topics(&self) -> &[BagTopic] {
        &self.topics
    }

    /// Total messages in the storage files.
    pub fn message_count(&self) -> u64 {
        self.topics.iter().map(|t| t.message_count).sum()
    }

    /// Earliest and latest message time over the storage files.
    pub fn time_range(&self) -> Option<(u64, u64)> {
        self.files
            .iter()
            .filter_map(|f| match f {
                StorageFile::Mcap(m) => m.time_range,
                StorageFile::Sqlite(s) => s.time_range,
            })
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
    }

    fn build_topics(&mut self) -> Result<()> {
        // Storage view: topic -> (info, count), first occurrence wins across files.
        let mut storage: Vec<(ChannelInfo, u64)> = Vec::new();
        let mut index: HashMap<Arc<str>, usize> = HashMap::new();
        let mut add = |info: &ChannelInfo, count: u64| match index.get(&info.topic) {
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
        };
        for f in &self.files {
            match f {
                StorageFile::Mcap(m) => {
                    for (id, info) in &m.channels {
                        add(info, m.counts.get(id).copied().unwrap_or(0));
                    }
                }
                StorageFile::Sqlite(s) => {
                    for (id, info) in &s.topics {
                        add(info, s.counts.get(id).copied().unwrap_or(0));
                    }
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
        self.topics = topics;
        Ok(())
    }

    fn synthesize_metadata(&self) -> BagMetadata {
        let range = self.time_range();
        let files = self
            .files
            .iter()
            .map(|f| {
                let (count, range): (u64, Option<(u64, u64)>) = match f {
                    StorageFile::Mcap(m) => (m.counts.values().sum(), m.time_range),
                    StorageFile::Sqlite(s) => (s.counts.values().sum(), s.time_range),
                };
                FileInformation {
                    path: f
                        .path()
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    starting_time_ns: range.map_or(0, |r| r.0),
                    duration_ns: range.map_or(0, |r| r.1 - r.0),
                    message_count: count,
                }
            })
            .collect::<Vec<_>>();
        BagMetadata {
            storage_identifier: self.storage.identifier().to_string(),
            starting_time_ns: range.map_or(0, |r| r.0),
            duration_ns: range.map_or(0, |r| r.1 - r.0),
            message_count: self.message_count(),
            topics_with_message_count: self
                .topics
                .iter()
                .map(|t| TopicInformation {
                    topic_metadata: t.metadata.clone(),
                    message_count: t.message_count,
                })
                .collect(),
            relative_file_paths: files.iter().map(|f| f.path.clone()).collect(),
            files,
            ..BagMetadata::default()
        }
    }

    /// All messages in timestamp order.
    pub fn messages(&self) -> MessageIter<'_> {
        self.messages_with(ReadOptions::default())
    }

    /// Messages selected by `opts`, in timestamp order.
    pub fn messages_with(&self, opts: ReadOptions) -> MessageIter<'_> {
        MessageIter::new(self, opts)
    }

    /// All MCAP attachments, file by file in file order.
    pub fn attachments(&self) -> Result<Vec<AttachmentRecord>> {
        let mut out = Vec::new();
        for (file_index, f) in self.files.iter().enumerate() {
            let StorageFile::Mcap(m) = f else { continue };
            let mut push = |record: Record<'_>| {
                if let Record::Attachment { header, data, .. } = record {
                    out.push(AttachmentRecord {
                        file_index,
                        name: header.name,
                        media_type: header.media_type,
                        log_time_ns: header.log_time,
                        create_time_ns: header.create_time,
                        data: data.into_owned(),
                    });
                }
                Ok(())
            };
            match &m.summary {
                Some(summary) if m.chunks.is_some() => {
                    let mut file = File::open(&m.path).map_err(|e| Error::io(&m.path, e))?;
                    for idx in &summary.attachment_indexes {
                        mcapio::with_record_at(&m.path, &mut file, idx.offset, idx.length, &mut push)?;
                    }
                }
                _ => {
                    mcapio::scan(&m.path, |_, r| push(r))?;
                }
            }
        }
        Ok(out)
    }

    /// All MCAP metadata records (including rosbag2's own `rosbag2` record), file by file.
    pub fn metadata_records(&self) -> Result<Vec<MetadataRecord>> {
        let mut out = Vec::new();
        for (file_index, f) in self.files.iter().enumerate() {
            let StorageFile::Mcap(m) = f else { continue };
            let mut push = |record: Record<'_>| {
                if let Record::Metadata(md) = record {
                    out.push(MetadataRecord {
                        file_index,
                        name: md.name,
                        entries: md.metadata,
                    });
                }
                Ok(())
            };
            match &m.summary {
                Some(summary) if m.chunks.is_some() => {
                    let mut file = File::open(&m.path).map_err(|e| Error::io(&m.path, e))?;
                    for idx in &summary.metadata_indexes {
                        mcapio::with_record_at(&m.path, &mut file, idx.offset, idx.length, &mut push)?;
                    }
                }
                _ => {
                    mcapio::scan(&m.path, |_, r| push(r))?;
                }
            }
        }
        Ok(out)
    }
}

fn channel_info(channel: &mcap::Channel<'_>) -> ChannelInfo {
    let (type_name, definition) = match &channel.schema {
        Some(s) => (
            s.name.clone(),
            Some(MessageDefinition {
                encoding: s.encoding.clone(),
                text: String::from_utf8_lossy(&s.data).into_owned(),
            }),
        ),
        None => (String::new(), None),
    };
    ChannelInfo {
        topic: Arc::from(channel.topic.as_str()),
        type_name,
        encoding: channel.message_encoding.clone(),
        qos_text: channel
            .metadata
            .get("offered_qos_profiles")
            .cloned()
            .unwrap_or_default(),
        type_hash: channel
            .metadata
            .get("topic_type_hash")
            .cloned()
            .unwrap_or_default(),
        definition,
    }
}

fn open_mcap(path: &Path) -> Result<McapFile> {
    let size = std::fs::metadata(path).map_err(|e| Error::io(path, e))?.len();
    let summary = mcapio::read_summary(path)?;
    if let Some(summary) = summary {
        let stats = summary.stats.clone();
        // Files whose summary lacks chunk indexes (or holds messages outside chunks) are read linearly.
        let indexed = !summary.chunk_indexes.is_empty()
            && stats
                .as_ref()
                .is_some_and(|s| s.chunk_count as usize == summary.chunk_indexes.len());
        if indexed || stats.as_ref().is_some_and(|s| s.message_count == 0) {
            let channels = summary
                .channels
                .iter()
                .map(|(id, c)| (*id, channel_info(c)))
                .collect();
            let counts = stats
                .as_ref()
                .map(|s| s.channel_message_counts.clone())
                .unwrap_or_default();
            let time_range = stats
                .as_ref()
                .filter(|s| s.message_count > 0)
                .map(|s| (s.message_start_time, s.message_end_time));
            let mut chunks = summary.chunk_indexes.clone();
            chunks.sort_by_key(|c| (c.message_start_time, c.chunk_start_offset));
            return Ok(McapFile {
                path: path.to_path_buf(),
                channels,
                chunks: Some(chunks),
                summary: Some(summary),
                counts,
                time_range,
                size,
            });
        }
    }
    // Linear fallback: learn channels, counts and times from one pass over the data section.
    let mut acc = mcap::read::ChannelAccumulator::default();
    let mut counts: BTreeMap<u16, u64> = BTreeMap::new();
    let mut range: Option<(u64, u64)> = None;
    let mut channel_ids = BTreeSet::new();
    let end = mcapio::scan(path, |pos, record| {
        match record {
            Record::Schema { header, data } => {
                acc.add_schema(header, data.into_owned().into())
                    .map_err(|e| Error::mcap(path, Some(pos.offset), e))?;
            }
            Record::Channel(c) => {
                channel_ids.insert(c.id);
                acc.add_channel(c)
                    .map_err(|e| Error::mcap(path, Some(pos.offset), e))?;
            }
            Record::Message { header, .. } => {
                *counts.entry(header.channel_id).or_default() += 1;
                let t = header.log_time;
                range = Some(range.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
            }
            _ => {}
        }
        Ok(())
    })?;
    if let Some(err) = end.error {
        if end.valid_end == 0 {
            return Err(err);
        }
    }
    let channels = channel_ids
        .iter()
        .filter_map(|&id| acc.get(id).map(|c| (id, channel_info(&c))))
        .collect();
    Ok(McapFile {
        path: path.to_path_buf(),
        channels,
        chunks: None,
        summary: None,
        counts,
        time_range: range,
        size,
    })
}

fn sql_err(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |source| Error::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

fn open_sqlite(path: &Path) -> Result<SqliteFile> {
    use rusqlite::{Connection, OpenFlags};
    let size = std::fs::metadata(path).map_err(|e| Error::io(path, e))?.len();
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql_err(path))?;
    let columns: BTreeSet<String> = {
        let mut stmt = conn.prepare("PRAGMA table_info(topics)").map_err(sql_err(path))?;
        let rows = stmt
            .query_map([], |row| row.get::<_, String>(1))
            .map_err(sql_err(path))?;
        rows.collect::<std::result::Result<_, _>>()
            .map_err(sql_err(path))?
    };
    if columns.is_empty() {
        return Err(Error::NotABag {
            path: path.to_path_buf(),
            reason: "sqlite3 file has no `topics` table".into(),
        });
    }
    let col = |name: &str, fallback: &str| {
        if columns.contains(name) {
            name.to_string()
        } else {
            fallback.to_string()
        }
    };
    let sql = format!(
        "SELECT id, name, type, {}, {}, {} FROM topics ORDER BY id",
        col("serialization_format", "'cdr'"),
        col("offered_qos_profiles", "''"),
        col("type_description_hash", "''"),
    );
    let mut definitions: HashMap<String, MessageDefinition> = HashMap::new();
    let has_defs: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='message_definitions'",
            [],
            |r| r.get(0),
        )
        .map_err(sql_err(path))?;
    if has_defs > 0 {
        let mut stmt = conn
            .prepare("SELECT topic_type, encoding, encoded_message_definition FROM message_definitions ORDER BY id")
            .map_err(sql_err(path))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(sql_err(path))?;
        for row in rows {
            let (ty, encoding, text) = row.map_err(sql_err(path))?;
            definitions
                .entry(ty)
                .or_insert(MessageDefinition { encoding, text });
        }
    }
    let mut topics = BTreeMap::new();
    {
        let mut stmt = conn.prepare(&sql).map_err(sql_err(path))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(sql_err(path))?;
        for row in rows {
            let (id, name, ty, fmt, qos, hash) = row.map_err(sql_err(path))?;
            let definition = definitions.get(&ty).cloned();
            topics.insert(
                id,
                ChannelInfo {
                    topic: Arc::from(name.as_str()),
                    type_name: ty,
                    encoding: fmt,
                    qos_text: qos,
                    type_hash: hash,
                    definition,
                },
            );
        }
    }
    let mut counts = BTreeMap::new();
    {
        let mut stmt = conn
            .prepare("SELECT topic_id, count(*) FROM messages GROUP BY topic_id")
            .map_err(sql_err(path))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
            .map_err(sql_err(path))?;
        for row in rows {
            let (id, n) = row.map_err(sql_err(path))?;
            counts.insert(id, n.max(0) as u64);
        }
    }
    let time_range = conn
        .query_row("SELECT min(timestamp), max(timestamp) FROM messages", [], |r| {
            Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?))
        })
        .map_err(sql_err(path))?;
    let time_range = match time_range {
        (Some(a), Some(b)) => Some((a.max(0) as u64, b.max(0) as u64)),
        _ => None,
    };
    Ok(SqliteFile {
        path: path.to_path_buf(),
        conn,
        topics,
        counts,
        time_range,
        size,
    })
}

// Ordering key of a message: time, file, channel, sequence, then position in the file.
type MsgKey = (u64, usize, u32, u32, u64, u64);

struct Ready {
    key: MsgKey,
    msg: BagMessage,
}

impl PartialEq for Ready {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ready {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Load {
    McapChunk(usize),
    McapWhole,
    // Next page of rows after (timestamp, id).
    SqlitePage(Option<(i64, i64)>),
}

const SQLITE_PAGE: i64 = 4096;

/// Iterator over a bag's messages in timestamp order. Loads MCAP chunks and sqlite3 pages lazily, so
/// memory stays bounded by the chunks that overlap in time.
pub struct MessageIter<'a> {
    reader: &'a BagReader,
    opts: ReadOptions,
    // Pending loads, ordered by the earliest time they can yield.
    pending: BinaryHeap<Reverse<(u64, usize, Load)>>,
    ready: BinaryHeap<Reverse<Ready>>,
    wanted: Vec<Option<BTreeSet<u32>>>,
    failed: bool,
    deferred_error: Option<Error>,
}

impl std::fmt::Debug for MessageIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageIter")
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl<'a> MessageIter<'a> {
    fn new(reader: &'a BagReader, opts: ReadOptions) -> Self {
        let mut it = MessageIter {
            reader,
            opts,
            pending: BinaryHeap::new(),
            ready: BinaryHeap::new(),
            wanted: Vec::new(),
            failed: false,
            deferred_error: None,
        };
        it.reset();
        it
    }

    /// Restarts iteration at the first message at or after `time_ns` (same topic filter).
    pub fn seek(&mut self, time_ns: u64) {
        self.opts.start_ns = Some(time_ns);
        self.reset();
    }

    fn reset(&mut self) {
        self.pending.clear();
        self.ready.clear();
        self.failed = false;
        self.deferred_error = None;
        self.wanted = self
            .reader
            .files
            .iter()
            .map(|f| {
                let topics = self.opts.topics.as_ref()?;
                Some(match f {
                    StorageFile::Mcap(m) => m
                        .channels
                        .iter()
                        .filter(|(_, c)| topics.contains(&*c.topic))
                        .map(|(id, _)| u32::from(*id))
                        .collect(),
                    StorageFile::Sqlite(s) => s
                        .topics
                        .iter()
                        .filter(|(_, c)| topics.contains(&*c.topic))
                        .map(|(id, _)| *id as u32)
                        .collect(),
                })
            })
            .collect();
        for (fi, f) in self.reader.files.iter().enumerate() {
            match f {
                StorageFile::Mcap(m) => match &m.chunks {
                    Some(chunks) => {
                        for (ci, c) in chunks.iter().enumerate() {
                            if self.opts.start_ns.is_some_and(|s| c.message_end_time < s)
                                || self.opts.end_ns.is_some_and(|e| c.message_start_time >= e)
                            {
                                continue;
                            }
                            if let Some(w) = &self.wanted[fi] {
                                if !c.message_index_offsets.is_empty()
                                    && !c.message_index_offsets.keys().any(|k| w.contains(&u32::from(*k)))
                                {
                                    continue;
                                }
                            }
                            self.pending
                                .push(Reverse((c.message_start_time, fi, Load::McapChunk(ci))));
                        }
                    }
                    None => self.pending.push(Reverse((0, fi, Load::McapWhole))),
                },
                StorageFile::Sqlite(_) => {
                    self.pending.push(Reverse((
                        self.opts.start_ns.unwrap_or(0),
                        fi,
                        Load::SqlitePage(None),
                    )));
                }
            }
        }
    }

    fn accept(&self, fi: usize, channel: u32, t: u64) -> bool {
        self.opts.wants_time(t) && self.wanted[fi].as_ref().is_none_or(|w| w.contains(&channel))
    }

    fn load(&mut self, fi: usize, load: Load) -> Result<()> {
        let reader = self.reader;
        match (&reader.files[fi], load) {
            (StorageFile::Mcap(m), Load::McapChunk(ci)) => {
                let Some(chunk) = m.chunks.as_ref().and_then(|c| c.get(ci)) else {
                    return Ok(());
                };
                let mut file = File::open(&m.path).map_err(|e| Error::io(&m.path, e))?;
                let base = chunk.chunk_start_offset;
                mcapio::for_each_in_chunk(&m.path, &mut file, chunk, |i, record| {
                    if let Record::Message { header, data } = record {
                        self.push_mcap(
                            m,
                            fi,
                            RecordPos {
                                offset: base,
                                in_chunk: Some(i),
                            },
                            header,
                            data.into_owned(),
                        );
                    }
                    Ok(())
                })
            }
            (StorageFile::Mcap(m), Load::McapWhole) => {
                let end = mcapio::scan(&m.path, |pos, record| {
                    if let Record::Message { header, data } = record {
                        self.push_mcap(m, fi, pos, header, data.into_owned());
                    }
                    Ok(())
                })?;
                // A damaged tail (crashed writer) still lets the intact messages through; the
                // error is reported once they have been yielded.
                if let Some(e) = end.error {
                    self.deferred_error.get_or_insert(e);
                }
                Ok(())
            }
            (StorageFile::Sqlite(s), Load::SqlitePage(after)) => self.load_sqlite_page(s, fi, after),
            _ => Ok(()),
        }
    }

    fn push_mcap(
        &mut self,
        m: &McapFile,
        fi: usize,
        pos: RecordPos,
        header: mcap::records::MessageHeader,
        data: Vec<u8>,
    ) {
        let channel = u32::from(header.channel_id);
        if !self.accept(fi, channel, header.log_time) {
            return;
        }
        let topic = m
            .channels
            .get(&header.channel_id)
            .map(|c| c.topic.clone())
            .unwrap_or_else(|| Arc::from(""));
        let in_chunk = pos.in_chunk.map_or(0, |i| i as u64 + 1);
        self.ready.push(Reverse(Ready {
            key: (
                header.log_time,
                fi,
                channel,
                header.sequence,
                pos.offset,
                in_chunk,
            ),
            msg: BagMessage {
                topic,
                log_time_ns: header.log_time,
                publish_time_ns: header.publish_time,
                data,
                sequence: header.sequence,
                file_index: fi,
                channel_id: channel,
            },
        }));
    }

    fn load_sqlite_page(&mut self, s: &SqliteFile, fi: usize, after: Option<(i64, i64)>) -> Result<()> {
        let mut sql = String::from("SELECT id, topic_id, timestamp, data FROM messages WHERE 1=1");
        if let Some(w) = &self.wanted[fi] {
            let ids: Vec<String> = w.iter().map(|i| i.to_string()).collect();
            sql.push_str(&format!(" AND topic_id IN ({})", ids.join(",")));
        }
        let start = self
            .opts
            .start_ns
            .map_or(i64::MIN, |v| i64::try_from(v).unwrap_or(i64::MAX));
        let end = self
            .opts
            .end_ns
            .map_or(i64::MAX, |v| i64::try_from(v).unwrap_or(i64::MAX));
        let (after_ts, after_id) = after.unwrap_or((i64::MIN, i64::MIN));
        sql.push_str(
            " AND timestamp >= ?1 AND timestamp < ?2 AND (timestamp > ?3 OR (timestamp = ?3 AND id > ?4))",
        );
        sql.push_str(&format!(" ORDER BY timestamp, id LIMIT {SQLITE_PAGE}"));
        let mut stmt = s.conn.prepare_cached(&sql).map_err(sql_err(&s.path))?;
        let rows = stmt
            .query_map(rusqlite::params![start, end, after_ts, after_id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                ))
            })
            .map_err(sql_err(&s.path))?;
        let mut n = 0;
        let mut last = None;
        for row in rows {
            let (id, topic_id, ts, data) = row.map_err(sql_err(&s.path))?;
            n += 1;
            last = Some((ts, id));
            let t = ts.max(0) as u64;
            let topic = s
                .topics
                .get(&topic_id)
                .map(|c| c.topic.clone())
                .unwrap_or_else(|| Arc::from(""));
            self.ready.push(Reverse(Ready {
                key: (t, fi, topic_id as u32, 0, id as u64, 0),
                msg: BagMessage {
                    topic,
                    log_time_ns: t,
                    publish_time_ns: t,
                    data,
                    sequence: 0,
                    file_index: fi,
                    channel_id: topic_id as u32,
                },
            }));
        }
        if n == SQLITE_PAGE {
            if let Some((ts, id)) = last {
                self.pending
                    .push(Reverse((ts.max(0) as u64, fi, Load::SqlitePage(Some((ts, id))))));
            }
        }
        Ok(())
    }
}

impl Iterator for MessageIter<'_> {
    type Item = Result<BagMessage>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            let next_ready = self.ready.peek().map(|r| r.0.key.0);
            let load_first = match (self.pending.peek(), next_ready) {
                (Some(p), Some(t)) => p.0 .0 <= t,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if load_first {
                let Some(Reverse((_, fi, load))) = self.pending.pop() else {
                    break;
                };
                if let Err(e) = self.load(fi, load) {
                    self.failed = true;
                    return Some(Err(e));
                }
                continue;
            }
            if let Some(r) = self.ready.pop() {
                return Some(Ok(r.0.msg));
            }
            break;
        }
        self.failed = true;
        self.deferred_error.take().map(Err)
    }
}
