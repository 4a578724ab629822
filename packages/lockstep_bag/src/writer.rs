//! Writes rosbag2 bags with MCAP storage, as rosbag2 Jazzy's MCAP plugin does: profile `ros2`, one
//! schema per type (`ros2msg` text), one channel per topic with `offered_qos_profiles` and
//! `topic_type_hash` metadata, `cdr` messages in chunks, a `rosbag2` metadata record per file and
//! `metadata.yaml` (version 9) beside the `<name>_<N>.mcap` files.
//!
//! Crash safety: every completed chunk is handed to the operating system at once, so a writer killed
//! with SIGKILL loses at most the open chunk; `metadata.yaml` is written at creation, when topics are
//! added, at each split and periodically. [`crate::reindex`] repairs what a killed writer leaves.

use crate::metadata::{BagMetadata, FileInformation, TopicInformation, TopicMetadata};
use crate::msgdefs::MessageDefinition;
use crate::qos::{parse_qos_yaml, qos_to_yaml, QosProfile};
use crate::{Error, Result};
use mcap::records::{MessageHeader, Metadata};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// MCAP profile of rosbag2 files.
pub const MCAP_PROFILE: &str = "ros2";
/// Name of the MCAP metadata record rosbag2 stores its bag metadata in.
pub const ROSBAG2_METADATA_NAME: &str = "rosbag2";
/// MCAP chunk size rosbag2's MCAP plugin uses by default (768 KiB).
pub const DEFAULT_CHUNK_SIZE_BYTES: u64 = 768 * 1024;

// Message record framing: opcode (1) + length (8) + channel (2) + sequence (4) + two times (16).
const MESSAGE_RECORD_OVERHEAD: u64 = 31;

/// Compression of MCAP chunks (rosbag2's `compression` storage option; not rosbag2's own file or
/// message compression, so metadata.yaml's compression fields stay empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChunkCompression {
    /// Uncompressed chunks (rosbag2's default).
    #[default]
    None,
    /// zstd-compressed chunks.
    Zstd,
}

/// Settings of a [`BagWriter`].
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// Chunk compression.
    pub compression: ChunkCompression,
    /// zstd level (0 = zstd's default).
    pub compression_level: u32,
    /// Uncompressed bytes after which a chunk is closed and flushed to the OS.
    pub chunk_size_bytes: u64,
    /// Start a new file once the current one reaches this size (rosbag2's `max_bagfile_size`).
    pub max_bag_size_bytes: Option<u64>,
    /// Start a new file once a message is this much later than the file's first one
    /// (rosbag2's `max_bagfile_duration`).
    pub max_bag_duration_ns: Option<u64>,
    /// `ros_distro` recorded in the metadata.
    pub ros_distro: String,
    /// `custom_data` recorded in the metadata.
    pub custom_data: BTreeMap<String, String>,
    /// Rewrite metadata.yaml at most this often while recording (checked when a chunk completes);
    /// `None` writes it only at creation, topic addition, split and finish.
    pub metadata_refresh: Option<Duration>,
    /// Base name of the storage files (`<stem>_<N>.mcap`); defaults to the directory's name.
    pub file_stem: Option<String>,
    /// Compute chunk CRCs. Off by default, like rosbag2's MCAP plugin (`noChunkCRC: true`): the CRC
    /// pass costs a third of the write time for large messages.
    pub chunk_crcs: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            compression: ChunkCompression::None,
            compression_level: 0,
            chunk_size_bytes: DEFAULT_CHUNK_SIZE_BYTES,
            max_bag_size_bytes: None,
            max_bag_duration_ns: None,
            ros_distro: "jazzy".to_string(),
            custom_data: BTreeMap::new(),
            metadata_refresh: Some(Duration::from_secs(1)),
            file_stem: None,
            chunk_crcs: false,
        }
    }
}

/// Everything rosbag2 records about a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    /// Topic name.
    pub name: String,
    /// Message type, e.g. `std_msgs/msg/String`.
    pub type_name: String,
    /// Serialization format (`cdr`).
    pub serialization_format: String,
    /// Offered QoS profiles.
    pub offered_qos_profiles: Vec<QosProfile>,
    /// `RIHS01_...` hash or empty.
    pub type_description_hash: String,
    /// Message definition stored as the MCAP schema.
    pub definition: MessageDefinition,
}

impl TopicSpec {
    /// A `cdr` topic without QoS, hash or definition; set those with the `with_*` methods.
    pub fn new(name: impl Into<String>, type_name: impl Into<String>) -> Self {
        TopicSpec {
            name: name.into(),
            type_name: type_name.into(),
            serialization_format: "cdr".to_string(),
            offered_qos_profiles: Vec::new(),
            type_description_hash: String::new(),
            definition: MessageDefinition::empty(),
        }
    }

    /// Sets the QoS profiles from YAML text in any rosbag2 version's spelling.
    pub fn with_qos_yaml(mut self, yaml: &str) -> Result<Self> {
        self.offered_qos_profiles = parse_qos_yaml(yaml, &self.name)?;
        Ok(self)
    }

    /// Sets the QoS profiles.
    pub fn with_qos(mut self, profiles: Vec<QosProfile>) -> Self {
        self.offered_qos_profiles = profiles;
        self
    }

    /// Sets the type description hash.
    pub fn with_type_hash(mut self, hash: impl Into<String>) -> Self {
        self.type_description_hash = hash.into();
        self
    }

    /// Sets the serialization format.
    pub fn with_serialization_format(mut self, format: impl Into<String>) -> Self {
        self.serialization_format = format.into();
        self
    }

    /// Sets the message definition (MCAP schema).
    pub fn with_definition(mut self, definition: MessageDefinition) -> Self {
        self.definition = definition;
        self
    }

    fn metadata(&self) -> TopicMetadata {
        TopicMetadata {
            name: self.name.clone(),
            type_name: self.type_name.clone(),
            serialization_format: self.serialization_format.clone(),
            offered_qos_profiles: self.offered_qos_profiles.clone(),
            type_description_hash: self.type_description_hash.clone(),
        }
    }
}

/// Handle of a topic added to a [`BagWriter`]; writing by id skips the name lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TopicId(pub usize);

struct TopicState {
    spec: TopicSpec,
    count: u64,
}

struct OpenFile {
    mcap: mcap::Writer<BufWriter<File>>,
    // A second handle on the same file, used to ask the OS for the flushed size.
    probe: File,
    path: PathBuf,
    rel_path: String,
    channel_ids: Vec<u16>,
    chunk_bytes: u64,
    flushed_size: u64,
    start_ns: Option<u64>,
    end_ns: u64,
    count: u64,
}

/// Writes one rosbag2 bag directory.
pub struct BagWriter {
    dir: PathBuf,
    stem: String,
    opts: WriterOptions,
    topics: Vec<TopicState>,
    by_name: HashMap<String, TopicId>,
    file: Option<OpenFile>,
    closed_files: Vec<FileInformation>,
    start_ns: Option<u64>,
    end_ns: u64,
    total: u64,
    last_metadata_write: Instant,
    failed: bool,
    finished: bool,
}

impl std::fmt::Debug for BagWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BagWriter")
            .field("dir", &self.dir)
            .field("topics", &self.topics.len())
            .finish_non_exhaustive()
    }
}

impl BagWriter {
    /// Creates the bag directory `dir` (which must not exist or be empty) and its first file.
    pub fn create(dir: impl AsRef<Path>, opts: WriterOptions) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        if dir.exists() {
            let mut entries = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
            if entries.next().is_some() {
                return Err(Error::OutputExists { path: dir });
            }
        } else {
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        }
        if opts.chunk_size_bytes == 0 {
            return Err(Error::InvalidArgument("chunk_size_bytes must be positive".into()));
        }
        let stem = match &opts.file_stem {
            Some(s) => s.clone(),
            None => dir
                .canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "bag".to_string()),
        };
        let mut writer = BagWriter {
            dir,
            stem,
            opts,
            topics: Vec::new(),
            by_name: HashMap::new(),
            file: None,
            closed_files: Vec::new(),
            start_ns: None,
            end_ns: 0,
            total: 0,
            last_metadata_write: Instant::now(),
            failed: false,
            finished: false,
        };
        writer.open_file()?;
        writer.write_metadata_yaml()?;
        Ok(writer)
    }

    /// The bag directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Adds a topic (its schema and channel go into the current and every later file). Adding the
    /// same topic again with identical settings returns the existing id.
    pub fn add_topic(&mut self, spec: TopicSpec) -> Result<TopicId> {
        self.check_usable()?;
        if spec.name.is_empty() {
            return Err(Error::InvalidArgument("topic name is empty".into()));
        }
        if let Some(&id) = self.by_name.get(&spec.name) {
            let existing = &self.topics[id.0].spec;
            if *existing == spec {
                return Ok(id);
            }
            let detail = if existing.type_name != spec.type_name {
                format!("type `{}` vs `{}`", existing.type_name, spec.type_name)
            } else {
                "QoS, hash, format or definition differ".to_string()
            };
            return Err(Error::ConflictingTopic {
                topic: spec.name,
                detail,
            });
        }
        let id = TopicId(self.topics.len());
        if let Some(file) = self.file.as_mut() {
            let channel =
                add_channel(&mut file.mcap, &file.path, &spec).inspect_err(|_| self.failed = true)?;
            file.channel_ids.push(channel);
        }
        self.by_name.insert(spec.name.clone(), id);
        self.topics.push(TopicState { spec, count: 0 });
        self.write_metadata_yaml()?;
        Ok(id)
    }

    /// The id of an added topic.
    pub fn topic_id(&self, name: &str) -> Option<TopicId> {
        self.by_name.get(name).copied()
    }

    /// Writes one serialized message received at `log_time_ns` (also used as publish time).
    pub fn write(&mut self, topic: &str, log_time_ns: u64, data: &[u8]) -> Result<()> {
        let id = self
            .by_name
            .get(topic)
            .copied()
            .ok_or_else(|| Error::UnknownTopic {
                topic: topic.to_string(),
            })?;
        self.write_id(id, log_time_ns, log_time_ns, data)
    }

    /// Writes one serialized message by topic id, with distinct receive (log) and publish times.
    pub fn write_id(
        &mut self,
        id: TopicId,
        log_time_ns: u64,
        publish_time_ns: u64,
        data: &[u8],
    ) -> Result<()> {
        self.check_usable()?;
        let Some(topic) = self.topics.get(id.0) else {
            return Err(Error::UnknownTopic {
                topic: format!("#{}", id.0),
            });
        };
        // The per-topic count doubles as MCAP sequence number: a stable tie-break for readers.
        let sequence = topic.count as u32;
        if self.should_split(log_time_ns, data.len() as u64) {
            self.split()?;
        }
        let Some(file) = self.file.as_mut() else {
            return Err(Error::WriterFailed {
                path: self.dir.clone(),
            });
        };
        let header = MessageHeader {
            channel_id: file.channel_ids[id.0],
            sequence,
            log_time: log_time_ns,
            publish_time: publish_time_ns,
        };
        if let Err(e) = file.mcap.write_to_known_channel(&header, data) {
            self.failed = true;
            return Err(Error::mcap(&file.path, None, e));
        }
        file.count += 1;
        file.start_ns = Some(file.start_ns.map_or(log_time_ns, |s| s.min(log_time_ns)));
        file.end_ns = file.end_ns.max(log_time_ns);
        file.chunk_bytes += MESSAGE_RECORD_OVERHEAD + data.len() as u64;
        self.topics[id.0].count += 1;
        self.total += 1;
        self.start_ns = Some(self.start_ns.map_or(log_time_ns, |s| s.min(log_time_ns)));
        self.end_ns = self.end_ns.max(log_time_ns);
        if file.chunk_bytes >= self.opts.chunk_size_bytes {
            self.flush_chunk()?;
            if let Some(period) = self.opts.metadata_refresh {
                if self.last_metadata_write.elapsed() >= period {
                    self.write_metadata_yaml()?;
                }
            }
        }
        Ok(())
    }

    /// Stores a named blob (an MCAP attachment) in the current file; not a rosbag2 topic, so
    /// rosbag2 and `rosbags` ignore it.
    pub fn attach(
        &mut self,
        name: &str,
        media_type: &str,
        log_time_ns: u64,
        create_time_ns: u64,
        data: &[u8],
    ) -> Result<()> {
        self.check_usable()?;
        if name.is_empty() {
            return Err(Error::InvalidArgument("attachment name is empty".into()));
        }
        let Some(file) = self.file.as_mut() else {
            return Err(Error::WriterFailed {
                path: self.dir.clone(),
            });
        };
        let attachment = mcap::Attachment {
            log_time: log_time_ns,
            create_time: create_time_ns,
            name: name.to_string(),
            media_type: media_type.to_string(),
            data: std::borrow::Cow::Borrowed(data),
        };
        if let Err(e) = file.mcap.attach(&attachment) {
            self.failed = true;
            return Err(Error::mcap(&file.path, None, e));
        }
        self.flush_chunk()
    }

    /// Stores a named string map (an MCAP metadata record) in the current file. The name `rosbag2`
    /// is reserved for the bag metadata.
    pub fn write_metadata_record(&mut self, name: &str, entries: &BTreeMap<String, String>) -> Result<()> {
        self.check_usable()?;
        if name.is_empty() || name == ROSBAG2_METADATA_NAME {
            return Err(Error::InvalidArgument(format!(
                "metadata record name `{name}` is empty or reserved"
            )));
        }
        self.write_metadata_record_unchecked(name, entries.clone())?;
        self.flush_chunk()
    }

    /// Closes the current file and continues in a new one (`<name>_<N+1>.mcap`), like rosbag2's
    /// `split_bagfile` service. A file with no message yet is kept as it is.
    pub fn split_now(&mut self) -> Result<()> {
        self.check_usable()?;
        if self.file.as_ref().is_some_and(|f| f.count == 0) {
            return Ok(());
        }
        self.split()
    }

    /// Set one `custom_data` entry of metadata.yaml (written at the next flush, split or finish).
    pub fn set_custom_data(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.opts.custom_data.insert(key.into(), value.into());
    }

    /// Index of the file being written (`<name>_<index>.mcap`).
    pub fn file_index(&self) -> usize {
        self.closed_files.len()
    }

    /// Closes the open chunk, hands everything to the OS and rewrites metadata.yaml.
    pub fn flush(&mut self) -> Result<()> {
        self.check_usable()?;
        self.flush_chunk()?;
        self.write_metadata_yaml()
    }

    /// The metadata as it stands (what metadata.yaml would say now).
    pub fn metadata(&self) -> BagMetadata {
        let mut files = self.closed_files.clone();
        if let Some(f) = &self.file {
            files.push(file_info(f));
        }
        let start = self.start_ns.unwrap_or(0);
        BagMetadata {
            storage_identifier: "mcap".to_string(),
            duration_ns: self.end_ns.saturating_sub(start),
            starting_time_ns: start,
            message_count: self.total,
            topics_with_message_count: self
                .topics
                .iter()
                .map(|t| TopicInformation {
                    topic_metadata: t.spec.metadata(),
                    message_count: t.count,
                })
                .collect(),
            relative_file_paths: files.iter().map(|f| f.path.clone()).collect(),
            files,
            custom_data: self.opts.custom_data.clone(),
            ros_distro: self.opts.ros_distro.clone(),
            ..BagMetadata::default()
        }
    }

    /// Finishes the last file (summary, footer) and writes the final metadata.yaml.
    pub fn finish(mut self) -> Result<BagMetadata> {
        self.finish_inner()
    }

    fn finish_inner(&mut self) -> Result<BagMetadata> {
        self.check_usable()?;
        self.close_file()?;
        self.finished = true;
        let md = self.metadata();
        md.write_to_dir(&self.dir)?;
        Ok(md)
    }

    fn check_usable(&self) -> Result<()> {
        if self.failed || self.finished {
            return Err(Error::WriterFailed {
                path: self.dir.clone(),
            });
        }
        Ok(())
    }

    fn should_split(&self, log_time_ns: u64, len: u64) -> bool {
        let Some(file) = &self.file else { return false };
        if file.count == 0 {
            return false;
        }
        if let Some(max) = self.opts.max_bag_size_bytes {
            if file.flushed_size + file.chunk_bytes + MESSAGE_RECORD_OVERHEAD + len > max
                && file.flushed_size + file.chunk_bytes > 0
            {
                return true;
            }
        }
        if let (Some(max), Some(start)) = (self.opts.max_bag_duration_ns, file.start_ns) {
            if log_time_ns.saturating_sub(start) > max {
                return true;
            }
        }
        false
    }

    fn split(&mut self) -> Result<()> {
        self.close_file()?;
        self.open_file()?;
        self.write_metadata_yaml()
    }

    fn open_file(&mut self) -> Result<()> {
        let index = self.closed_files.len();
        let rel_path = format!("{}_{index}.mcap", self.stem);
        let path = self.dir.join(&rel_path);
        let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let probe = file.try_clone().map_err(|e| Error::io(&path, e))?;
        let options = mcap::WriteOptions::new()
            .profile(MCAP_PROFILE)
            .library(format!("lockstep_bag/{}", env!("CARGO_PKG_VERSION")))
            .compression(match self.opts.compression {
                ChunkCompression::None => None,
                ChunkCompression::Zstd => Some(mcap::Compression::Zstd),
            })
            .compression_level(self.opts.compression_level)
            // One worker keeps zstd output identical on every machine (determinism).
            .compression_threads(1)
            .calculate_chunk_crcs(self.opts.chunk_crcs)
            // Only meaningful with chunk CRCs (it is combined from them).
            .calculate_data_section_crc(self.opts.chunk_crcs)
            // The writer closes chunks itself so that it can flush each one.
            .chunk_size(None);
        let mcap = options
            .create(BufWriter::with_capacity(1 << 20, file))
            .map_err(|e| Error::mcap(&path, None, e))?;
        let mut open = OpenFile {
            mcap,
            probe,
            path,
            rel_path,
            channel_ids: Vec::with_capacity(self.topics.len()),
            chunk_bytes: 0,
            flushed_size: 0,
            start_ns: None,
            end_ns: 0,
            count: 0,
        };
        for topic in &self.topics {
            match add_channel(&mut open.mcap, &open.path, &topic.spec) {
                Ok(id) => open.channel_ids.push(id),
                Err(e) => {
                    self.failed = true;
                    return Err(e);
                }
            }
        }
        self.file = Some(open);
        Ok(())
    }

    fn close_file(&mut self) -> Result<()> {
        if self.file.is_none() {
            return Ok(());
        }
        // The embedded copy describes the bag as it stands, like rosbag2's update_metadata().
        let mut md = self.metadata();
        md.version = crate::metadata::METADATA_VERSION;
        let entries: BTreeMap<String, String> = [
            ("serialized_metadata".to_string(), md.to_embedded_yaml()),
            ("ROS_DISTRO".to_string(), self.opts.ros_distro.clone()),
        ]
        .into_iter()
        .collect();
        self.write_metadata_record_unchecked(ROSBAG2_METADATA_NAME, entries)?;
        let Some(mut file) = self.file.take() else {
            return Ok(());
        };
        if let Err(e) = file.mcap.finish() {
            self.failed = true;
            return Err(Error::mcap(&file.path, None, e));
        }
        self.closed_files.push(file_info(&file));
        Ok(())
    }

    fn write_metadata_record_unchecked(
        &mut self,
        name: &str,
        metadata: BTreeMap<String, String>,
    ) -> Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Err(Error::WriterFailed {
                path: self.dir.clone(),
            });
        };
        if let Err(e) = file.mcap.write_metadata(&Metadata {
            name: name.to_string(),
            metadata,
        }) {
            self.failed = true;
            return Err(Error::mcap(&file.path, None, e));
        }
        file.chunk_bytes = 0;
        Ok(())
    }

    fn flush_chunk(&mut self) -> Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        if let Err(e) = file.mcap.flush() {
            self.failed = true;
            return Err(Error::mcap(&file.path, None, e));
        }
        file.chunk_bytes = 0;
        file.flushed_size = file.probe.metadata().map_err(|e| Error::io(&file.path, e))?.len();
        Ok(())
    }

    fn write_metadata_yaml(&mut self) -> Result<()> {
        self.last_metadata_write = Instant::now();
        self.metadata().write_to_dir(&self.dir)
    }
}

impl Drop for BagWriter {
    fn drop(&mut self) {
        // A writer dropped without finish() (early return, panic) still leaves a readable bag.
        if !self.finished && !self.failed {
            let _ = self.finish_inner();
        }
    }
}

fn file_info(file: &OpenFile) -> FileInformation {
    let start = file.start_ns.unwrap_or(0);
    FileInformation {
        path: file.rel_path.clone(),
        starting_time_ns: start,
        duration_ns: file.end_ns.saturating_sub(start),
        message_count: file.count,
    }
}

fn add_channel(mcap: &mut mcap::Writer<BufWriter<File>>, path: &Path, spec: &TopicSpec) -> Result<u16> {
    let schema_id = mcap
        .add_schema(
            &spec.type_name,
            &spec.definition.encoding,
            spec.definition.text.as_bytes(),
        )
        .map_err(|e| Error::mcap(path, None, e))?;
    let metadata: BTreeMap<String, String> = [
        (
            "offered_qos_profiles".to_string(),
            qos_to_yaml(&spec.offered_qos_profiles),
        ),
        ("topic_type_hash".to_string(), spec.type_description_hash.clone()),
    ]
    .into_iter()
    .collect();
    mcap.add_channel(schema_id, &spec.name, &spec.serialization_format, &metadata)
        .map_err(|e| Error::mcap(path, None, e))
}
