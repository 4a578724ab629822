//! The storage side of `lockstep bag du`: per storage file, its size and, for MCAP, its chunks per
//! compression, from the chunk indexes of a trusted summary or else from the chunk records' headers (read
//! one by one, skipping their data).

use crate::mcapio::{read_summary, SummaryState};
use anyhow::{Context, Result};
use mcap::records::op;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// One storage file.
#[derive(Debug, Clone)]
pub(super) struct FileUsage {
    pub(super) path: PathBuf,
    /// Bytes on disk.
    pub(super) size_bytes: u64,
    /// `mcap`, `sqlite3`, or what else the file is (a rosbag2 `FILE`-compressed file).
    pub(super) storage: String,
    /// MCAP chunks by compression (`none`, `zstd`, `lz4`).
    pub(super) chunks: BTreeMap<String, ChunkUsage>,
    /// How the chunks were counted when not from the summary, or where the file is damaged.
    pub(super) note: Option<String>,
}

/// The chunks of one compression in one file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ChunkUsage {
    pub(super) chunks: u64,
    pub(super) compressed_bytes: u64,
    pub(super) uncompressed_bytes: u64,
}

impl ChunkUsage {
    fn add(&mut self, compressed: u64, uncompressed: u64) {
        self.chunks += 1;
        self.compressed_bytes = self.compressed_bytes.saturating_add(compressed);
        self.uncompressed_bytes = self.uncompressed_bytes.saturating_add(uncompressed);
    }
}

const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// What `path` holds and, for MCAP, its chunks.
pub(super) fn file_usage(path: &Path) -> Result<FileUsage> {
    let io = || format!("cannot read {}", path.display());
    let mut file = File::open(path).with_context(io)?;
    let size_bytes = file.metadata().with_context(io)?.len();
    let mut head = Vec::new();
    (&mut file).take(16).read_to_end(&mut head).with_context(io)?;
    let mut usage = FileUsage {
        path: path.to_path_buf(),
        size_bytes,
        storage: String::new(),
        chunks: BTreeMap::new(),
        note: None,
    };
    if head.starts_with(SQLITE_MAGIC) {
        usage.storage = "sqlite3".into();
    } else if !head.starts_with(mcap::MAGIC) {
        usage.storage = match path.extension().and_then(|e| e.to_str()) {
            Some("zstd") => "zstd file (rosbag2 file compression)".into(),
            _ => "unknown".into(),
        };
    } else {
        usage.storage = "mcap".into();
        match read_summary(path)? {
            SummaryState::Present(summary) => {
                for c in &summary.chunk_indexes {
                    usage
                        .chunks
                        .entry(compression_name(&c.compression))
                        .or_default()
                        .add(c.compressed_size, c.uncompressed_size);
                }
            }
            SummaryState::Absent | SummaryState::Untrusted(_) => {
                let stopped = walk_chunks(path, size_bytes, &mut usage.chunks).with_context(io)?;
                usage.note = Some(match stopped {
                    None => "no usable summary: chunks counted from their records".into(),
                    Some(why) => format!("no usable summary, chunks counted up to {why}"),
                });
            }
        }
    }
    Ok(usage)
}

/// `none` for MCAP's empty compression name.
fn compression_name(name: &str) -> String {
    if name.is_empty() { "none" } else { name }.to_string()
}

/// Adds every chunk record of the data section of an MCAP file to `chunks`, reading each chunk's header
/// and skipping its records. Returns where and why it stopped before the end of the data section, if it
/// did (a file cut short or damaged).
fn walk_chunks(path: &Path, size: u64, chunks: &mut BTreeMap<String, ChunkUsage>) -> Result<Option<String>> {
    let mut input = BufReader::with_capacity(64 * 1024, File::open(path)?);
    input.seek(SeekFrom::Start(mcap::MAGIC.len() as u64))?;
    let mut at = mcap::MAGIC.len() as u64;
    loop {
        if size - at < 9 {
            return Ok(Some(format!("byte {at}, where the file ends without a footer")));
        }
        let opcode = read_u8(&mut input)?;
        let len = read_u64(&mut input)?;
        let Some(end) = (at + 9).checked_add(len).filter(|&e| e <= size) else {
            return Ok(Some(format!(
                "byte {at}: a record of {len} bytes runs past the end of the file"
            )));
        };
        let consumed = match opcode {
            op::CHUNK => match chunk_header(&mut input, len)? {
                Some((compression, compressed, uncompressed, consumed)) => {
                    chunks
                        .entry(compression)
                        .or_default()
                        .add(compressed, uncompressed);
                    consumed
                }
                None => {
                    return Ok(Some(format!(
                        "byte {at}: a chunk record whose header does not fit it"
                    )))
                }
            },
            op::DATA_END | op::FOOTER => return Ok(None),
            _ => 0,
        };
        // Relative, so the buffer is kept when the next record is already in it.
        input.seek_relative(i64::try_from(len - consumed)?)?;
        at = end;
    }
}

/// The compression, compressed and uncompressed sizes of a chunk record of `len` bytes whose body starts at
/// the reader's position, and the bytes read; `None` when its fields do not fit the record.
fn chunk_header(input: &mut impl Read, len: u64) -> Result<Option<(String, u64, u64, u64)>> {
    // message_start_time, message_end_time, uncompressed_size, uncompressed_crc, compression's length.
    const FIXED: u64 = 8 + 8 + 8 + 4 + 4;
    if len < FIXED + 8 {
        return Ok(None);
    }
    let mut fixed = [0u8; FIXED as usize];
    input.read_exact(&mut fixed)?;
    let uncompressed = u64::from_le_bytes(fixed[16..24].try_into()?);
    let name_len = u64::from(u32::from_le_bytes(fixed[28..32].try_into()?));
    // Compression names are short (`zstd`, `lz4`); a long one is damage, not a name to allocate for.
    if name_len > 64 || FIXED + name_len + 8 > len {
        return Ok(None);
    }
    let mut name = vec![0u8; name_len as usize];
    input.read_exact(&mut name)?;
    let compressed = read_u64(input)?;
    if compressed > len - FIXED - name_len - 8 {
        return Ok(None);
    }
    let name = compression_name(&String::from_utf8_lossy(&name));
    Ok(Some((name, compressed, uncompressed, FIXED + name_len + 8)))
}

fn read_u8(input: &mut impl Read) -> std::io::Result<u8> {
    let mut b = [0u8; 1];
    input.read_exact(&mut b)?;
    Ok(b[0])
}

fn read_u64(input: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    input.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}
