//! `metadata.yaml`: rosbag2's bag description. Reads versions 1 to 9 (fields appear with the
//! versions rosbag2 introduced them in), writes version 9 exactly in rosbag2 Jazzy's key order.

use crate::qos::{parse_qos_value, qos_node, QosProfile};
use crate::yaml_out::{emit, Node};
use crate::{Error, Result};
use serde_norway::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The metadata version this library writes (rosbag2 Jazzy's).
pub const METADATA_VERSION: u32 = 9;

/// Name of the metadata file inside a bag directory.
pub const METADATA_FILE: &str = "metadata.yaml";
/// The largest `metadata.yaml` read: room for tens of thousands of files and topics.
pub const MAX_METADATA_BYTES: u64 = 64 << 20;

/// Description of one topic of a bag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    /// Topic name, e.g. `/chatter`.
    pub name: String,
    /// Message type, e.g. `std_msgs/msg/String`.
    pub type_name: String,
    /// Serialization format, normally `cdr`.
    pub serialization_format: String,
    /// QoS profiles offered by the recorded publishers.
    pub offered_qos_profiles: Vec<QosProfile>,
    /// `RIHS01_...` type hash, or empty.
    pub type_description_hash: String,
}

/// A topic with its message count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInformation {
    /// The topic.
    pub topic_metadata: TopicMetadata,
    /// Messages recorded on it.
    pub message_count: u64,
}

/// Per-storage-file information (metadata version 5 and later).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInformation {
    /// File name relative to the bag directory.
    pub path: String,
    /// Earliest message time in the file (ns since epoch).
    pub starting_time_ns: u64,
    /// Latest minus earliest message time (ns).
    pub duration_ns: u64,
    /// Messages in the file.
    pub message_count: u64,
}

/// The content of `metadata.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BagMetadata {
    /// Format version.
    pub version: u32,
    /// Storage plugin: `mcap` or `sqlite3`.
    pub storage_identifier: String,
    /// Latest minus earliest message time (ns).
    pub duration_ns: u64,
    /// Earliest message time (ns since epoch).
    pub starting_time_ns: u64,
    /// Total message count.
    pub message_count: u64,
    /// Topics with their counts.
    pub topics_with_message_count: Vec<TopicInformation>,
    /// rosbag2 compression format (`""` or `zstd`); MCAP chunk compression does not show here.
    pub compression_format: String,
    /// rosbag2 compression mode (`""`, `FILE` or `MESSAGE`).
    pub compression_mode: String,
    /// Storage file names relative to the bag directory.
    pub relative_file_paths: Vec<String>,
    /// Per-file details.
    pub files: Vec<FileInformation>,
    /// Free-form key/value pairs.
    pub custom_data: BTreeMap<String, String>,
    /// ROS distribution that wrote the bag.
    pub ros_distro: String,
}

impl Default for BagMetadata {
    fn default() -> Self {
        BagMetadata {
            version: METADATA_VERSION,
            storage_identifier: "mcap".to_string(),
            duration_ns: 0,
            starting_time_ns: 0,
            message_count: 0,
            topics_with_message_count: Vec::new(),
            compression_format: String::new(),
            compression_mode: String::new(),
            relative_file_paths: Vec::new(),
            files: Vec::new(),
            custom_data: BTreeMap::new(),
            ros_distro: String::new(),
        }
    }
}

struct Ctx<'a> {
    path: &'a Path,
}

impl Ctx<'_> {
    fn err(&self, field: &str, reason: impl Into<String>) -> Error {
        Error::metadata(self.path, field, reason)
    }

    fn get<'v>(&self, map: &'v Value, key: &str, field: &str) -> Result<&'v Value> {
        map.get(key).ok_or_else(|| self.err(field, "is missing"))
    }

    fn u64(&self, v: &Value, field: &str) -> Result<u64> {
        match v {
            Value::Number(n) => n
                .as_u64()
                .or_else(|| n.as_i64().map(|i| i.max(0) as u64))
                .ok_or_else(|| self.err(field, format!("expected an unsigned integer, found {n}"))),
            // Some writers quote numbers.
            Value::String(s) => s
                .trim()
                .parse()
                .map_err(|_| self.err(field, format!("expected an unsigned integer, found `{s}`"))),
            other => Err(self.err(
                field,
                format!("expected an unsigned integer, found {}", kind(other)),
            )),
        }
    }

    fn string(&self, v: &Value, field: &str) -> Result<String> {
        match v {
            Value::String(s) => Ok(s.clone()),
            Value::Null => Ok(String::new()),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            other => Err(self.err(field, format!("expected a string, found {}", kind(other)))),
        }
    }

    fn nested_u64(&self, map: &Value, key: &str, inner: &str) -> Result<u64> {
        let field = format!("{key}.{inner}");
        let outer = self.get(map, key, key)?;
        self.u64(self.get(outer, inner, &field)?, &field)
    }

    fn opt_string(&self, map: &Value, key: &str) -> Result<String> {
        match map.get(key) {
            Some(v) => self.string(v, key),
            None => Ok(String::new()),
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a sequence",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// The mapping that describes the bag: under `rosbag2_bagfile_information`, or the document itself
/// when it is the bare mapping (it then has a `version`).
fn bagfile_information<'v>(ctx: &Ctx<'_>, doc: &'v Value) -> Result<&'v Value> {
    let info = match doc.get("rosbag2_bagfile_information") {
        Some(v) => v,
        None if doc.get("version").is_some() => doc,
        None => return Err(ctx.err("rosbag2_bagfile_information", "is missing")),
    };
    if !info.is_mapping() {
        return Err(ctx.err(
            "rosbag2_bagfile_information",
            format!("expected a mapping, found {}", kind(info)),
        ));
    }
    Ok(info)
}

/// The format version, refused when outside the versions this library reads (1 to 9).
fn parse_version(ctx: &Ctx<'_>, info: &Value) -> Result<u32> {
    let version_value = ctx.get(info, "version", "version")?;
    let version = version_value
        .as_i64()
        .ok_or_else(|| ctx.err("version", "expected an integer"))?;
    if !(1..=9).contains(&version) {
        return Err(Error::UnsupportedVersion {
            path: ctx.path.to_path_buf(),
            version,
        });
    }
    Ok(version as u32)
}

/// `topics_with_message_count`: absent or null is none.
fn parse_topics(ctx: &Ctx<'_>, info: &Value, version: u32) -> Result<Vec<TopicInformation>> {
    let mut topics = Vec::new();
    match info.get("topics_with_message_count") {
        None | Some(Value::Null) => {}
        Some(Value::Sequence(items)) => {
            for (i, item) in items.iter().enumerate() {
                topics.push(parse_topic(ctx, item, i, version)?);
            }
        }
        Some(other) => {
            return Err(ctx.err(
                "topics_with_message_count",
                format!("expected a sequence, found {}", kind(other)),
            ))
        }
    }
    Ok(topics)
}

/// `relative_file_paths`: absent or null is none.
fn parse_relative_file_paths(ctx: &Ctx<'_>, info: &Value) -> Result<Vec<String>> {
    Ok(match info.get("relative_file_paths") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Sequence(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| ctx.string(v, &format!("relative_file_paths[{i}]")))
            .collect::<Result<Vec<_>>>()?,
        Some(other) => {
            return Err(ctx.err(
                "relative_file_paths",
                format!("expected a sequence, found {}", kind(other)),
            ))
        }
    })
}

/// `files` (version 5 and later): anything but a sequence is none.
fn parse_files(ctx: &Ctx<'_>, info: &Value) -> Result<Vec<FileInformation>> {
    let mut files = Vec::new();
    if let Some(Value::Sequence(items)) = info.get("files") {
        for (i, item) in items.iter().enumerate() {
            let field = format!("files[{i}]");
            files.push(FileInformation {
                path: ctx.string(
                    ctx.get(item, "path", &format!("{field}.path"))?,
                    &format!("{field}.path"),
                )?,
                starting_time_ns: ctx
                    .nested_u64(item, "starting_time", "nanoseconds_since_epoch")
                    .map_err(|e| prefix(e, &field))?,
                duration_ns: ctx
                    .nested_u64(item, "duration", "nanoseconds")
                    .map_err(|e| prefix(e, &field))?,
                message_count: ctx.u64(
                    ctx.get(item, "message_count", &format!("{field}.message_count"))?,
                    &format!("{field}.message_count"),
                )?,
            });
        }
    }
    Ok(files)
}

/// `custom_data`: anything but a mapping is none.
fn parse_custom_data(ctx: &Ctx<'_>, info: &Value) -> Result<BTreeMap<String, String>> {
    let mut custom_data = BTreeMap::new();
    if let Some(Value::Mapping(map)) = info.get("custom_data") {
        for (k, v) in map {
            let key = ctx.string(k, "custom_data")?;
            let value = ctx.string(v, &format!("custom_data.{key}"))?;
            custom_data.insert(key, value);
        }
    }
    Ok(custom_data)
}

impl BagMetadata {
    /// Reads and parses `metadata.yaml` (or any file holding that document).
    pub fn read(path: &Path) -> Result<Self> {
        let text = lockstep_ranges::file::read_text(path, MAX_METADATA_BYTES)
            .map_err(|e| Error::io(path, std::io::Error::other(e)))?;
        Self::parse(&text, path)
    }

    /// Parses metadata text. `source` is only used in error messages. Accepts both the full file
    /// (`rosbag2_bagfile_information:` at the top) and the bare mapping stored in MCAP files.
    pub fn parse(text: &str, source: &Path) -> Result<Self> {
        let ctx = Ctx { path: source };
        let doc: Value = serde_norway::from_str(text).map_err(|e| {
            let field = e
                .location()
                .map(|l| format!("line {} column {}", l.line(), l.column()))
                .unwrap_or_default();
            ctx.err(&field, format!("not valid YAML: {e}"))
        })?;
        let info = bagfile_information(&ctx, &doc)?;
        let version = parse_version(&ctx, info)?;
        let storage_identifier = ctx.string(
            ctx.get(info, "storage_identifier", "storage_identifier")?,
            "storage_identifier",
        )?;
        let duration_ns = ctx.nested_u64(info, "duration", "nanoseconds")?;
        let starting_time_ns = ctx.nested_u64(info, "starting_time", "nanoseconds_since_epoch")?;
        let message_count = ctx.u64(ctx.get(info, "message_count", "message_count")?, "message_count")?;
        let topics = parse_topics(&ctx, info, version)?;
        let relative_file_paths = parse_relative_file_paths(&ctx, info)?;
        let files = parse_files(&ctx, info)?;
        let custom_data = parse_custom_data(&ctx, info)?;
        Ok(BagMetadata {
            version,
            storage_identifier,
            duration_ns,
            starting_time_ns,
            message_count,
            topics_with_message_count: topics,
            compression_format: ctx.opt_string(info, "compression_format")?,
            compression_mode: ctx.opt_string(info, "compression_mode")?,
            relative_file_paths,
            files,
            custom_data,
            ros_distro: ctx.opt_string(info, "ros_distro")?,
        })
    }

    /// The metadata as a YAML node (the mapping under `rosbag2_bagfile_information`), in version 9
    /// form whatever `self.version` says: this library only writes version 9.
    pub(crate) fn to_node(&self) -> Node {
        let topics = self
            .topics_with_message_count
            .iter()
            .map(|t| {
                let m = &t.topic_metadata;
                Node::map()
                    .with(
                        "topic_metadata",
                        Node::map()
                            .with("name", Node::str(&m.name))
                            .with("type", Node::str(&m.type_name))
                            .with("serialization_format", Node::str(&m.serialization_format))
                            .with("offered_qos_profiles", qos_node(&m.offered_qos_profiles))
                            .with("type_description_hash", Node::str(&m.type_description_hash)),
                    )
                    .with("message_count", Node::uint(t.message_count))
            })
            .collect();
        let files = self
            .files
            .iter()
            .map(|f| {
                Node::map()
                    .with("path", Node::str(&f.path))
                    .with("starting_time", starting_time_node(f.starting_time_ns))
                    .with("duration", duration_node(f.duration_ns))
                    .with("message_count", Node::uint(f.message_count))
            })
            .collect();
        let custom = if self.custom_data.is_empty() {
            Node::Null
        } else {
            Node::Map(
                self.custom_data
                    .iter()
                    .map(|(k, v)| (k.clone(), Node::str(v)))
                    .collect(),
            )
        };
        Node::map()
            .with("version", Node::uint(u64::from(METADATA_VERSION)))
            .with("storage_identifier", Node::str(&self.storage_identifier))
            .with("duration", duration_node(self.duration_ns))
            .with("starting_time", starting_time_node(self.starting_time_ns))
            .with("message_count", Node::uint(self.message_count))
            .with("topics_with_message_count", Node::Seq(topics))
            .with("compression_format", Node::str(&self.compression_format))
            .with("compression_mode", Node::str(&self.compression_mode))
            .with(
                "relative_file_paths",
                Node::Seq(self.relative_file_paths.iter().map(|p| Node::str(p)).collect()),
            )
            .with("files", Node::Seq(files))
            .with("custom_data", custom)
            .with("ros_distro", Node::str(&self.ros_distro))
    }

    /// The full `metadata.yaml` text (version 9).
    pub fn to_yaml(&self) -> String {
        emit(&Node::map().with("rosbag2_bagfile_information", self.to_node()))
    }

    /// The bare mapping rosbag2 stores in the MCAP `rosbag2` metadata record (`serialized_metadata`).
    pub fn to_embedded_yaml(&self) -> String {
        emit(&self.to_node()).trim_end().to_string()
    }

    /// Writes `metadata.yaml` into `dir` atomically (temporary file, then rename), so a crash never
    /// leaves a half-written file behind.
    pub fn write_to_dir(&self, dir: &Path) -> Result<()> {
        let tmp = dir.join(format!(".{METADATA_FILE}.tmp"));
        let dst = dir.join(METADATA_FILE);
        std::fs::write(&tmp, self.to_yaml()).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &dst).map_err(|e| Error::io(&dst, e))
    }

    /// End time (start + duration) in ns.
    pub fn end_time_ns(&self) -> u64 {
        self.starting_time_ns.saturating_add(self.duration_ns)
    }

    /// Version-9 metadata of a bag made of `files` holding `topics` (with their message counts): the
    /// bag's time range, message count and file list follow from the files (files without messages
    /// do not widen the range).
    pub(crate) fn describe(
        storage_identifier: &str,
        topics: impl IntoIterator<Item = (TopicMetadata, u64)>,
        files: Vec<FileInformation>,
    ) -> Self {
        let range = files
            .iter()
            .filter(|f| f.message_count > 0)
            .fold(None, |r, f| union_range(r, f.starting_time_ns, f.end_time_ns()));
        BagMetadata {
            storage_identifier: storage_identifier.to_string(),
            starting_time_ns: range.map_or(0, |r| r.0),
            duration_ns: range.map_or(0, |r| r.1 - r.0),
            message_count: files.iter().map(|f| f.message_count).sum(),
            topics_with_message_count: topics
                .into_iter()
                .map(|(topic_metadata, message_count)| TopicInformation {
                    topic_metadata,
                    message_count,
                })
                .collect(),
            relative_file_paths: files.iter().map(|f| f.path.clone()).collect(),
            files,
            ..BagMetadata::default()
        }
    }
}

impl FileInformation {
    /// The entry of a file named `path` whose messages span `range` (`None`: no message).
    pub(crate) fn new(path: String, range: Option<(u64, u64)>, message_count: u64) -> Self {
        FileInformation {
            path,
            starting_time_ns: range.map_or(0, |r| r.0),
            duration_ns: range.map_or(0, |r| r.1.saturating_sub(r.0)),
            message_count,
        }
    }

    fn end_time_ns(&self) -> u64 {
        self.starting_time_ns.saturating_add(self.duration_ns)
    }
}

// rosbag2 spells a time point and a duration as one-key mappings.
fn starting_time_node(ns: u64) -> Node {
    Node::map().with("nanoseconds_since_epoch", Node::uint(ns))
}

fn duration_node(ns: u64) -> Node {
    Node::map().with("nanoseconds", Node::uint(ns))
}

/// The smallest range holding both `range` and `[start, end]`.
pub(crate) fn union_range(range: Option<(u64, u64)>, start: u64, end: u64) -> Option<(u64, u64)> {
    Some(range.map_or((start, end), |(a, b)| (a.min(start), b.max(end))))
}

/// A storage file's name as metadata.yaml lists it (relative to the bag directory).
pub(crate) fn file_name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn prefix(e: Error, field: &str) -> Error {
    match e {
        Error::Metadata {
            path,
            field: inner,
            reason,
        } => Error::Metadata {
            path,
            field: format!("{field}.{inner}"),
            reason,
        },
        other => other,
    }
}

fn parse_topic(ctx: &Ctx<'_>, item: &Value, index: usize, version: u32) -> Result<TopicInformation> {
    let base = format!("topics_with_message_count[{index}]");
    let tm = ctx.get(item, "topic_metadata", &format!("{base}.topic_metadata"))?;
    let f = |k: &str| format!("{base}.topic_metadata.{k}");
    let name = ctx.string(ctx.get(tm, "name", &f("name"))?, &f("name"))?;
    let type_name = ctx.string(ctx.get(tm, "type", &f("type"))?, &f("type"))?;
    let serialization_format = ctx.string(
        ctx.get(tm, "serialization_format", &f("serialization_format"))?,
        &f("serialization_format"),
    )?;
    // Versions before 4 had no QoS; later ones hold text (<= 8) or a sequence (9). Parse whichever
    // shape is present rather than trusting the version number: rosbag2 itself auto-detects.
    let offered_qos_profiles = match tm.get("offered_qos_profiles") {
        Some(v) if version >= 4 || !v.is_null() => parse_qos_value(v, &name).map_err(|e| match e {
            Error::Qos { reason, .. } => ctx.err(&f("offered_qos_profiles"), reason),
            other => other,
        })?,
        _ => Vec::new(),
    };
    let type_description_hash = match tm.get("type_description_hash") {
        Some(v) => ctx.string(v, &f("type_description_hash"))?,
        None => String::new(),
    };
    let message_count = match item.get("message_count") {
        Some(v) => ctx.u64(v, &format!("{base}.message_count"))?,
        None => 0,
    };
    Ok(TopicInformation {
        topic_metadata: TopicMetadata {
            name,
            type_name,
            serialization_format,
            offered_qos_profiles,
            type_description_hash,
        },
        message_count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_parse_is_identity() {
        let md = BagMetadata {
            duration_ns: 5,
            starting_time_ns: 10,
            message_count: 3,
            topics_with_message_count: vec![TopicInformation {
                topic_metadata: TopicMetadata {
                    name: "/a b".into(),
                    type_name: "std_msgs/msg/String".into(),
                    serialization_format: "cdr".into(),
                    offered_qos_profiles: vec![QosProfile::default()],
                    type_description_hash: "RIHS01_00".into(),
                },
                message_count: 3,
            }],
            relative_file_paths: vec!["x_0.mcap".into()],
            files: vec![FileInformation {
                path: "x_0.mcap".into(),
                starting_time_ns: 10,
                duration_ns: 5,
                message_count: 3,
            }],
            custom_data: [("k".to_string(), "v: 1".to_string())].into_iter().collect(),
            ros_distro: "jazzy".into(),
            ..BagMetadata::default()
        };
        let text = md.to_yaml();
        assert!(
            text.starts_with("rosbag2_bagfile_information:\n  version: 9\n  storage_identifier: mcap\n"),
            "{text}"
        );
        assert_eq!(BagMetadata::parse(&text, Path::new("m")).unwrap(), md);
        assert_eq!(
            BagMetadata::parse(&md.to_embedded_yaml(), Path::new("m")).unwrap(),
            md
        );
    }

    #[test]
    fn errors_name_the_field() {
        let text = "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: mcap\n  duration: {nanoseconds: x}\n";
        let err = BagMetadata::parse(text, Path::new("bag/metadata.yaml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bag/metadata.yaml") && err.contains("duration.nanoseconds"),
            "{err}"
        );
        let err =
            BagMetadata::parse("rosbag2_bagfile_information:\n  version: 10\n", Path::new("m")).unwrap_err();
        assert!(matches!(err, Error::UnsupportedVersion { version: 10, .. }));
    }
}
