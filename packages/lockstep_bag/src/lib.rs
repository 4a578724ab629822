//! `lockstep_bag`: rosbag2-compatible bags in pure Rust (no ROS installation needed).
//!
//! - [`BagWriter`] writes a bag directory exactly as rosbag2 Jazzy's MCAP storage does:
//!   `metadata.yaml` (version 9) and `<name>_<N>.mcap` files (profile `ros2`, `ros2msg` schemas,
//!   `cdr` messages, chunked, optional zstd, split by size or duration), plus Lockstep's extra data as
//!   MCAP attachments and metadata records that rosbag2 tools ignore.
//! - [`BagReader`] reads bags written by rosbag2 (metadata versions 1 to 9, MCAP or sqlite3 storage),
//!   by `rosbags` or by this crate, in timestamp order with a stable tie-break, without writing
//!   anything into the bag directory (a read-only copy of a bag reads the same); or, for bags larger
//!   than memory, each message's [`Location`] without its data, read again on demand with
//!   [`BagReader::read_at`].
//! - [`MessageDefinitions`] builds the `ros2msg` schema text of a type from installed `.msg` files.
//! - [`traced::traced_nodes`] sums up the event batches of nodes traced by interception (`lockstep trace`).
//! - [`reindex`] repairs a bag whose writer was killed: the one function that writes into an existing
//!   bag directory.
//! - `cli` (feature `cli`): the `lockstep bag` subcommand.

pub mod carries;
pub mod cdr;
mod error;
mod mcapio;
pub mod metadata;
pub mod msgdefs;
pub mod qos;
pub mod reader;
mod reindex;
pub mod traced;
pub mod utc;
pub mod writer;
mod yaml_out;

#[cfg(feature = "cli")]
pub mod cli;

pub use error::{error_chain, Error, Result};
pub use metadata::{BagMetadata, FileInformation, TopicInformation, TopicMetadata};
pub use msgdefs::{MessageDefinition, MessageDefinitions};
pub use qos::QosProfile;
pub use reader::{
    AttachmentRecord, BagCompression, BagMessage, BagReader, BagTopic, LocatedIter, LocatedMessage, Location,
    MessageIter, MetadataRecord, Payload, ReadOptions, StorageKind, DEFAULT_CHUNK_CACHE_BYTES,
};
pub use reindex::{
    default_output, reindex, reindex_with, survey, ReindexReport, ReindexTarget, ReindexedFile, SkippedBytes,
};
pub use writer::{BagWriter, ChunkCompression, TopicId, TopicSpec, WriterOptions};
