//! The plain data of a bag reader: storage kinds, topics, messages, extra records and read options,
//! in a leaf module that the storage files, the iterators and the reader all share.

use crate::metadata::TopicMetadata;
use crate::msgdefs::MessageDefinition;
use std::collections::{BTreeMap, BTreeSet};
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
    /// Messages on the topic, from the storage files (MCAP statistics, sqlite3 counts); for a topic
    /// that only metadata.yaml lists, metadata.yaml's count.
    pub message_count: u64,
    /// The message definition stored in the bag, if any.
    pub definition: Option<MessageDefinition>,
}

/// One message read from a bag (its data decompressed when the bag uses rosbag2's message
/// compression).
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

    /// Whether a message logged at `t` (ns) lies in the time window.
    pub(super) fn wants_time(&self, t: u64) -> bool {
        self.start_ns.is_none_or(|s| t >= s) && self.end_ns.is_none_or(|e| t < e)
    }
}

/// What a storage file says about one of its channels (MCAP) or topics (sqlite3).
#[derive(Debug, Clone)]
pub(super) struct ChannelInfo {
    pub(super) topic: Arc<str>,
    pub(super) type_name: String,
    pub(super) encoding: String,
    pub(super) qos_text: String,
    pub(super) type_hash: String,
    pub(super) definition: Option<MessageDefinition>,
}
