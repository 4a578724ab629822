//! Low-level MCAP file access: summary, single records and chunks by their index, and a tolerant
//! linear scan (for files without a summary, e.g. after a crash).
//!
//! Every length read from the file is checked against what is left of the file (or of the record or
//! chunk holding it) before anything is allocated or sliced for it, and every record's fields are
//! checked before the `mcap` crate parses them ([`layout`]): a malformed file is an error naming the
//! byte offset, never a panic or an allocation larger than the file.

mod chunk;
mod layout;
mod summary;

pub(crate) use chunk::{decompress as decompress_chunk, records as records_in_chunk};
use layout::MAGIC_LEN;
pub(crate) use layout::{parse_record, record_name};
pub(crate) use summary::{read_summary, SummaryState};

use crate::{Error, Result};
pub(crate) use chunk::RECORD_HEADER_LEN;
use mcap::records::{ChunkIndex, Record};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// Reads one whole record at `offset` (as given by an index) and hands its parsed form to `f`. The
/// record must lie inside the file and start with a header of the same length.
pub(crate) fn with_record_at<T>(
    path: &Path,
    file: &mut File,
    offset: u64,
    length: u64,
    f: impl FnOnce(Record<'_>) -> Result<T>,
) -> Result<T> {
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let body_len = length.checked_sub(RECORD_HEADER_LEN as u64);
    let inside = offset.checked_add(length).is_some_and(|end| end <= size);
    let Some(body_len) = body_len.filter(|_| inside) else {
        return Err(Error::malformed(
            path,
            offset,
            format!("an index points at a record of {length} bytes there, past the end of the file ({size} bytes)"),
        ));
    };
    let mut head = [0u8; RECORD_HEADER_LEN];
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::io(path, e))?;
    file.read_exact(&mut head).map_err(|e| Error::io(path, e))?;
    let mut le = [0u8; 8];
    le.copy_from_slice(&head[1..]);
    if u64::from_le_bytes(le) != body_len {
        return Err(Error::malformed(
            path,
            offset,
            format!(
                "an index says the record there has {length} bytes, the record's header says {}",
                u64::from_le_bytes(le).saturating_add(RECORD_HEADER_LEN as u64)
            ),
        ));
    }
    // At most the file's size: checked above.
    let mut body = vec![0u8; body_len as usize];
    file.read_exact(&mut body).map_err(|e| Error::io(path, e))?;
    let record = parse_record(head[0], &body).map_err(|reason| Error::malformed(path, offset, reason))?;
    f(record)
}

/// Decompresses the chunk described by `index` and calls `f` for each record inside with its
/// position (0-based) in the chunk.
pub(crate) fn for_each_in_chunk(
    path: &Path,
    file: &mut File,
    index: &ChunkIndex,
    mut f: impl FnMut(usize, Record<'_>) -> Result<()>,
) -> Result<()> {
    let offset = index.chunk_start_offset;
    with_record_at(path, file, offset, index.chunk_length, |record| match record {
        Record::Chunk { header, data } => {
            for (i, inner) in chunk_records(path, offset, &header, &data)?
                .into_iter()
                .enumerate()
            {
                f(i, inner)?;
            }
            Ok(())
        }
        _ => Err(Error::malformed(
            path,
            offset,
            "an index points at a record that is not a chunk",
        )),
    })
}

/// The records of a chunk (at file `offset`), decompressed, checked and owned.
fn chunk_records(
    path: &Path,
    offset: u64,
    header: &mcap::records::ChunkHeader,
    data: &[u8],
) -> Result<Vec<Record<'static>>> {
    let bytes = chunk::decompress(header, data).map_err(|reason| Error::malformed(path, offset, reason))?;
    let records = chunk::records(&bytes).map_err(|(at, reason)| {
        Error::malformed(
            path,
            offset,
            format!("chunk record, at byte {at} of its records: {reason}"),
        )
    })?;
    Ok(records.into_iter().map(Record::into_owned).collect())
}

/// Position of a record found by [`scan`]: the top-level record's byte offset and, for records
/// inside a chunk, the index within that chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RecordPos {
    pub offset: u64,
    pub in_chunk: Option<usize>,
}

/// How a linear scan ended.
#[derive(Debug)]
pub(crate) struct ScanEnd {
    /// Byte offset just past the last record that was read completely.
    pub valid_end: u64,
    /// Whether the scan reached the footer and end magic.
    pub complete: bool,
    /// The error that stopped the scan early, if any (a truncated tail is reported here).
    pub error: Option<Error>,
    /// Chunks read completely.
    pub chunks: u64,
    /// Compression of the last chunk seen ("" or "zstd" / "lz4").
    pub compression: String,
}

/// Reads an MCAP file from the start, calling `f` for each top-level record and for each record in
/// each complete chunk. A damaged or truncated tail does not fail the scan: it stops there and the
/// returned [`ScanEnd`] says where and why. Errors returned by `f` do fail it.
pub(crate) fn scan(path: &Path, mut f: impl FnMut(RecordPos, Record<'_>) -> Result<()>) -> Result<ScanEnd> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut input = BufReader::with_capacity(64 * 1024, file);
    let mut end = ScanEnd {
        valid_end: 0,
        complete: false,
        error: None,
        chunks: 0,
        compression: String::new(),
    };
    if let Some(e) = check_start_magic(path, size, &mut input)? {
        end.error = Some(e);
        return Ok(end);
    }
    let mut offset = MAGIC_LEN;
    end.valid_end = offset;
    let mut body = Vec::new();
    loop {
        let Some((opcode, len)) = read_record(path, &mut input, size, offset, &mut body, &mut end)? else {
            break;
        };
        let record_offset = offset;
        let record = match parse_record(opcode, &body) {
            Ok(r) => r,
            Err(reason) => {
                end.error = Some(Error::malformed(path, record_offset, reason));
                break;
            }
        };
        match record {
            Record::Chunk { header, data } => {
                // Decode the whole chunk before passing anything on, so a damaged chunk is dropped
                // entirely rather than half-used.
                let records = match chunk_records(path, record_offset, &header, &data) {
                    Ok(r) => r,
                    Err(e) => {
                        end.error = Some(e);
                        break;
                    }
                };
                for (i, r) in records.into_iter().enumerate() {
                    let pos = RecordPos {
                        offset: record_offset,
                        in_chunk: Some(i),
                    };
                    f(pos, r)?;
                }
                end.chunks += 1;
                end.compression = header.compression;
            }
            Record::Footer(_) => {
                offset += RECORD_HEADER_LEN as u64 + len;
                end.valid_end = offset;
                match check_end_magic(path, size, offset, &mut input) {
                    Some(e) => end.error = Some(e),
                    None => end.complete = true,
                }
                break;
            }
            other => f(
                RecordPos {
                    offset: record_offset,
                    in_chunk: None,
                },
                other,
            )?,
        }
        offset += RECORD_HEADER_LEN as u64 + len;
        end.valid_end = offset;
    }
    // Complete means footer and end magic were read without any error.
    end.complete = end.complete && end.error.is_none();
    Ok(end)
}

/// Reads the magic that opens an MCAP file. Returns why the file is not one (too short, other
/// bytes); an I/O error fails.
fn check_start_magic(path: &Path, size: u64, input: &mut impl Read) -> Result<Option<Error>> {
    let mut magic = [0u8; MAGIC_LEN as usize];
    if size < MAGIC_LEN {
        return Ok(Some(Error::malformed(
            path,
            0,
            format!("truncated at byte {size}: no MCAP magic"),
        )));
    }
    input.read_exact(&mut magic).map_err(|e| Error::io(path, e))?;
    if magic != *mcap::MAGIC {
        return Ok(Some(Error::mcap(path, Some(0), mcap::McapError::BadMagic)));
    }
    Ok(None)
}

/// Reads the record header at `offset` and the body it announces into `body`. Returns the opcode and
/// body length; or `None` with `end.error` set when the file ends, or the length claims more than is
/// left, there (the scan stops). An I/O error fails.
#[inline]
fn read_record(
    path: &Path,
    input: &mut impl Read,
    size: u64,
    offset: u64,
    body: &mut Vec<u8>,
    end: &mut ScanEnd,
) -> Result<Option<(u8, u64)>> {
    let left = size - offset;
    if left == 0 {
        end.error = Some(Error::malformed(
            path,
            offset,
            format!("truncated at byte {offset}: the file ends without a footer"),
        ));
        return Ok(None);
    }
    if left < RECORD_HEADER_LEN as u64 {
        end.error = Some(Error::malformed(
            path,
            offset,
            format!("truncated at byte {size}: {left} bytes where a record header needs 9"),
        ));
        return Ok(None);
    }
    let mut head = [0u8; RECORD_HEADER_LEN];
    input.read_exact(&mut head).map_err(|e| Error::io(path, e))?;
    let opcode = head[0];
    let mut le = [0u8; 8];
    le.copy_from_slice(&head[1..]);
    let len = u64::from_le_bytes(le);
    let room = left - RECORD_HEADER_LEN as u64;
    if len > room {
        end.error = Some(Error::malformed(
            path,
            offset,
            format!(
                "{} record claims {len} bytes but only {room} remain in the file (truncated or damaged)",
                layout::record_name(opcode)
            ),
        ));
        return Ok(None);
    }
    // At most what is left of the file: checked just above.
    body.resize(len as usize, 0);
    input.read_exact(body).map_err(|e| Error::io(path, e))?;
    Ok(Some((opcode, len)))
}

/// Reads the magic that must follow the footer ending at `offset`; returns why it is missing.
fn check_end_magic(path: &Path, size: u64, offset: u64, input: &mut impl Read) -> Option<Error> {
    let mut tail = [0u8; MAGIC_LEN as usize];
    if size - offset < MAGIC_LEN || input.read_exact(&mut tail).is_err() || tail != *mcap::MAGIC {
        Some(Error::malformed(
            path,
            offset,
            "no end magic after the footer (truncated or damaged)",
        ))
    } else {
        None
    }
}
