//! Writes rosbag2 bags with MCAP storage, as rosbag2 Jazzy's MCAP plugin does: profile `ros2`, one
//! schema per type (`ros2msg` text), one channel per topic with `offered_qos_profiles` and
//! `topic_type_hash` metadata, `cdr` messages in chunks, a `rosbag2` metadata record per file and
//! `metadata.yaml` (version 9) beside the `<name>_<N>.mcap` files.
//!
//! Crash safety: every completed chunk is handed to the operating system at once, so a writer killed
//! with SIGKILL loses at most the open chunk (handed to the OS, not fsync'd: a power cut can lose
//! more); `metadata.yaml` is written at creation, when topics are added, at each split and flush, and
//! at most once per [`WriterOptions::metadata_refresh`] when a chunk completes. [`crate::reindex`]
//! repairs what a killed writer leaves.

mod options;

pub use options::{
    ChunkCompression, TopicSpec, WriterOptions, DEFAULT_CHUNK_SIZE_BYTES, MCAP_PROFILE, ROSBAG2_METADATA_NAME,
};

use crate::metadata::{BagMetadata, FileInformation};
use crate::qos::qos_to_yaml;
use crate::{Error, Result};
use mcap::records::{MessageHeader, Metadata};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

// Message record framing: opcode (1) + length (8) + channel (2) + sequence (4) + two times (16).
const MESSAGE_RECORD_OVERHEAD: u64 = 31;

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
        self.write_metadata_record_unchecked(Metadata {
            name: name.to_string(),
            metadata: entries.clone(),
        })?;
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
        let topics = self.topics.iter().map(|t| (t.spec.metadata(), t.count));
        BagMetadata {
            custom_data: self.opts.custom_data.clone(),
            ros_distro: self.opts.ros_distro.clone(),
            ..BagMetadata::describe("mcap", topics, files)
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
            .compression_threads(self.opts.compression_threads)
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
        self.write_metadata_record_unchecked(rosbag2_record(&self.metadata()))?;
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

    fn write_metadata_record_unchecked(&mut self, record: Metadata) -> Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Err(Error::WriterFailed {
                path: self.dir.clone(),
            });
        };
        if let Err(e) = file.mcap.write_metadata(&record) {
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

/// rosbag2's own MCAP metadata record: the bag metadata (version 9 YAML) and the ROS distribution.
pub(crate) fn rosbag2_record(md: &BagMetadata) -> Metadata {
    let metadata = [
        ("serialized_metadata".to_string(), md.to_embedded_yaml()),
        ("ROS_DISTRO".to_string(), md.ros_distro.clone()),
    ]
    .into_iter()
    .collect();
    Metadata {
        name: ROSBAG2_METADATA_NAME.to_string(),
        metadata,
    }
}

fn file_info(file: &OpenFile) -> FileInformation {
    let range = file.start_ns.map(|start| (start, file.end_ns));
    FileInformation::new(file.rel_path.clone(), range, file.count)
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
