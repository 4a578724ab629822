//! The settings of a [`super::BagWriter`] and of the topics it records, and rosbag2's MCAP constants.

use crate::metadata::TopicMetadata;
use crate::msgdefs::MessageDefinition;
use crate::qos::{parse_qos_yaml, QosProfile};
use crate::Result;
use std::collections::BTreeMap;
use std::time::Duration;

/// MCAP profile of rosbag2 files.
pub const MCAP_PROFILE: &str = "ros2";
/// Name of the MCAP metadata record rosbag2 stores its bag metadata in.
pub const ROSBAG2_METADATA_NAME: &str = "rosbag2";
/// MCAP chunk size rosbag2's MCAP plugin uses by default (768 KiB).
pub const DEFAULT_CHUNK_SIZE_BYTES: u64 = 768 * 1024;

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

/// Settings of a [`BagWriter`](super::BagWriter).
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// Chunk compression.
    pub compression: ChunkCompression,
    /// zstd level (0 = zstd's default).
    pub compression_level: u32,
    /// zstd worker threads compressing beside the writing thread (0: compress on the writing
    /// thread). One by default: a chunk compresses while the writer goes on, and the output does not
    /// depend on the machine's core count (determinism).
    pub compression_threads: u32,
    /// Message bytes (each record with its 31-byte framing, uncompressed) after which the open chunk
    /// is closed and flushed to the OS.
    pub chunk_size_bytes: u64,
    /// Start a new file before a message that would take the current one past this size, counting
    /// the open chunk uncompressed (rosbag2's `max_bagfile_size`; the summary written when the file
    /// closes comes on top).
    pub max_bag_size_bytes: Option<u64>,
    /// Start a new file before a message more than this much later than the file's earliest one
    /// (rosbag2's `max_bagfile_duration`).
    pub max_bag_duration_ns: Option<u64>,
    /// `ros_distro` recorded in the metadata.
    pub ros_distro: String,
    /// `custom_data` recorded in the metadata.
    pub custom_data: BTreeMap<String, String>,
    /// Rewrite metadata.yaml at most this often while recording, checked only when a chunk completes
    /// (so not at all while no chunk completes); `None` writes it only at creation, topic addition,
    /// split, [`flush`](super::BagWriter::flush) and finish.
    pub metadata_refresh: Option<Duration>,
    /// Base name of the storage files (`<stem>_<N>.mcap`); defaults to the directory's name.
    pub file_stem: Option<String>,
    /// Compute chunk CRCs (and the data section CRC combined from them). Off by default, like
    /// rosbag2's MCAP plugin (`noChunkCRC: true`): a CRC is one more pass over every byte written.
    pub chunk_crcs: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            compression: ChunkCompression::None,
            compression_level: 0,
            compression_threads: 1,
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

    pub(super) fn metadata(&self) -> TopicMetadata {
        TopicMetadata {
            name: self.name.clone(),
            type_name: self.type_name.clone(),
            serialization_format: self.serialization_format.clone(),
            offered_qos_profiles: self.offered_qos_profiles.clone(),
            type_description_hash: self.type_description_hash.clone(),
        }
    }
}
