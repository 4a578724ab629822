//! Low-level MCAP file access on top of the `mcap` crate's sans-io readers: summary, single chunks
//! and a tolerant linear scan (for files without a summary, e.g. after a crash).

use crate::{Error, Result};
use mcap::records::{ChunkIndex, Record};
use mcap::sans_io::{
    LinearReadEvent, LinearReader, LinearReaderOptions, SummaryReadEvent, SummaryReader, SummaryReaderOptions,
};
use mcap::Summary;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

const MAGIC_LEN: u64 = 8;
const RECORD_HEADER_LEN: u64 = 9;

/// Reads the summary section of an MCAP file; `Ok(None)` when the file has none or when its footer
/// is missing or broken (a truncated file): callers then fall back to a linear scan.
pub(crate) fn read_summary(path: &Path) -> Result<Option<Summary>> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut reader = SummaryReader::new_with_options(SummaryReaderOptions::default().with_file_size(size));
    while let Some(event) = reader.next_event() {
        match event {
            Ok(SummaryReadEvent::ReadRequest(n)) => {
                let read = file.read(reader.insert(n)).map_err(|e| Error::io(path, e))?;
                reader.notify_read(read);
            }
            Ok(SummaryReadEvent::SeekRequest(to)) => {
                let pos = file.seek(to).map_err(|e| Error::io(path, e))?;
                reader.notify_seeked(pos);
            }
            // No usable footer or summary: not fatal, the data section may still be readable.
            Err(_) => return Ok(None),
        }
    }
    Ok(reader.finish())
}

/// Reads one whole record at `offset` (as given by an index) and hands its parsed form to `f`.
pub(crate) fn with_record_at<T>(
    path: &Path,
    file: &mut File,
    offset: u64,
    length: u64,
    f: impl FnOnce(Record<'_>) -> Result<T>,
) -> Result<T> {
    if length < RECORD_HEADER_LEN {
        return Err(Error::mcap(path, Some(offset), mcap::McapError::BadIndex));
    }
    let mut buf = vec![
        0u8;
        usize::try_from(length).map_err(|_| Error::mcap(
            path,
            Some(offset),
            mcap::McapError::BadIndex
        ))?
    ];
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::io(path, e))?;
    file.read_exact(&mut buf).map_err(|e| Error::io(path, e))?;
    let opcode = buf[0];
    let record = mcap::parse_record(opcode, &buf[RECORD_HEADER_LEN as usize..])
        .map_err(|e| Error::mcap(path, Some(offset), e))?;
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
            let reader = mcap::read::ChunkReader::new(header, &data)
                .map_err(|e| Error::mcap(path, Some(offset), e))?;
            for (i, inner) in reader.enumerate() {
                f(i, inner.map_err(|e| Error::mcap(path, Some(offset), e))?)?;
            }
            Ok(())
        }
        _ => Err(Error::mcap(path, Some(offset), mcap::McapError::BadIndex)),
    })
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
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    // No record can be longer than the file. The limit also turns the placeholder length (all ones)
    // of a chunk whose writer died before patching it into an error instead of an overflow.
    let limit = usize::try_from(size).unwrap_or(usize::MAX);
    let mut reader = LinearReader::new_with_options(
        LinearReaderOptions::default()
            .with_skip_end_magic(false)
            .with_emit_chunks(true)
            .with_validate_chunk_crcs(true)
            .with_record_length_limit(limit),
    );
    let mut end = ScanEnd {
        valid_end: 0,
        complete: false,
        error: None,
        chunks: 0,
        compression: String::new(),
    };
    let mut offset = MAGIC_LEN;
    let mut saw_magic = false;
    while let Some(event) = reader.next_event() {
        match event {
            Ok(LinearReadEvent::ReadRequest(n)) => {
                let read = file.read(reader.insert(n)).map_err(|e| Error::io(path, e))?;
                reader.notify_read(read);
            }
            Ok(LinearReadEvent::Record { data, opcode }) => {
                saw_magic = true;
                let record_offset = offset;
                let record_len = RECORD_HEADER_LEN + data.len() as u64;
                let parsed = match mcap::parse_record(opcode, data) {
                    Ok(r) => r,
                    Err(e) => {
                        end.error = Some(Error::mcap(path, Some(record_offset), e));
                        break;
                    }
                };
                match parsed {
                    Record::Chunk { header, data } => {
                        let compression = header.compression.clone();
                        // Decode the whole chunk before passing anything on, so a damaged chunk is
                        // dropped entirely rather than half-used.
                        let mut records = Vec::new();
                        let mut failure = None;
                        match mcap::read::ChunkReader::new(header, &data) {
                            Ok(chunk) => {
                                for r in chunk {
                                    match r {
                                        Ok(r) => records.push(r.into_owned()),
                                        Err(e) => {
                                            failure = Some(e);
                                            break;
                                        }
                                    }
                                }
                            }
                            Err(e) => failure = Some(e),
                        }
                        if let Some(e) = failure {
                            end.error = Some(Error::mcap(path, Some(record_offset), e));
                            break;
                        }
                        for (i, r) in records.into_iter().enumerate() {
                            f(
                                RecordPos {
                                    offset: record_offset,
                                    in_chunk: Some(i),
                                },
                                r,
                            )?;
                        }
                        end.chunks += 1;
                        end.compression = compression;
                    }
                    Record::Footer(_) => {
                        end.complete = true;
                    }
                    other => f(
                        RecordPos {
                            offset: record_offset,
                            in_chunk: None,
                        },
                        other,
                    )?,
                }
                offset += record_len;
                end.valid_end = offset;
            }
            Err(e) => {
                if !saw_magic && offset == MAGIC_LEN {
                    end.valid_end = 0;
                }
                end.error = Some(Error::mcap(path, Some(offset), e));
                break;
            }
        }
    }
    // Complete means footer and end magic were read without any error.
    end.complete = end.complete && end.error.is_none();
    Ok(end)
}
