//! Decompressed MCAP chunks with every record located, and the reader's cache of the most recently
//! used ones (up to a byte budget), shared by random access and by the iterators that walk chunks.

use crate::mcapio::{self, decompress_chunk, parse_record, record_name, RECORD_HEADER_LEN};
use crate::{Error, Result};
use mcap::records::Record;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// A message record inside a decompressed chunk.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    pub(super) channel_id: u16,
    pub(super) sequence: u32,
    pub(super) log_time: u64,
    pub(super) publish_time: u64,
    /// Byte range of the message data in the decompressed chunk.
    start: usize,
    end: usize,
}

/// A decompressed chunk with the place of each of its records, every record checked.
#[derive(Debug)]
pub(super) struct IndexedChunk {
    bytes: Vec<u8>,
    /// One entry per record, in chunk order: `Some` for a message record.
    records: Vec<Option<Slot>>,
}

impl IndexedChunk {
    /// Walks the records laid end to end in `bytes`, each length checked against what is left of the
    /// chunk and each record parsed (as a linear read does). `Err((offset in bytes, reason))`.
    pub(super) fn new(bytes: Vec<u8>) -> std::result::Result<Self, (usize, String)> {
        let mut records = Vec::new();
        let mut at = 0usize;
        while at < bytes.len() {
            let left = bytes.len() - at;
            if left < RECORD_HEADER_LEN {
                return Err((at, format!("{left} stray bytes (a record needs at least 9)")));
            }
            let opcode = bytes[at];
            let mut le = [0u8; 8];
            le.copy_from_slice(&bytes[at + 1..at + RECORD_HEADER_LEN]);
            let len = u64::from_le_bytes(le);
            let room = left - RECORD_HEADER_LEN;
            let body_len = match usize::try_from(len) {
                Ok(n) if n <= room => n,
                _ => {
                    let name = record_name(opcode);
                    return Err((
                        at,
                        format!("{name} record claims {len} bytes but only {room} remain"),
                    ));
                }
            };
            let end = at + RECORD_HEADER_LEN + body_len;
            let body = &bytes[at + RECORD_HEADER_LEN..end];
            let slot = match parse_record(opcode, body).map_err(|e| (at, e))? {
                // The data is the rest of the record.
                Record::Message { header, data } => Some(Slot {
                    channel_id: header.channel_id,
                    sequence: header.sequence,
                    log_time: header.log_time,
                    publish_time: header.publish_time,
                    start: end - data.len(),
                    end,
                }),
                _ => None,
            };
            records.push(slot);
            at = end;
        }
        Ok(IndexedChunk { bytes, records })
    }

    /// The chunk's message records: (index in the chunk, message).
    pub(super) fn messages(&self) -> impl Iterator<Item = (usize, &Slot)> {
        self.records
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i, s)))
    }

    /// The message record at `index`, if that record is a message.
    pub(super) fn slot(&self, index: usize) -> Option<&Slot> {
        self.records.get(index).and_then(Option::as_ref)
    }

    /// The data of a slot of this chunk.
    pub(super) fn data(&self, slot: &Slot) -> &[u8] {
        self.bytes.get(slot.start..slot.end).unwrap_or_default()
    }

    /// What the chunk costs in memory (its bytes and its record table).
    fn cost(&self) -> usize {
        self.bytes.len() + self.records.len() * std::mem::size_of::<Option<Slot>>()
    }
}

/// The most recently used decompressed chunks, up to a byte budget. A chunk larger than the budget
/// is not kept.
#[derive(Debug)]
pub(super) struct ChunkCache {
    budget: usize,
    pub(super) used: usize,
    tick: u64,
    entries: HashMap<(usize, u64), (u64, Arc<IndexedChunk>)>,
    /// Last use -> key, oldest first.
    order: BTreeMap<u64, (usize, u64)>,
}

impl ChunkCache {
    pub(super) fn new(budget: usize) -> Self {
        ChunkCache {
            budget,
            used: 0,
            tick: 0,
            entries: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    pub(super) fn get(&mut self, key: (usize, u64)) -> Option<Arc<IndexedChunk>> {
        self.tick += 1;
        let tick = self.tick;
        let (last, chunk) = self.entries.get_mut(&key)?;
        self.order.remove(last);
        self.order.insert(tick, key);
        *last = tick;
        Some(chunk.clone())
    }

    pub(super) fn insert(&mut self, key: (usize, u64), chunk: Arc<IndexedChunk>) {
        let cost = chunk.cost();
        if cost > self.budget || self.entries.contains_key(&key) {
            return;
        }
        self.used += cost;
        self.evict();
        self.tick += 1;
        self.order.insert(self.tick, key);
        self.entries.insert(key, (self.tick, chunk));
    }

    /// Drops the least recently used chunks until the budget holds.
    fn evict(&mut self) {
        while self.used > self.budget {
            let Some((_, key)) = self.order.pop_first() else {
                break;
            };
            if let Some((_, chunk)) = self.entries.remove(&key) {
                self.used = self.used.saturating_sub(chunk.cost());
            }
        }
    }

    pub(super) fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
        self.evict();
    }
}

/// Locks the cache (a panic elsewhere while holding it leaves nothing inconsistent behind).
pub(super) fn lock(cache: &Mutex<ChunkCache>) -> std::sync::MutexGuard<'_, ChunkCache> {
    cache.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads the chunk record at `offset` of the MCAP file `path` (its length from `length`, or else
/// from the record's header) and indexes its records.
pub(super) fn read_chunk(path: &Path, offset: u64, length: Option<u64>) -> Result<IndexedChunk> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let length = match length {
        Some(l) => l,
        None => record_length_at(path, &mut file, offset)?,
    };
    mcapio::with_record_at(path, &mut file, offset, length, |record| match record {
        Record::Chunk { header, data } => {
            let bytes = decompress_chunk(&header, &data)
                .map_err(|reason| Error::malformed(path, offset, reason))?
                .into_owned();
            IndexedChunk::new(bytes).map_err(|(at, reason)| {
                Error::malformed(
                    path,
                    offset,
                    format!("chunk record, at byte {at} of its records: {reason}"),
                )
            })
        }
        other => Err(Error::malformed(
            path,
            offset,
            format!(
                "a message location points at a {} record, not a chunk",
                kind(&other)
            ),
        )),
    })
}

/// The total length (header included) of the record at `offset`, from its header; checked to lie
/// inside the file.
pub(super) fn record_length_at(path: &Path, file: &mut File, offset: u64) -> Result<u64> {
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let header = RECORD_HEADER_LEN as u64;
    if offset.checked_add(header).is_none_or(|end| end > size) {
        return Err(Error::malformed(
            path,
            offset,
            format!("a message location points past the end of the file ({size} bytes)"),
        ));
    }
    let mut head = [0u8; RECORD_HEADER_LEN];
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::io(path, e))?;
    file.read_exact(&mut head).map_err(|e| Error::io(path, e))?;
    let mut le = [0u8; 8];
    le.copy_from_slice(&head[1..]);
    let len = u64::from_le_bytes(le);
    match len.checked_add(header) {
        Some(total) if offset + total <= size => Ok(total),
        _ => Err(Error::malformed(
            path,
            offset,
            format!(
                "{} record claims {len} bytes but only {} remain in the file",
                record_name(head[0]),
                size - offset - header
            ),
        )),
    }
}

/// The name of a parsed record's type, for errors.
pub(super) fn kind(record: &Record<'_>) -> String {
    record_name(record.opcode())
}
