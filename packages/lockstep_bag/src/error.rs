//! The crate's error type: every variant names what failed and where (path, topic, offset, field).

use std::path::PathBuf;

/// Everything that can go wrong while reading, writing or repairing a bag.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system I/O error on a file or directory.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The MCAP library rejected a file (malformed record, bad CRC, truncated data...).
    #[error("{path}: MCAP error{}: {source}", offset.map(|o| format!(" at byte offset {o}")).unwrap_or_default())]
    Mcap {
        /// The MCAP file.
        path: PathBuf,
        /// Byte offset of the record involved, when known.
        offset: Option<u64>,
        /// The underlying error.
        #[source]
        source: mcap::McapError,
    },
    /// An MCAP file holds a record this library refuses before parsing it: a length that runs past the
    /// end of the file or of the record holding it, a chunk that does not decompress to its declared
    /// size or CRC, a footer or summary that does not fit the file.
    #[error("{path}: malformed MCAP at byte offset {offset}: {reason}")]
    Malformed {
        /// The MCAP file.
        path: PathBuf,
        /// Byte offset of the record involved (for a record inside a chunk, the chunk's offset).
        offset: u64,
        /// What is wrong, naming the record and field.
        reason: String,
    },
    /// An sqlite3 storage file could not be read (it is opened read-only: sqlite never writes to it).
    #[error("{path}: sqlite3 error: {source}")]
    Sqlite {
        /// The `.db3` file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: rusqlite::Error,
    },
    /// `metadata.yaml` (or an embedded copy of it) is not valid YAML or misses/mistypes a field.
    #[error("{path}: invalid bag metadata: field `{field}`: {reason}")]
    Metadata {
        /// The metadata file (or the MCAP file holding it).
        path: PathBuf,
        /// Dotted path of the offending field, e.g. `topics_with_message_count[2].topic_metadata.name`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The metadata declares a format version this library does not know.
    #[error("{path}: unsupported rosbag2 metadata version {version} (this reader handles 1 to 9)")]
    UnsupportedVersion {
        /// The metadata file.
        path: PathBuf,
        /// The version found.
        version: i64,
    },
    /// The bag uses a storage plugin other than `mcap` or `sqlite3`.
    #[error("{path}: unsupported storage `{storage}` (supported: mcap, sqlite3)")]
    UnsupportedStorage {
        /// The bag.
        path: PathBuf,
        /// The storage identifier or file extension found.
        storage: String,
    },
    /// The bag uses a rosbag2 compression mode or format this library does not read (it reads modes
    /// `file` and `message` with format `zstd`).
    #[error("{path}: unsupported rosbag2 compression: mode `{mode}`, format `{format}` (supported: mode FILE or MESSAGE with format zstd)")]
    UnsupportedCompression {
        /// The bag.
        path: PathBuf,
        /// `compression_mode` from the metadata.
        mode: String,
        /// `compression_format` from the metadata.
        format: String,
    },
    /// A storage file of a bag compressed with rosbag2's file compression could not be decompressed
    /// (damaged or truncated compressed file, or no room for the decompressed copy).
    #[error("{path}: cannot decompress ({format} file compression) into {}: {source}", to.display())]
    Decompress {
        /// The compressed storage file in the bag.
        path: PathBuf,
        /// Where the decompressed copy was being written.
        to: PathBuf,
        /// The compression format.
        format: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A message of a bag compressed with rosbag2's message compression could not be decompressed.
    #[error("{path}: cannot decompress the message on topic `{topic}` at log time {log_time_ns} ns ({format} message compression): {source}")]
    DecompressMessage {
        /// The storage file holding the message.
        path: PathBuf,
        /// The message's topic.
        topic: String,
        /// The message's log time (ns).
        log_time_ns: u64,
        /// The compression format.
        format: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Reading the decompressed copy of a compressed storage file failed (the copy lives in a
    /// temporary directory; `source` names it and the place in it).
    #[error("{path} (compressed storage file, read from its decompressed copy): {source}")]
    InDecompressedFile {
        /// The compressed storage file in the bag.
        path: PathBuf,
        /// The error reading the decompressed copy.
        #[source]
        source: Box<Error>,
    },
    /// `reindex` was asked to rewrite a bag that uses rosbag2's own compression.
    #[error("{path}: reindex does not rewrite rosbag2-compressed bags (compression mode `{mode}`, format `{format}`); `lockstep bag convert` makes an uncompressed copy")]
    ReindexCompressed {
        /// The bag directory.
        path: PathBuf,
        /// `compression_mode` from the metadata.
        mode: String,
        /// `compression_format` from the metadata.
        format: String,
    },
    /// A QoS profile list (YAML text) could not be understood.
    #[error("invalid offered_qos_profiles for topic `{topic}`: {reason}")]
    Qos {
        /// The topic the QoS belongs to.
        topic: String,
        /// What is wrong.
        reason: String,
    },
    /// A message was written to a topic that was never added.
    #[error("unknown topic `{topic}`: add it with BagWriter::add_topic before writing to it")]
    UnknownTopic {
        /// The topic name.
        topic: String,
    },
    /// A topic was added twice with different settings.
    #[error("topic `{topic}` was already added with different settings ({detail})")]
    ConflictingTopic {
        /// The topic name.
        topic: String,
        /// Which setting differs.
        detail: String,
    },
    /// No `.msg` file was found for a type (or one of its dependencies).
    #[error("no message definition for `{type_name}`{}: searched {}", needed_by.as_ref().map(|n| format!(" (needed by `{n}`)")).unwrap_or_default(), if searched.is_empty() { "no prefixes (AMENT_PREFIX_PATH empty?)".to_string() } else { searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ") })]
    DefinitionNotFound {
        /// The type that could not be resolved.
        type_name: String,
        /// The root type whose schema was being built, if different.
        needed_by: Option<String>,
        /// Every file path that was tried.
        searched: Vec<PathBuf>,
    },
    /// A type name is not of the form `pkg/Type` or `pkg/msg/Type`.
    #[error("type name `{type_name}` is not of the form pkg/msg/Type")]
    BadTypeName {
        /// The offending name.
        type_name: String,
    },
    /// The output directory of a new bag already exists and is not empty.
    #[error("{path}: output bag directory already exists and is not empty")]
    OutputExists {
        /// The directory.
        path: PathBuf,
    },
    /// The path is neither a bag directory nor a storage file, or a storage file does not hold the
    /// storage its bag says (no MCAP or sqlite3 magic number at its start).
    #[error("{path}: not a rosbag2 bag: {reason}")]
    NotABag {
        /// The path given.
        path: PathBuf,
        /// Why it is not one.
        reason: String,
    },
    /// A message location given to `BagReader::read_at` names no message of the bag (a location
    /// from another bag, or a bag whose files changed since it was indexed).
    #[error("{path}: no message at {location}: {reason}")]
    BadLocation {
        /// The storage file (or the bag, when the location names no storage file of it).
        path: PathBuf,
        /// The location, as given.
        location: String,
        /// What is there instead.
        reason: String,
    },
    /// A caller passed an invalid argument (empty topic name, reserved metadata name...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The writer hit an error before and refuses further writes so the file stays consistent.
    #[error("{path}: the writer failed earlier and accepts no more writes")]
    WriterFailed {
        /// The bag directory.
        path: PathBuf,
    },
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn mcap(path: impl Into<PathBuf>, offset: Option<u64>, source: mcap::McapError) -> Self {
        Error::Mcap {
            path: path.into(),
            offset,
            source,
        }
    }

    pub(crate) fn malformed(path: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Malformed {
            path: path.into(),
            offset,
            reason: reason.into(),
        }
    }

    pub(crate) fn metadata(
        path: impl Into<PathBuf>,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Error::Metadata {
            path: path.into(),
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// An error and its causes on one line, `outer: inner: ...`, each said once: a cause whose text the line
/// already holds is left out (this crate's errors, like many, print their source and also return it as
/// `source()`, so walking the chain naively would repeat it). For command-line errors and node status
/// fields alike.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let part = cause.to_string();
        if !text.contains(part.as_str()) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = cause.source();
    }
    text
}
