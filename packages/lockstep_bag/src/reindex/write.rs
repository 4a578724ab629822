//! Writing what a scan salvaged into a new, indexed MCAP file.

use super::salvage;
use super::scan::FileScan;
use crate::metadata::BagMetadata;
use crate::writer::{rosbag2_record, DEFAULT_CHUNK_SIZE_BYTES, MCAP_PROFILE, ROSBAG2_METADATA_NAME};
use crate::{Error, Result};
use mcap::records::Record;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes the usable records of `input` (as `scan` found them) to the new file `output` with a fresh
/// summary and rosbag2 record describing `metadata`, makes it durable, then checks it reads back
/// with at least the messages the scan counted. Returns the messages written.
pub(super) fn rewrite(input: &Path, scan: &FileScan, output: &Path, metadata: &BagMetadata) -> Result<u64> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(output)
        .map_err(|e| Error::io(output, e))?;
    let compression = match scan.outcome.compression.as_str() {
        "zstd" => Some(mcap::Compression::Zstd),
        "lz4" => Some(mcap::Compression::Lz4),
        _ => None,
    };
    let mcap_err = |e| Error::mcap(output, None, e);
    let mut out = mcap::WriteOptions::new()
        .profile(MCAP_PROFILE)
        .library(format!("lockstep_bag/{} (reindex)", env!("CARGO_PKG_VERSION")))
        .compression(compression)
        .compression_threads(1)
        .chunk_size(Some(DEFAULT_CHUNK_SIZE_BYTES))
        .create(BufWriter::with_capacity(1 << 20, file))
        .map_err(mcap_err)?;
    for (&id, (name, encoding, data)) in scan.schemas.iter().filter(|(&id, _)| id != 0) {
        out.add_schema_with_id(id, name, encoding, data)
            .map_err(mcap_err)?;
    }
    for (&id, c) in &scan.channels {
        let schema_id = if scan.schemas.contains_key(&c.schema_id) {
            c.schema_id
        } else {
            0
        };
        out.add_channel_with_id(id, schema_id, &c.topic, &c.message_encoding, &c.metadata)
            .map_err(mcap_err)?;
    }
    let mut written = 0u64;
    salvage::scan(input, |record| {
        match record {
            Record::Message { header, data } if scan.channels.contains_key(&header.channel_id) => {
                out.write_to_known_channel(&header, &data).map_err(mcap_err)?;
                written += 1;
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
            // The old rosbag2 record describes the bag before the damage; a fresh one follows.
            Record::Metadata(m) if m.name != ROSBAG2_METADATA_NAME => {
                out.write_metadata(&m).map_err(mcap_err)?
            }
            _ => {}
        }
        Ok(())
    })?;
    out.write_metadata(&rosbag2_record(metadata)).map_err(mcap_err)?;
    out.finish().map_err(mcap_err)?;
    let mut buffered = out.into_inner();
    buffered.flush().map_err(|e| Error::io(output, e))?;
    let file: &File = buffered.get_ref();
    file.sync_all().map_err(|e| Error::io(output, e))?;
    drop(buffered);
    verify(output, scan.messages)?;
    Ok(written)
}

/// Reads `path` back: it must be a complete MCAP file holding at least `expected` messages.
fn verify(path: &Path, expected: u64) -> Result<()> {
    let mut messages = 0u64;
    let complete = salvage::check_magic(path)?
        && salvage::scan(path, |r| {
            if matches!(r, Record::Message { .. }) {
                messages += 1;
            }
            Ok(())
        })?
        .complete;
    if complete && messages >= expected {
        return Ok(());
    }
    Err(Error::io(
        path,
        std::io::Error::other(format!(
            "the rewritten file reads back {} with {messages} messages where {expected} were salvaged",
            if complete { "complete" } else { "damaged" }
        )),
    ))
}
