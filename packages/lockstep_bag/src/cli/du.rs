//! `lockstep bag du`: where a bag's bytes are: per topic (messages, payload bytes, share) and, per storage
//! file, per chunk compression (chunks, compressed and uncompressed bytes, ratio), largest first, as aligned
//! text or JSON. Reads every message once as a stream (memory does not grow with the bag) and the chunk
//! indexes of the files' summaries.

use super::du_files::{file_usage, FileUsage};
use crate::BagReader;
use anyhow::{Context, Result};
use serde_json::json;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `lockstep bag du`.
#[derive(Debug, Clone, clap::Args)]
pub struct DuArgs {
    /// Bag directory, or a single MCAP or sqlite3 file.
    pub bag: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One topic's messages.
struct TopicUsage {
    name: String,
    type_name: String,
    messages: u64,
    /// Serialized message bytes (decompressed, for rosbag2's message compression).
    payload_bytes: u64,
}

/// One row of the storage table: a file and one of its chunk compressions (`None`: a file without chunks).
struct ChunkRow<'a> {
    file: String,
    usage: &'a FileUsage,
    compression: Option<(&'a str, super::du_files::ChunkUsage)>,
}

/// Prints where the bytes of `bag` are, as text or (with `json`) JSON. A bag whose messages cannot all be
/// read (a damaged file) is an error, after printing what was counted before the damage (as `info` does).
pub fn du(bag: &Path, json: bool, out: &mut dyn Write) -> Result<()> {
    let reader = BagReader::open(bag).context("cannot open bag")?;
    let (topics, damage) = topic_usage(&reader);
    let files = reader
        .file_paths()
        .iter()
        .map(|p| file_usage(p))
        .collect::<Result<Vec<_>>>()?;
    let rows = chunk_rows(&files);
    if json {
        write_json(&reader, &topics, &files, &rows, out)?;
    } else {
        write_text(&reader, &topics, &files, &rows, out)?;
    }
    match damage {
        Some(e) => Err(e).context("cannot read every message (the figures count those before the damage)"),
        None => Ok(()),
    }
}

/// Every topic's messages and payload bytes, largest first (ties by name), and the error that stopped the
/// reading early, if one did.
fn topic_usage(reader: &BagReader) -> (Vec<TopicUsage>, Option<crate::Error>) {
    let mut topics: Vec<TopicUsage> = (reader.topics().iter())
        .map(|t| TopicUsage {
            name: t.metadata.name.clone(),
            type_name: t.metadata.type_name.clone(),
            messages: 0,
            payload_bytes: 0,
        })
        .collect();
    let mut index: HashMap<String, usize> = topics
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.clone(), i))
        .collect();
    let mut damage = None;
    for message in reader.messages() {
        let message = match message {
            Ok(m) => m,
            Err(e) => {
                damage = Some(e);
                break;
            }
        };
        let i = match index.get(&*message.topic) {
            Some(&i) => i,
            None => {
                index.insert(message.topic.to_string(), topics.len());
                topics.push(TopicUsage {
                    name: message.topic.to_string(),
                    type_name: String::new(),
                    messages: 0,
                    payload_bytes: 0,
                });
                topics.len() - 1
            }
        };
        topics[i].messages += 1;
        topics[i].payload_bytes += message.data.len() as u64;
    }
    topics.sort_by(|a, b| {
        b.payload_bytes
            .cmp(&a.payload_bytes)
            .then_with(|| a.name.cmp(&b.name))
    });
    (topics, damage)
}

/// The storage rows, largest compressed size first (ties by file, then compression name).
fn chunk_rows(files: &[FileUsage]) -> Vec<ChunkRow<'_>> {
    let mut rows = Vec::new();
    for usage in files {
        let file = usage.path.file_name().map_or_else(
            || usage.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        if usage.chunks.is_empty() {
            rows.push(ChunkRow {
                file: file.clone(),
                usage,
                compression: None,
            });
        }
        for (name, chunks) in &usage.chunks {
            rows.push(ChunkRow {
                file: file.clone(),
                usage,
                compression: Some((name.as_str(), *chunks)),
            });
        }
    }
    let size = |r: &ChunkRow<'_>| {
        r.compression
            .map_or(r.usage.size_bytes, |(_, c)| c.compressed_bytes)
    };
    let name = |r: &ChunkRow<'_>| r.compression.map_or("", |(n, _)| n).to_string();
    rows.sort_by(|a, b| {
        (size(b).cmp(&size(a)))
            .then_with(|| a.file.cmp(&b.file))
            .then_with(|| name(a).cmp(&name(b)))
    });
    rows
}

/// `part` of `whole` in percent (0 when the whole is empty).
fn share_percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Uncompressed over compressed bytes, when there are compressed bytes.
fn ratio(c: &super::du_files::ChunkUsage) -> Option<f64> {
    (c.compressed_bytes > 0).then(|| c.uncompressed_bytes as f64 / c.compressed_bytes as f64)
}

/// Prints `rows` (cells, the first row being the header) as columns: text left-aligned in the first
/// `left` columns, right-aligned after.
fn write_table(rows: &[Vec<String>], left: usize, out: &mut dyn Write) -> Result<()> {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &w))| {
                if c < left {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    Ok(())
}

/// Prints the report as aligned text: a line about the bag, the topic table, the storage table, the notes.
fn write_text(
    reader: &BagReader,
    topics: &[TopicUsage],
    files: &[FileUsage],
    rows: &[ChunkRow<'_>],
    out: &mut dyn Write,
) -> Result<()> {
    let total: u64 = topics.iter().map(|t| t.payload_bytes).sum();
    let messages: u64 = topics.iter().map(|t| t.messages).sum();
    let size: u64 = files.iter().map(|f| f.size_bytes).sum();
    writeln!(
        out,
        "{}: {} file{}, {size} bytes on disk, {messages} messages, {total} payload bytes",
        reader.path().display(),
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    )?;
    writeln!(out)?;
    write_table(&topic_table(topics, total), 2, out)?;
    writeln!(out)?;
    write_table(&storage_table(rows), 3, out)?;
    for f in files {
        if let Some(note) = &f.note {
            writeln!(out, "note: {}: {note}", f.path.display())?;
        }
    }
    Ok(())
}

/// The cells of the topic table, its header first.
fn topic_table(topics: &[TopicUsage], total: u64) -> Vec<Vec<String>> {
    let head = ["topic", "type", "messages", "payload bytes", "share"];
    let mut table = vec![head.map(String::from).to_vec()];
    for t in topics {
        table.push(vec![
            t.name.clone(),
            t.type_name.clone(),
            t.messages.to_string(),
            t.payload_bytes.to_string(),
            format!("{:.1} %", share_percent(t.payload_bytes, total)),
        ]);
    }
    table
}

/// The cells of the storage table, its header first; a file without chunks has `-` for what it lacks.
fn storage_table(rows: &[ChunkRow<'_>]) -> Vec<Vec<String>> {
    let head = [
        "file",
        "storage",
        "compression",
        "chunks",
        "compressed bytes",
        "uncompressed bytes",
        "ratio",
    ];
    let mut table = vec![head.map(String::from).to_vec()];
    for r in rows {
        let figures = match r.compression {
            Some((name, c)) => [
                name.to_string(),
                c.chunks.to_string(),
                c.compressed_bytes.to_string(),
                c.uncompressed_bytes.to_string(),
                ratio(&c).map_or_else(|| "-".to_string(), |r| format!("{r:.2}")),
            ],
            None => [
                "-".into(),
                "0".into(),
                r.usage.size_bytes.to_string(),
                "-".into(),
                "-".into(),
            ],
        };
        let mut row = vec![r.file.clone(), r.usage.storage.clone()];
        row.extend(figures);
        table.push(row);
    }
    table
}

/// Prints the report as one JSON object: the bag's totals, `topics`, `files` and `chunks` (per file and
/// compression), in the text's order.
fn write_json(
    reader: &BagReader,
    topics: &[TopicUsage],
    files: &[FileUsage],
    rows: &[ChunkRow<'_>],
    out: &mut dyn Write,
) -> Result<()> {
    let total: u64 = topics.iter().map(|t| t.payload_bytes).sum();
    let messages: u64 = topics.iter().map(|t| t.messages).sum();
    let size: u64 = files.iter().map(|f| f.size_bytes).sum();
    let finite = |v: f64| v.is_finite().then_some(v);
    let topic_items: Vec<serde_json::Value> = (topics.iter())
        .map(|t| {
            json!({
                "topic": t.name,
                "type": t.type_name,
                "messages": t.messages,
                "payload_bytes": t.payload_bytes,
                "share_percent": finite(share_percent(t.payload_bytes, total)),
            })
        })
        .collect();
    let file_items: Vec<serde_json::Value> = (files.iter())
        .map(|f| {
            json!({
                "file": f.path.display().to_string(),
                "storage": f.storage,
                "size_bytes": f.size_bytes,
                "note": f.note,
            })
        })
        .collect();
    let chunk_items: Vec<serde_json::Value> = (rows.iter())
        .filter_map(|r| r.compression.map(|c| (r, c)))
        .map(|(r, (name, c))| {
            json!({
                "file": r.file,
                "compression": name,
                "chunks": c.chunks,
                "compressed_bytes": c.compressed_bytes,
                "uncompressed_bytes": c.uncompressed_bytes,
                "ratio": ratio(&c).and_then(finite),
            })
        })
        .collect();
    let report = json!({
        "bag": reader.path().display().to_string(),
        "size_bytes": size,
        "messages": messages,
        "payload_bytes": total,
        "topics": topic_items,
        "files": file_items,
        "chunks": chunk_items,
    });
    let text = serde_json::to_string_pretty(&report).context("writing the report as JSON")?;
    writeln!(out, "{text}")?;
    Ok(())
}
