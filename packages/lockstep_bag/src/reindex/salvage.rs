//! A tolerant scan of one MCAP file that never trusts a length field: every record must fit in the
//! file, every chunk must decompress and match its CRC. A damaged record is skipped and the scan looks
//! for the next record it can verify, so intact chunks after a damaged one are kept.

use crate::{Error, Result};
use mcap::records::{op, Record};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The 8 bytes every MCAP file starts (and ends) with.
pub(crate) const MAGIC: &[u8; 8] = b"\x89MCAP0\r\n";
const HEADER_LEN: u64 = 9;
/// Fixed part of a chunk record before its compression name: start, end, size (3 x u64), CRC (u32),
/// name length (u32).
const CHUNK_FIXED_LEN: usize = 8 + 8 + 8 + 4 + 4;
/// A chunk's compression name is one of "", "lz4", "zstd".
const MAX_COMPRESSION_NAME: usize = 4;
/// Bytes needed to judge a chunk candidate before reading all of it.
const CHUNK_PROBE_LEN: usize = HEADER_LEN as usize + CHUNK_FIXED_LEN + MAX_COMPRESSION_NAME + 8;
/// A chunk claiming to decompress to more than this is not believed (a damaged size field would
/// otherwise make the decompressor allocate it).
const MAX_UNCOMPRESSED_CHUNK: u64 = 1 << 30;
const RESYNC_BLOCK: usize = 1 << 20;

/// A part of the file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedBytes {
    /// Byte offset of the first byte not used.
    pub offset: u64,
    /// How many bytes from there.
    pub length: u64,
    /// What was wrong there.
    pub reason: String,
}

/// How a scan ended.
#[derive(Debug, Default)]
pub(super) struct ScanOutcome {
    /// Damaged parts skipped before the scan found verified records again.
    pub skipped: Vec<SkippedBytes>,
    /// The unusable end of the file (a truncated or damaged tail with nothing verifiable after it).
    pub tail: Option<SkippedBytes>,
    /// The footer and the closing magic were read and nothing was damaged.
    pub complete: bool,
    /// Chunks whose records were used.
    pub chunks: u64,
    /// Compression of the last chunk used ("", "zstd" or "lz4").
    pub compression: String,
}

/// Whether `path` starts like an MCAP file: `Ok(true)` with the magic, `Ok(false)` when the file is
/// shorter than the magic and is a start of it (a writer killed before its first write reached the
/// disk), an error naming the file otherwise.
pub(super) fn check_magic(path: &Path) -> Result<bool> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut head = Vec::with_capacity(MAGIC.len());
    (&mut file)
        .take(MAGIC.len() as u64)
        .read_to_end(&mut head)
        .map_err(|e| Error::io(path, e))?;
    if head[..] == MAGIC[..] {
        return Ok(true);
    }
    if head.len() < MAGIC.len() && MAGIC.starts_with(&head) {
        return Ok(false);
    }
    Err(Error::NotABag {
        path: path.to_path_buf(),
        reason: "not an MCAP file (it does not start with the MCAP magic bytes); nothing was written".into(),
    })
}

/// Reads `path` from the start and calls `f` with every usable schema, channel, message (also those
/// inside chunks), attachment and metadata record in file order. Damage never fails the scan; errors
/// of reading the file or returned by `f` do. The file must start with the magic ([`check_magic`]).
pub(super) fn scan(path: &Path, mut f: impl FnMut(Record<'_>) -> Result<()>) -> Result<ScanOutcome> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut out = ScanOutcome::default();
    let mut pos = MAGIC.len() as u64;
    if size < pos {
        out.tail = (size > 0).then(|| SkippedBytes {
            offset: 0,
            length: size,
            reason: "the file ends inside the MCAP magic".into(),
        });
        return Ok(out);
    }
    let mut reader = Reader {
        path,
        file: &mut file,
        size,
    };
    while pos < size {
        let step = match reader.record_at(pos)? {
            Ok((opcode, body)) => match take(opcode, &body) {
                Ok(Taken::Footer) => {
                    let end = pos + HEADER_LEN + body.len() as u64;
                    let closing = reader.bytes_at(end, MAGIC.len())?;
                    out.complete = closing.as_deref() == Some(&MAGIC[..])
                        && out.skipped.is_empty()
                        && out.tail.is_none();
                    return Ok(out);
                }
                Ok(Taken::Records(records, compression)) => {
                    for r in records {
                        f(r)?;
                    }
                    if let Some(c) = compression {
                        out.chunks += 1;
                        out.compression = c;
                    }
                    Ok(pos + HEADER_LEN + body.len() as u64)
                }
                Err(reason) => Err((reason, Some(pos + HEADER_LEN + body.len() as u64))),
            },
            Err(reason) => Err((reason, None)),
        };
        match step {
            Ok(next) => pos = next,
            Err((reason, claimed_end)) => {
                let reason = format!("record at byte {pos}: {reason}");
                match reader.resync(pos, claimed_end)? {
                    Some(next) => {
                        out.skipped.push(SkippedBytes {
                            offset: pos,
                            length: next - pos,
                            reason,
                        });
                        pos = next;
                    }
                    None => {
                        out.tail = Some(SkippedBytes {
                            offset: pos,
                            length: size - pos,
                            reason,
                        });
                        return Ok(out);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// What one verified record yields.
enum Taken<'a> {
    Footer,
    /// Records to pass on, and the compression name when they came from a chunk.
    Records(Vec<Record<'a>>, Option<String>),
}

/// Parses and verifies one record body; the error says what is wrong with it.
fn take(opcode: u8, body: &[u8]) -> std::result::Result<Taken<'_>, String> {
    match opcode {
        op::FOOTER => Ok(Taken::Footer),
        op::CHUNK => {
            let (records, compression) = decode_chunk(body)?;
            Ok(Taken::Records(records, Some(compression)))
        }
        op::SCHEMA | op::CHANNEL | op::MESSAGE | op::ATTACHMENT | op::METADATA => {
            let record = crate::mcapio::parse_record(opcode, body)?;
            Ok(Taken::Records(vec![record], None))
        }
        // Index, statistics and summary records are rebuilt by the writer; private records (0x80
        // and above) are not ours to interpret.
        op::HEADER
        | op::MESSAGE_INDEX
        | op::CHUNK_INDEX
        | op::ATTACHMENT_INDEX
        | op::STATISTICS
        | op::METADATA_INDEX
        | op::SUMMARY_OFFSET
        | op::DATA_END
        | 0x80..=0xff => Ok(Taken::Records(Vec::new(), None)),
        other => Err(format!("unknown record opcode {other:#04x}")),
    }
}

/// Decompresses a chunk and parses every record in it, or says why not. Nothing of a chunk is used
/// unless all of it is sound.
fn decode_chunk(body: &[u8]) -> std::result::Result<(Vec<Record<'static>>, String), String> {
    let record = crate::mcapio::parse_record(op::CHUNK, body)?;
    let Record::Chunk { header, data } = record else {
        return Err("not a chunk".into());
    };
    let compression = header.compression.clone();
    match compression.as_str() {
        "" if header.uncompressed_size != data.len() as u64 => {
            return Err(format!(
                "uncompressed chunk of {} bytes claims {} bytes",
                data.len(),
                header.uncompressed_size
            ))
        }
        "" | "zstd" | "lz4" => {}
        other => return Err(format!("unknown chunk compression `{other}`")),
    }
    if header.uncompressed_size > MAX_UNCOMPRESSED_CHUNK {
        return Err(format!(
            "chunk claims {} uncompressed bytes (more than the {MAX_UNCOMPRESSED_CHUNK} believed)",
            header.uncompressed_size
        ));
    }
    // Lengths checked against the chunk and output bounded by what the decoder produces (never a
    // buffer of the declared size up front); a non-zero CRC is checked.
    let bytes = crate::mcapio::decompress_chunk(&header, &data)?;
    let records = crate::mcapio::records_in_chunk(&bytes)
        .map_err(|(offset, reason)| format!("record at byte {offset} of the chunk: {reason}"))?
        .into_iter()
        .map(Record::into_owned)
        .collect();
    Ok((records, compression))
}

struct Reader<'a> {
    path: &'a Path,
    file: &'a mut File,
    size: u64,
}

impl Reader<'_> {
    /// Up to `len` bytes at `offset`; `None` when fewer are left in the file.
    fn bytes_at(&mut self, offset: u64, len: usize) -> Result<Option<Vec<u8>>> {
        if offset.checked_add(len as u64).is_none_or(|end| end > self.size) {
            return Ok(None);
        }
        let mut buf = vec![0u8; len];
        self.file
            .seek(SeekFrom::Start(offset))
            .map_err(|e| Error::io(self.path, e))?;
        self.file
            .read_exact(&mut buf)
            .map_err(|e| Error::io(self.path, e))?;
        Ok(Some(buf))
    }

    /// The record at `pos` (opcode, body) when its header is whole and its length fits in the file.
    fn record_at(&mut self, pos: u64) -> Result<std::result::Result<(u8, Vec<u8>), String>> {
        let Some(header) = self.bytes_at(pos, HEADER_LEN as usize)? else {
            return Ok(Err(format!(
                "truncated: {} bytes left, a record header needs {HEADER_LEN}",
                self.size - pos
            )));
        };
        let mut len_bytes = [0u8; 8];
        len_bytes.copy_from_slice(&header[1..9]);
        let len = u64::from_le_bytes(len_bytes);
        let left = self.size - pos - HEADER_LEN;
        if len > left {
            return Ok(Err(format!(
                "length {len} runs past the end of the file ({left} bytes left)"
            )));
        }
        let len = usize::try_from(len).map_err(|_| Error::InvalidArgument("record too large".into()))?;
        match self.bytes_at(pos + HEADER_LEN, len)? {
            Some(body) => Ok(Ok((header[0], body))),
            None => Ok(Err("truncated".into())),
        }
    }

    /// Where reading can go on after the damaged record at `pos`: the next chunk after `pos` that
    /// verifies, or the record's claimed end when a sound record starts there before that chunk (a
    /// chunk whose CRC failed but whose length is intact); `None` when nothing verifiable follows.
    fn resync(&mut self, pos: u64, claimed_end: Option<u64>) -> Result<Option<u64>> {
        let next_chunk = self.next_chunk(pos + 1)?;
        if let Some(end) = claimed_end.filter(|&e| e < self.size && next_chunk.is_none_or(|c| e <= c)) {
            if let Ok((opcode, body)) = self.record_at(end)? {
                if opcode != op::MESSAGE && take(opcode, &body).is_ok() {
                    return Ok(Some(end));
                }
            }
        }
        Ok(next_chunk)
    }

    /// The offset of the first chunk at or after `from` that verifies.
    fn next_chunk(&mut self, from: u64) -> Result<Option<u64>> {
        let mut start = from;
        while start < self.size {
            let len = usize::try_from((self.size - start).min(RESYNC_BLOCK as u64)).unwrap_or(RESYNC_BLOCK);
            let Some(block) = self.bytes_at(start, len)? else {
                return Ok(None);
            };
            // Candidates whose probe bytes cross the block's end are judged in the next block.
            let judged = if start + len as u64 >= self.size {
                len
            } else {
                len - CHUNK_PROBE_LEN
            };
            for (i, _) in block[..judged]
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == op::CHUNK)
            {
                let candidate = start + i as u64;
                if plausible_chunk(&block[i..], self.size - candidate) && self.chunk_verifies(candidate)? {
                    return Ok(Some(candidate));
                }
            }
            if judged == len {
                break;
            }
            start += judged as u64;
        }
        Ok(None)
    }

    fn chunk_verifies(&mut self, pos: u64) -> Result<bool> {
        Ok(match self.record_at(pos)? {
            Ok((op::CHUNK, body)) => decode_chunk(&body).is_ok(),
            _ => false,
        })
    }
}

/// Cheap structural test of a chunk candidate whose bytes start `probe` (at least the first
/// [`CHUNK_PROBE_LEN`] of them when the file has that many) with `left` bytes left in the file.
fn plausible_chunk(probe: &[u8], left: u64) -> bool {
    let u64_at = |at: usize| -> Option<u64> {
        let bytes: [u8; 8] = probe.get(at..at + 8)?.try_into().ok()?;
        Some(u64::from_le_bytes(bytes))
    };
    let u32_at = |at: usize| -> Option<u32> {
        let bytes: [u8; 4] = probe.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_le_bytes(bytes))
    };
    let check = || -> Option<bool> {
        let len = u64_at(1)?;
        let body = HEADER_LEN as usize;
        let name_len = u32_at(body + CHUNK_FIXED_LEN - 4)? as usize;
        if name_len > MAX_COMPRESSION_NAME {
            return Some(false);
        }
        let name = probe.get(body + CHUNK_FIXED_LEN..body + CHUNK_FIXED_LEN + name_len)?;
        let records_len = u64_at(body + CHUNK_FIXED_LEN + name_len)?;
        let fixed = (CHUNK_FIXED_LEN + name_len + 8) as u64;
        Some(
            matches!(name, b"" | b"lz4" | b"zstd")
                && len <= left.saturating_sub(HEADER_LEN)
                && len.checked_sub(fixed) == Some(records_len),
        )
    };
    check().unwrap_or(false)
}
