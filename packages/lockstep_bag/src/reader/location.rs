//! Random access to single messages: where a message lies in a bag ([`Location`]) and reading it
//! again from there ([`BagReader::read_at`]), so that a caller can index a bag larger than memory
//! and read each payload only when it needs it.
//!
//! An MCAP message inside a chunk is read by decompressing its chunk; the reader keeps the most
//! recently used decompressed chunks, up to a byte budget ([`DEFAULT_CHUNK_CACHE_BYTES`], see
//! [`BagReader::set_chunk_cache_bytes`]), since the messages one computation consumed usually lie in
//! nearby chunks. A message outside chunks is read alone, an sqlite3 message by its row id.
//!
//! A location is checked before it is trusted, as the file's bytes are: it must name a storage file
//! of the bag and a message record inside it (every length checked against what is left of the
//! file, chunk or record before anything is allocated), else the answer is an
//! [`Error::BadLocation`] or [`Error::Malformed`], never a panic.

use super::bag::BagReader;
use super::chunk_cache::{kind, lock, read_chunk, record_length_at, IndexedChunk};
use super::compressed::{decompress_message, BagCompression};
use super::storage::StorageFile;
use super::types::BagMessage;
use crate::mcapio;
use crate::{Error, Result};
use mcap::records::Record;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

/// Default budget of decompressed chunks a reader keeps for [`BagReader::read_at`]: 32 MiB.
pub const DEFAULT_CHUNK_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Where one message lies in a bag: what [`BagReader::read_at`] needs to read it again. 16 bytes.
///
/// - MCAP: the storage file, the byte offset of the top-level record holding the message (its chunk,
///   or the message itself when it is outside chunks) and the index of the message's record inside
///   that chunk;
/// - sqlite3: the storage file and the message's row id.
///
/// A location is only meaningful for the bag it came from (opened the same way: the same files in
/// the same order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    file: u32,
    position: u64,
    /// 0: a record outside chunks (or an sqlite3 row); `i + 1`: the `i`-th record of the chunk.
    in_chunk: u32,
}

impl Location {
    /// A location from its parts (e.g. read back from an index a caller stored): the storage file's
    /// index in the bag, the position (MCAP: byte offset of the top-level record; sqlite3: the row id
    /// as its two's-complement bits) and, for an MCAP message inside a chunk, the index of its record
    /// in the chunk. [`BagReader::read_at`] checks it before trusting it.
    pub fn from_parts(file_index: usize, position: u64, index_in_chunk: Option<u32>) -> Self {
        Location {
            file: u32::try_from(file_index).unwrap_or(u32::MAX),
            position,
            in_chunk: index_in_chunk.map_or(0, |i| i.saturating_add(1)),
        }
    }

    /// A location inside an MCAP chunk (`index` as counted while reading it; saturates).
    pub(super) fn in_chunk(file_index: usize, chunk_offset: u64, index: usize) -> Self {
        Self::from_parts(
            file_index,
            chunk_offset,
            Some(u32::try_from(index).unwrap_or(u32::MAX - 1)),
        )
    }

    /// The index of the storage file in the bag (as [`BagReader::file_paths`] lists them).
    pub fn file_index(&self) -> usize {
        self.file as usize
    }

    /// MCAP: the byte offset of the top-level record holding the message; sqlite3: the row id (as
    /// its two's-complement bits).
    pub fn position(&self) -> u64 {
        self.position
    }

    /// MCAP: the index of the message's record inside its chunk; `None` for a message outside chunks
    /// and for sqlite3.
    pub fn index_in_chunk(&self) -> Option<u32> {
        self.in_chunk.checked_sub(1)
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "storage file {}, position {}", self.file, self.position)?;
        if let Some(i) = self.index_in_chunk() {
            write!(f, ", record {i} of the chunk there")?;
        }
        Ok(())
    }
}

impl BagReader {
    /// Sets the budget of decompressed MCAP chunks this reader keeps for [`read_at`](Self::read_at)
    /// (default [`DEFAULT_CHUNK_CACHE_BYTES`]); 0 keeps none. A chunk larger than the budget is read
    /// again each time.
    pub fn set_chunk_cache_bytes(&self, bytes: usize) {
        lock(&self.chunk_cache).set_budget(bytes);
    }

    /// Bytes of decompressed chunks the reader holds for [`read_at`](Self::read_at) now.
    pub fn chunk_cache_bytes(&self) -> usize {
        lock(&self.chunk_cache).used
    }

    /// The data of the message at `location` (decompressed when the bag uses rosbag2's message
    /// compression). Memory: the message, plus its chunk while it is in the reader's chunk cache.
    ///
    /// Fails with [`Error::BadLocation`] when `location` names no message of this bag, or with the
    /// error reading the file says (a malformed record, an I/O error).
    pub fn read_at(&self, location: &Location) -> Result<Vec<u8>> {
        self.read_message_at(location).map(|m| m.data)
    }

    /// The whole message at `location`: topic, times, data (see [`read_at`](Self::read_at)).
    pub fn read_message_at(&self, location: &Location) -> Result<BagMessage> {
        let fi = location.file_index();
        let Some(file) = self.files.get(fi) else {
            return Err(Error::BadLocation {
                path: self.path.clone(),
                location: location.to_string(),
                reason: format!("the bag has {} storage files", self.files.len()),
            });
        };
        let mut message = self.fetch(fi, location).map_err(|e| file.wrap(e))?;
        if self.compression == BagCompression::Message {
            message.data =
                decompress_message(&message.data, &file.path, &message.topic, message.log_time_ns)?;
        }
        Ok(message)
    }

    /// The message at `location` of storage file `fi`, as stored.
    fn fetch(&self, fi: usize, location: &Location) -> Result<BagMessage> {
        let bad = |path: &Path, reason: &str| Error::BadLocation {
            path: path.to_path_buf(),
            location: location.to_string(),
            reason: reason.to_string(),
        };
        match &self.files[fi].storage {
            StorageFile::Mcap(m) => {
                let (channel_id, sequence, log_time, publish_time, data) = match location.index_in_chunk() {
                    Some(index) => {
                        let chunk = self.chunk(fi, location.position, None)?;
                        let slot = chunk
                            .slot(index as usize)
                            .ok_or_else(|| bad(&m.path, "no message record there in the chunk"))?;
                        let data = chunk.data(slot).to_vec();
                        (
                            slot.channel_id,
                            slot.sequence,
                            slot.log_time,
                            slot.publish_time,
                            data,
                        )
                    }
                    None => {
                        let path = &m.path;
                        let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
                        let length = record_length_at(path, &mut file, location.position)?;
                        mcapio::with_record_at(path, &mut file, location.position, length, |record| {
                            match record {
                                Record::Message { header, data } => Ok((
                                    header.channel_id,
                                    header.sequence,
                                    header.log_time,
                                    header.publish_time,
                                    data.into_owned(),
                                )),
                                other => Err(bad(
                                    path,
                                    &format!("a {} record there, not a message", kind(&other)),
                                )),
                            }
                        })?
                    }
                };
                let topic = m.channels.get(&channel_id).map(|c| c.topic.clone());
                Ok(BagMessage {
                    topic: topic.unwrap_or_else(|| Arc::from("")),
                    log_time_ns: log_time,
                    publish_time_ns: publish_time,
                    data,
                    sequence,
                    file_index: fi,
                    channel_id: u32::from(channel_id),
                })
            }
            StorageFile::Sqlite(s) => {
                if location.index_in_chunk().is_some() {
                    return Err(bad(&s.path, "an sqlite3 file has no chunks"));
                }
                let id = location.position as i64;
                let (topic_id, ts, data) = s
                    .read_row(id)?
                    .ok_or_else(|| bad(&s.path, "no message row with that id"))?;
                let topic = s.topics.get(&topic_id).map(|c| c.topic.clone());
                let t = ts.max(0) as u64;
                Ok(BagMessage {
                    topic: topic.unwrap_or_else(|| Arc::from("")),
                    log_time_ns: t,
                    publish_time_ns: t,
                    data,
                    sequence: 0,
                    file_index: fi,
                    channel_id: topic_id as u32,
                })
            }
        }
    }

    /// The decompressed, indexed chunk at `offset` of MCAP storage file `fi` (length from the chunk
    /// index when known): from the cache, or read and then kept there within the budget.
    pub(super) fn chunk(&self, fi: usize, offset: u64, length: Option<u64>) -> Result<Arc<IndexedChunk>> {
        let key = (fi, offset);
        if let Some(chunk) = lock(&self.chunk_cache).get(key) {
            return Ok(chunk);
        }
        let path = match self.files.get(fi).map(|f| &f.storage) {
            Some(StorageFile::Mcap(m)) => &m.path,
            _ => {
                return Err(Error::BadLocation {
                    path: self.path.clone(),
                    location: Location::in_chunk(fi, offset, 0).to_string(),
                    reason: "not an MCAP storage file of the bag".into(),
                })
            }
        };
        let chunk = Arc::new(read_chunk(path, offset, length)?);
        lock(&self.chunk_cache).insert(key, chunk.clone());
        Ok(chunk)
    }
}
