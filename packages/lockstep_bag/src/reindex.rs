//! Crash recovery. A writer killed mid-file leaves an MCAP without summary and footer (and maybe a
//! stale or missing metadata.yaml). [`reindex`] keeps every record up to the last complete chunk,
//! rewrites such files into valid, indexed MCAP files and rebuilds metadata.yaml.

use crate::mcapio::{self, ScanEnd};
use crate::metadata::{
    file_name_of, union_range, BagMetadata, FileInformation, TopicMetadata, METADATA_FILE,
};
use crate::qos::parse_qos_yaml;
use crate::reader::{storage_files_in, BagReader};
use crate::writer::{rosbag2_record, DEFAULT_CHUNK_SIZE_BYTES, MCAP_PROFILE, ROSBAG2_METADATA_NAME};
use crate::{Error, Result};
use mcap::records::{Channel, MessageHeader, Record};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// What reindexing did to one storage file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReindexedFile {
    /// The file.
    pub path: PathBuf,
    /// The file already had a valid footer and was left untouched.
    pub was_complete: bool,
    /// Messages kept.
    pub messages: u64,
    /// Bytes at the end of the damaged file that could not be used (0 for complete files).
    pub bytes_dropped: u64,
    /// Why reading stopped early, for damaged files.
    pub stop_reason: Option<String>,
}

/// The outcome of [`reindex`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReindexReport {
    /// One entry per storage file, in bag order.
    pub files: Vec<ReindexedFile>,
    /// The metadata.yaml that was written.
    pub metadata: BagMetadata,
}

#[derive(Default)]
struct FileScan {
    schemas: BTreeMap<u16, (String, String, Vec<u8>)>,
    channels: BTreeMap<u16, Channel>,
    counts: BTreeMap<u16, u64>,
    range: Option<(u64, u64)>,
    messages: u64,
}

/// Repairs the bag directory `dir` in place: damaged MCAP files are rewritten with everything up to
/// their last complete chunk; metadata.yaml is rebuilt from what the files hold (keeping the topic
/// order, `ros_distro` and `custom_data` of an existing metadata.yaml when it is readable).
pub fn reindex(dir: &Path) -> Result<ReindexReport> {
    if !std::fs::metadata(dir).map_err(|e| Error::io(dir, e))?.is_dir() {
        return Err(Error::NotABag {
            path: dir.to_path_buf(),
            reason: "reindex expects a bag directory, not a file".into(),
        });
    }
    let old = BagMetadata::read(&dir.join(METADATA_FILE)).ok();
    if let Some(md) = old.as_ref() {
        let mode = md.compression_mode.trim();
        if !mode.is_empty() && !mode.eq_ignore_ascii_case("none") {
            return Err(Error::ReindexCompressed {
                path: dir.to_path_buf(),
                mode: md.compression_mode.clone(),
                format: md.compression_format.clone(),
            });
        }
    }
    let files = storage_files_in(dir)?;
    let mcaps: Vec<PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "mcap"))
        .cloned()
        .collect();
    if mcaps.is_empty() {
        if files.is_empty() {
            return Err(Error::NotABag {
                path: dir.to_path_buf(),
                reason: "no .mcap or .db3 files to reindex".into(),
            });
        }
        return reindex_sqlite(dir, &files, old.as_ref());
    }

    // Pass 1: learn what each file holds, up to its first damaged record.
    let mut scans = Vec::new();
    for path in &mcaps {
        let mut scan = FileScan::default();
        let end = mcapio::scan(path, |_, record| {
            match record {
                Record::Schema { header, data } => {
                    scan.schemas.entry(header.id).or_insert((
                        header.name,
                        header.encoding,
                        data.into_owned(),
                    ));
                }
                Record::Channel(c) => {
                    scan.channels.entry(c.id).or_insert(c);
                }
                Record::Message { header, .. } => {
                    *scan.counts.entry(header.channel_id).or_default() += 1;
                    scan.messages += 1;
                    scan.range = union_range(scan.range, header.log_time, header.log_time);
                }
                _ => {}
            }
            Ok(())
        })?;
        scans.push((scan, end));
    }

    let metadata = rebuild_metadata(&mcaps, &scans, old.as_ref());

    // Pass 2: rewrite the damaged files.
    let mut report = Vec::new();
    for (path, (scan, end)) in mcaps.iter().zip(&scans) {
        let size = std::fs::metadata(path).map_err(|e| Error::io(path, e))?.len();
        if end.complete {
            report.push(ReindexedFile {
                path: path.clone(),
                was_complete: true,
                messages: scan.messages,
                bytes_dropped: 0,
                stop_reason: None,
            });
            continue;
        }
        rewrite(path, end, &metadata)?;
        report.push(ReindexedFile {
            path: path.clone(),
            was_complete: false,
            messages: scan.messages,
            bytes_dropped: size.saturating_sub(end.valid_end),
            stop_reason: end.error.as_ref().map(|e| e.to_string()),
        });
    }
    metadata.write_to_dir(dir)?;
    Ok(ReindexReport {
        files: report,
        metadata,
    })
}

fn rebuild_metadata(
    paths: &[PathBuf],
    scans: &[(FileScan, ScanEnd)],
    old: Option<&BagMetadata>,
) -> BagMetadata {
    // topic name -> (metadata, count), first definition wins.
    let mut topics: BTreeMap<String, (TopicMetadata, u64)> = BTreeMap::new();
    let mut files = Vec::new();
    for (path, (scan, _)) in paths.iter().zip(scans) {
        for (id, channel) in &scan.channels {
            let count = scan.counts.get(id).copied().unwrap_or(0);
            let entry = topics.entry(channel.topic.clone()).or_insert_with(|| {
                let type_name = scan
                    .schemas
                    .get(&channel.schema_id)
                    .map(|s| s.0.clone())
                    .unwrap_or_default();
                let qos_text = channel
                    .metadata
                    .get("offered_qos_profiles")
                    .cloned()
                    .unwrap_or_default();
                let old_topic = old.and_then(|o| {
                    o.topics_with_message_count
                        .iter()
                        .find(|t| t.topic_metadata.name == channel.topic)
                });
                let offered_qos_profiles = parse_qos_yaml(&qos_text, &channel.topic)
                    .ok()
                    .or_else(|| old_topic.map(|t| t.topic_metadata.offered_qos_profiles.clone()))
                    .unwrap_or_default();
                (
                    TopicMetadata {
                        name: channel.topic.clone(),
                        type_name,
                        serialization_format: channel.message_encoding.clone(),
                        offered_qos_profiles,
                        type_description_hash: channel
                            .metadata
                            .get("topic_type_hash")
                            .cloned()
                            .unwrap_or_default(),
                    },
                    0,
                )
            });
            entry.1 += count;
        }
        files.push(FileInformation::new(
            file_name_of(path),
            scan.range,
            scan.messages,
        ));
    }
    // Keep the old metadata's topic order (and its topics that have no channel), then the rest.
    let mut ordered = Vec::new();
    let mut seen = BTreeSet::new();
    if let Some(old) = old {
        for t in &old.topics_with_message_count {
            let name = &t.topic_metadata.name;
            if !seen.insert(name.clone()) {
                continue;
            }
            match topics.get(name) {
                Some((m, c)) => ordered.push((m.clone(), *c)),
                None => ordered.push((t.topic_metadata.clone(), 0)),
            }
        }
    }
    for (name, (m, c)) in &topics {
        if seen.insert(name.clone()) {
            ordered.push((m.clone(), *c));
        }
    }
    BagMetadata {
        custom_data: old.map(|o| o.custom_data.clone()).unwrap_or_default(),
        ros_distro: old
            .map(|o| o.ros_distro.clone())
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| "jazzy".to_string()),
        ..BagMetadata::describe("mcap", ordered, files)
    }
}

fn rewrite(path: &Path, end: &ScanEnd, metadata: &BagMetadata) -> Result<()> {
    let tmp = path.with_extension("mcap.reindex-tmp");
    let file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let compression = match end.compression.as_str() {
        "zstd" => Some(mcap::Compression::Zstd),
        "lz4" => Some(mcap::Compression::Lz4),
        _ => None,
    };
    let mut out = mcap::WriteOptions::new()
        .profile(MCAP_PROFILE)
        .library(format!("lockstep_bag/{} (reindex)", env!("CARGO_PKG_VERSION")))
        .compression(compression)
        .compression_threads(1)
        .chunk_size(Some(DEFAULT_CHUNK_SIZE_BYTES))
        .create(BufWriter::with_capacity(1 << 20, file))
        .map_err(|e| Error::mcap(&tmp, None, e))?;
    let mcap_err = |e| Error::mcap(&tmp, None, e);
    // The second scan stops at the same damaged record as the first: the bytes are the same.
    mcapio::scan(path, |_, record| {
        match record {
            Record::Schema { header, data } => {
                out.add_schema_with_id(header.id, &header.name, &header.encoding, &data)
                    .map_err(mcap_err)?;
            }
            Record::Channel(c) => {
                out.add_channel_with_id(c.id, c.schema_id, &c.topic, &c.message_encoding, &c.metadata)
                    .map_err(mcap_err)?;
            }
            Record::Message { header, data } => {
                let header = MessageHeader { ..header };
                out.write_to_known_channel(&header, &data).map_err(mcap_err)?;
            }
            Record::Attachment { header, data, .. } => {
                out.attach(&mcap::Attachment {
                    log_time: header.log_time,
                    create_time: header.create_time,
                    name: header.name,
                    media_type: header.media_type,
                    data,
                })
                .map_err(mcap_err)?;
            }
            // The old rosbag2 record describes the bag before the crash; a fresh one follows.
            Record::Metadata(m) if m.name != ROSBAG2_METADATA_NAME => {
                out.write_metadata(&m).map_err(mcap_err)?
            }
            _ => {}
        }
        Ok(())
    })?;
    out.write_metadata(&rosbag2_record(metadata)).map_err(mcap_err)?;
    out.finish().map_err(mcap_err)?;
    drop(out);
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

fn reindex_sqlite(dir: &Path, files: &[PathBuf], old: Option<&BagMetadata>) -> Result<ReindexReport> {
    let db3: Vec<PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "db3"))
        .cloned()
        .collect();
    let mut metadata = BagReader::open_files(dir, &db3)?.metadata().clone();
    if let Some(old) = old {
        metadata.custom_data = old.custom_data.clone();
        metadata.ros_distro = old.ros_distro.clone();
    }
    let report = db3
        .iter()
        .zip(&metadata.files)
        .map(|(p, f)| ReindexedFile {
            path: p.clone(),
            was_complete: true,
            messages: f.message_count,
            bytes_dropped: 0,
            stop_reason: None,
        })
        .collect();
    metadata.write_to_dir(dir)?;
    Ok(ReindexReport {
        files: report,
        metadata,
    })
}
