//! Crash and damage recovery. A writer killed mid-file leaves an MCAP file without summary and footer
//! (and maybe a stale or missing metadata.yaml); a bad disk or copy leaves damaged chunks. [`reindex_with`]
//! keeps every record it can verify, skipping damaged records and going on with the next chunk that
//! decompresses and matches its CRC, and writes valid, indexed MCAP files and a rebuilt metadata.yaml.
//!
//! It never loses what it could read: by default it writes a new bag (or file) and leaves the input
//! untouched; in place, a damaged file is replaced only once its rewritten copy is on disk and reads back
//! with at least the messages salvaged. A file that is not MCAP is refused before anything is written.

mod report;
mod salvage;
mod scan;
mod write;

pub use report::{ReindexReport, ReindexedFile};
pub use salvage::SkippedBytes;

use scan::FileScan;

use crate::metadata::{file_name_of, BagMetadata, FileInformation, TopicMetadata, METADATA_FILE};
use crate::qos::parse_qos_yaml;
use crate::reader::{storage_files_in, BagReader};
use crate::{Error, Result};
use mcap::records::Channel;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where [`reindex_with`] puts what it salvages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReindexTarget {
    /// A new bag directory (for a bag directory) or MCAP file (for a single file) that must not exist
    /// yet (an empty directory is accepted for a bag). The input is only read.
    NewOutput(PathBuf),
    /// Replace each damaged file of the input, once its rewritten copy reads back with at least the
    /// messages salvaged from it, and rewrite metadata.yaml.
    InPlace,
}

/// The output [`reindex_with`] uses when none is given: `<bag>.reindexed` beside a bag directory,
/// `<name>.reindexed.mcap` beside a single file.
pub fn default_output(input: &Path) -> PathBuf {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bag".into());
    let parent = input.parent().unwrap_or_else(|| Path::new(""));
    if input.is_dir() {
        parent.join(format!("{name}.reindexed"))
    } else {
        let stem = name.strip_suffix(".mcap").unwrap_or(&name);
        parent.join(format!("{stem}.reindexed.mcap"))
    }
}

/// What [`reindex_with`] would salvage from the bag directory or MCAP file `input`, without writing
/// anything: per file what is readable, and the metadata (per-topic message counts) of that.
pub fn survey(input: &Path) -> Result<ReindexReport> {
    let meta = crate::reader::bag_path_metadata(input)?;
    let files = if meta.is_dir() {
        storage_files_in(input)?
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "mcap"))
            .collect()
    } else {
        vec![input.to_path_buf()]
    };
    let scans = files
        .iter()
        .map(|p| FileScan::of(p))
        .collect::<Result<Vec<_>>>()?;
    let old = BagMetadata::read(&input.join(METADATA_FILE)).ok();
    let metadata = rebuild_metadata(&files, &scans, old.as_ref());
    Ok(ReindexReport {
        output: input.to_path_buf(),
        files: files.iter().zip(&scans).map(|(p, s)| s.report(p, p)).collect(),
        metadata,
    })
}

/// Repairs the bag directory `dir` in place: `reindex_with(dir, &ReindexTarget::InPlace)`.
pub fn reindex(dir: &Path) -> Result<ReindexReport> {
    if !std::fs::metadata(dir).map_err(|e| Error::io(dir, e))?.is_dir() {
        return Err(Error::NotABag {
            path: dir.to_path_buf(),
            reason: "reindex expects a bag directory, not a file".into(),
        });
    }
    reindex_with(dir, &ReindexTarget::InPlace)
}

/// Salvages the bag directory or MCAP file `input` into `target`. The metadata.yaml written keeps the
/// topic order, `ros_distro` and `custom_data` of an existing readable metadata.yaml. Fails, writing
/// nothing, when a storage file is not MCAP or the output exists.
pub fn reindex_with(input: &Path, target: &ReindexTarget) -> Result<ReindexReport> {
    let meta = crate::reader::bag_path_metadata(input)?;
    if let ReindexTarget::NewOutput(out) = target {
        check_new_output(out, meta.is_dir())?;
    }
    if meta.is_dir() {
        reindex_dir(input, target)
    } else {
        reindex_file(input, target)
    }
}

fn check_new_output(out: &Path, dir: bool) -> Result<()> {
    let exists = match std::fs::symlink_metadata(out) {
        Ok(m) => {
            !(dir
                && m.is_dir()
                && std::fs::read_dir(out)
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(false))
        }
        Err(_) => false,
    };
    if exists {
        return Err(Error::OutputExists {
            path: out.to_path_buf(),
        });
    }
    Ok(())
}

fn reindex_file(input: &Path, target: &ReindexTarget) -> Result<ReindexReport> {
    let scan = FileScan::of(input)?;
    let output = match target {
        ReindexTarget::NewOutput(out) => out.clone(),
        ReindexTarget::InPlace => input.to_path_buf(),
    };
    let metadata = rebuild_metadata(std::slice::from_ref(&output), std::slice::from_ref(&scan), None);
    let report = scan.report(input, &output);
    match target {
        ReindexTarget::NewOutput(out) if scan.outcome.complete => copy_new(input, out)?,
        ReindexTarget::NewOutput(out) => {
            write_then_rename(input, &scan, out, &metadata)?;
        }
        ReindexTarget::InPlace if scan.outcome.complete => {}
        ReindexTarget::InPlace => write_then_rename(input, &scan, input, &metadata)?,
    }
    Ok(ReindexReport {
        output,
        files: vec![report],
        metadata,
    })
}

fn reindex_dir(dir: &Path, target: &ReindexTarget) -> Result<ReindexReport> {
    let old = BagMetadata::read(&dir.join(METADATA_FILE)).ok();
    if let Some(md) = old.as_ref() {
        refuse_compressed(dir, md)?;
    }
    let (mcaps, others) = storage_files_by_kind(dir)?;
    let out_dir = match target {
        ReindexTarget::NewOutput(out) => out.clone(),
        ReindexTarget::InPlace => dir.to_path_buf(),
    };
    // Scan everything (refusing a file that is not MCAP) before writing anything.
    let scans = mcaps
        .iter()
        .map(|p| FileScan::of(p))
        .collect::<Result<Vec<_>>>()?;
    let mut metadata = if mcaps.is_empty() {
        sqlite_metadata(dir, &others, old.as_ref())?
    } else {
        rebuild_metadata(&mcaps, &scans, old.as_ref())
    };
    let mut created = Vec::new();
    let outcome = write_dir(
        target,
        &out_dir,
        &mcaps,
        &others,
        &scans,
        &mut metadata,
        &mut created,
    );
    if outcome.is_err() {
        remove_created(&created);
    }
    outcome?;
    let reports = if mcaps.is_empty() {
        sqlite_reports(&others, &metadata, &out_dir)
    } else {
        mcaps
            .iter()
            .zip(&scans)
            .map(|(p, s)| s.report(p, &out_dir.join(file_name_of(p))))
            .collect()
    };
    Ok(ReindexReport {
        output: out_dir,
        files: reports,
        metadata,
    })
}

/// Refuses a bag written with rosbag2's file or message compression: its storage files cannot be
/// salvaged record by record.
fn refuse_compressed(dir: &Path, md: &BagMetadata) -> Result<()> {
    let mode = md.compression_mode.trim();
    if !mode.is_empty() && !mode.eq_ignore_ascii_case("none") {
        return Err(Error::ReindexCompressed {
            path: dir.to_path_buf(),
            mode: md.compression_mode.clone(),
            format: md.compression_format.clone(),
        });
    }
    Ok(())
}

/// The storage files of `dir`: the MCAP files, and the others (sqlite3). A directory with neither is
/// not a bag.
fn storage_files_by_kind(dir: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let files = storage_files_in(dir)?;
    let (mcaps, others): (Vec<PathBuf>, Vec<PathBuf>) = files
        .iter()
        .cloned()
        .partition(|p| p.extension().is_some_and(|e| e == "mcap"));
    if mcaps.is_empty() && others.is_empty() {
        return Err(Error::NotABag {
            path: dir.to_path_buf(),
            reason: "no .mcap or .db3 files to reindex".into(),
        });
    }
    Ok((mcaps, others))
}

/// Leaves no half-written output behind (the input is untouched): removes what was made, newest first.
fn remove_created(created: &[PathBuf]) {
    for p in created.iter().rev() {
        let _ = if p.is_dir() {
            std::fs::remove_dir(p)
        } else {
            std::fs::remove_file(p)
        };
    }
}

/// The report of sqlite3 files, copied whole: each complete, with the count its metadata gives.
fn sqlite_reports(others: &[PathBuf], metadata: &BagMetadata, out_dir: &Path) -> Vec<ReindexedFile> {
    others
        .iter()
        .zip(&metadata.files)
        .map(|(p, f)| ReindexedFile {
            path: p.clone(),
            output: out_dir.join(file_name_of(p)),
            was_complete: true,
            messages: f.message_count,
            chunks: 0,
            skipped: Vec::new(),
            bytes_dropped: 0,
            stop_reason: None,
            messages_without_channel: 0,
        })
        .collect()
}

/// Writes the output of a bag directory; records in `created` every path it made (for clean-up).
#[allow(clippy::too_many_arguments)]
fn write_dir(
    target: &ReindexTarget,
    out_dir: &Path,
    mcaps: &[PathBuf],
    others: &[PathBuf],
    scans: &[FileScan],
    metadata: &mut BagMetadata,
    created: &mut Vec<PathBuf>,
) -> Result<()> {
    let in_place = *target == ReindexTarget::InPlace;
    if !in_place && !out_dir.exists() {
        std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir, e))?;
        created.push(out_dir.to_path_buf());
    }
    // In place, every rewritten copy is made and checked before the first original is replaced.
    let mut replacements = Vec::new();
    for (path, scan) in mcaps.iter().zip(scans) {
        let name = file_name_of(path);
        let dst = out_dir.join(&name);
        if scan.outcome.complete {
            if !in_place {
                created.push(dst.clone());
                copy_new(path, &dst)?;
            }
            continue;
        }
        let tmp = out_dir.join(format!(".{name}.reindex-tmp"));
        created.push(tmp.clone());
        write::rewrite(path, scan, &tmp, metadata)?;
        replacements.push((tmp, dst));
    }
    if !in_place {
        for p in others {
            let dst = out_dir.join(file_name_of(p));
            created.push(dst.clone());
            copy_new(p, &dst)?;
        }
    }
    for (tmp, dst) in replacements {
        std::fs::rename(&tmp, &dst).map_err(|e| Error::io(&dst, e))?;
        if !in_place {
            created.push(dst);
        }
    }
    if !in_place {
        created.push(out_dir.join(METADATA_FILE));
    }
    // metadata.yaml goes through a temporary file that a failed write (a full disk) leaves behind.
    created.push(out_dir.join(format!(".{METADATA_FILE}.tmp")));
    metadata.write_to_dir(out_dir)
}

/// Rewrites `input` into `dst` through a temporary file beside it, replaced only when complete.
fn write_then_rename(input: &Path, scan: &FileScan, dst: &Path, metadata: &BagMetadata) -> Result<()> {
    let name = file_name_of(dst);
    let tmp = dst.with_file_name(format!(".{name}.reindex-tmp"));
    let outcome = write::rewrite(input, scan, &tmp, metadata)
        .and_then(|_| std::fs::rename(&tmp, dst).map_err(|e| Error::io(dst, e)));
    if outcome.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    outcome
}

/// Copies `src` to `dst`, which must not exist.
fn copy_new(src: &Path, dst: &Path) -> Result<()> {
    let mut from = std::fs::File::open(src).map_err(|e| Error::io(src, e))?;
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dst)
        .map_err(|e| Error::io(dst, e))?;
    std::io::copy(&mut from, &mut to).map_err(|e| Error::io(dst, e))?;
    to.sync_all().map_err(|e| Error::io(dst, e))
}

fn rebuild_metadata(paths: &[PathBuf], scans: &[FileScan], old: Option<&BagMetadata>) -> BagMetadata {
    // topic name -> (metadata, count), first definition wins.
    let mut topics: BTreeMap<String, (TopicMetadata, u64)> = BTreeMap::new();
    let mut files = Vec::new();
    for (path, scan) in paths.iter().zip(scans) {
        for (id, channel) in &scan.channels {
            let count = scan.per_channel.get(id).map_or(0, |c| c.0);
            let entry = topics
                .entry(channel.topic.clone())
                .or_insert_with(|| (topic_metadata(scan, channel, old), 0));
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

fn topic_metadata(scan: &FileScan, channel: &Channel, old: Option<&BagMetadata>) -> TopicMetadata {
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
    }
}

fn sqlite_metadata(dir: &Path, files: &[PathBuf], old: Option<&BagMetadata>) -> Result<BagMetadata> {
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
    Ok(metadata)
}
