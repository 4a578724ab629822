//! The footer and summary section of an MCAP file, read and checked against the file itself: a
//! summary is trusted only when the footer sits at the very end, the summary lies between the data
//! and the footer, its CRC (when set) matches, and every index points at a record of the right kind
//! and length inside the data section.

use super::chunk::{crc32, records, RECORD_HEADER_LEN};
use super::layout::MAGIC_LEN;
use crate::{Error, Result};
use mcap::records::{op, Record};
use mcap::Summary;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Footer record (opcode, length, summary_start, summary_offset_start, summary_crc).
const FOOTER_LEN: u64 = 1 + 8 + 8 + 8 + 4;

/// What the end of an MCAP file says about its summary.
pub(crate) enum SummaryState {
    /// A summary that agrees with the file.
    Present(Box<Summary>),
    /// A valid footer that says the file has no summary (allowed by MCAP; read linearly).
    Absent,
    /// No valid footer, or a summary that does not fit the file: truncated or damaged. The error
    /// says what is wrong and where.
    Untrusted(Error),
}

fn read_at(file: &mut File, path: &Path, offset: u64, buf: &mut [u8]) -> Result<()> {
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::io(path, e))?;
    file.read_exact(buf).map_err(|e| Error::io(path, e))
}

/// Reads and checks the summary of the MCAP file at `path` (an I/O error is the only `Err`).
pub(crate) fn read_summary(path: &Path) -> Result<SummaryState> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    Ok(match check(path, &mut file, size)? {
        Ok(state) => state,
        Err(e) => SummaryState::Untrusted(e),
    })
}

/// `Ok(Err(..))`: the file's summary cannot be trusted, for the reason given; `Err`: an I/O error.
type Checked<T> = Result<std::result::Result<T, Error>>;

/// What the footer at the end of the file says.
struct Footer {
    /// Where the footer record starts (the summary, when present, ends there).
    at: u64,
    /// Where the summary section starts; 0 when the file has none.
    summary_start: u64,
    /// The summary CRC; 0 when not set.
    summary_crc: u32,
    /// The footer's bytes up to its CRC field, which the summary CRC also covers.
    covered: [u8; 25],
}

/// `Ok(Err(..))`: the file's summary cannot be trusted, for the reason given.
fn check(path: &Path, file: &mut File, size: u64) -> Checked<SummaryState> {
    let footer = match read_footer(path, file, size)? {
        Ok(f) => f,
        Err(e) => return Ok(Err(e)),
    };
    if footer.summary_start == 0 {
        return Ok(Ok(SummaryState::Absent));
    }
    let summary_start = footer.summary_start;
    let section = match read_section(path, file, &footer)? {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    let summary = match parse_summary(path, summary_start, &section) {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    // Every index must point at a record of its kind and length inside the data section.
    let places = summary
        .chunk_indexes
        .iter()
        .map(|i| (op::CHUNK, i.chunk_start_offset, i.chunk_length))
        .chain(
            summary
                .attachment_indexes
                .iter()
                .map(|i| (op::ATTACHMENT, i.offset, i.length)),
        )
        .chain(
            summary
                .metadata_indexes
                .iter()
                .map(|i| (op::METADATA, i.offset, i.length)),
        );
    for (opcode, offset, length) in places {
        if let Err(reason) = check_indexed(file, path, summary_start, opcode, offset, length)? {
            return Ok(Err(Error::malformed(path, offset, reason)));
        }
    }
    Ok(Ok(SummaryState::Present(Box::new(summary))))
}

/// Reads the footer and end magic that must close the file, and checks that the summary they
/// announce lies between the start magic and the footer.
fn read_footer(path: &Path, file: &mut File, size: u64) -> Checked<Footer> {
    let bad = |offset: u64, reason: String| Ok(Err(Error::malformed(path, offset, reason)));
    if size < MAGIC_LEN + FOOTER_LEN + MAGIC_LEN {
        return bad(
            size,
            format!("truncated at byte {size}: too short for a footer and end magic"),
        );
    }
    let footer_at = size - FOOTER_LEN - MAGIC_LEN;
    let mut tail = [0u8; (FOOTER_LEN + MAGIC_LEN) as usize];
    read_at(file, path, footer_at, &mut tail)?;
    let u64_at = |b: &[u8], i: usize| {
        let mut le = [0u8; 8];
        le.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(le)
    };
    if &tail[FOOTER_LEN as usize..] != mcap::MAGIC
        || tail[0] != op::FOOTER
        || u64_at(&tail, 1) != FOOTER_LEN - RECORD_HEADER_LEN as u64
    {
        return bad(
            size,
            format!("truncated at byte {size}: no footer and end magic at the end of the file"),
        );
    }
    let summary_start = u64_at(&tail, 9);
    let summary_crc = u32::from_le_bytes([tail[25], tail[26], tail[27], tail[28]]);
    if summary_start != 0 && (summary_start < MAGIC_LEN || summary_start > footer_at) {
        return bad(
            footer_at,
            format!(
                "the footer puts the summary at byte {summary_start}, outside the file's {MAGIC_LEN}..{footer_at} (file shorter than its footer claims?)"
            ),
        );
    }
    let mut covered = [0u8; 25];
    covered.copy_from_slice(&tail[..25]);
    Ok(Ok(Footer {
        at: footer_at,
        summary_start,
        summary_crc,
        covered,
    }))
}

/// Reads the summary section the footer announces and checks its CRC (when set).
fn read_section(path: &Path, file: &mut File, footer: &Footer) -> Checked<Vec<u8>> {
    let summary_start = footer.summary_start;
    let summary_crc = footer.summary_crc;
    // At most the file's size: the bounds were checked by `read_footer`.
    let mut section = vec![0u8; (footer.at - summary_start) as usize];
    read_at(file, path, summary_start, &mut section)?;
    if summary_crc != 0 {
        let mut covered = section.clone();
        covered.extend_from_slice(&footer.covered);
        let computed = crc32(&covered);
        if computed != summary_crc {
            return Ok(Err(Error::malformed(
                path,
                summary_start,
                format!("summary CRC mismatch: stored {summary_crc:#010x}, computed {computed:#010x}"),
            )));
        }
    }
    Ok(Ok(section))
}

/// Parses the records of the summary section (at `summary_start`) into a [`Summary`].
fn parse_summary(path: &Path, summary_start: u64, section: &[u8]) -> std::result::Result<Summary, Error> {
    let parsed = records(section).map_err(|(at, reason)| {
        Error::malformed(
            path,
            summary_start + at as u64,
            format!("in the summary section: {reason}"),
        )
    })?;
    let mut summary = Summary::default();
    let mut acc = mcap::read::ChannelAccumulator::default();
    let mut channel_ids = Vec::new();
    for record in parsed {
        let added = match record {
            Record::Schema { header, data } => acc.add_schema(header, data.into_owned().into()),
            Record::Channel(c) => {
                channel_ids.push(c.id);
                acc.add_channel(c)
            }
            Record::Statistics(s) => {
                summary.stats = Some(s);
                Ok(())
            }
            Record::ChunkIndex(i) => {
                summary.chunk_indexes.push(i);
                Ok(())
            }
            Record::AttachmentIndex(i) => {
                summary.attachment_indexes.push(i);
                Ok(())
            }
            Record::MetadataIndex(i) => {
                summary.metadata_indexes.push(i);
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(e) = added {
            return Err(Error::mcap(path, Some(summary_start), e));
        }
    }
    for id in channel_ids {
        if let Some(c) = acc.get(id) {
            summary.channels.insert(id, c);
        }
    }
    Ok(summary)
}

/// Whether the record an index points at (`offset`, `length`, both from the summary) lies inside
/// the data section (which ends at `data_end`) and starts with `opcode` and the same length.
pub(crate) fn check_indexed(
    file: &mut File,
    path: &Path,
    data_end: u64,
    opcode: u8,
    offset: u64,
    length: u64,
) -> Result<std::result::Result<(), String>> {
    let name = super::layout::record_name(opcode);
    let end = offset.checked_add(length);
    if offset < MAGIC_LEN || length < RECORD_HEADER_LEN as u64 || end.is_none_or(|e| e > data_end) {
        return Ok(Err(format!(
            "the summary indexes a {name} record of {length} bytes at byte {offset}, outside the data section (bytes {MAGIC_LEN}..{data_end}): file shorter than its summary claims, summary not trusted"
        )));
    }
    let mut head = [0u8; RECORD_HEADER_LEN];
    read_at(file, path, offset, &mut head)?;
    let mut le = [0u8; 8];
    le.copy_from_slice(&head[1..]);
    let found = u64::from_le_bytes(le);
    if head[0] != opcode || found != length - RECORD_HEADER_LEN as u64 {
        return Ok(Err(format!(
            "the summary indexes a {name} record of {length} bytes at byte {offset}, but the file holds a {} record of {} bytes there: summary not trusted",
            super::layout::record_name(head[0]),
            found.saturating_add(RECORD_HEADER_LEN as u64)
        )));
    }
    Ok(Ok(()))
}
