//! Iteration without holding payloads: every message of a bag in the order of
//! [`BagReader::messages_with`], each with its [`Location`], and its data only when asked for (for a
//! caller that hashes each payload once and reads it again later with [`BagReader::read_at`]).

use super::bag::BagReader;
use super::chunk_cache::IndexedChunk;
use super::compressed::{decompress_message, BagCompression};
use super::iter::{initial_loads, row_position, wanted_channels, Load, MsgKey, Pending};
use super::location::Location;
use super::mcap_file::McapFile;
use super::sqlite_file::{SqliteFile, SQLITE_PAGE};
use super::storage::StorageFile;
use super::types::ReadOptions;
use crate::{Error, Result};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::sync::Arc;

/// Whether [`LocatedIter`] yields each message's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// No data: [`LocatedMessage::data`] is `None`. The iterator then holds, besides the chunk it is
    /// reading, only the small per-message entries of the chunks overlapping the current time.
    Skip,
    /// The data of each message, read as it is yielded (from the chunk the iterator holds, or one
    /// sqlite3 row at a time); dropping it after use keeps memory bounded.
    Read,
}

/// One message as [`LocatedIter`] yields it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedMessage {
    /// Topic name.
    pub topic: Arc<str>,
    /// Receive time (ns since epoch), the bag's ordering key.
    pub log_time_ns: u64,
    /// Publish time (ns); equals `log_time_ns` for storages that do not keep it.
    pub publish_time_ns: u64,
    /// MCAP sequence number (0 for sqlite3).
    pub sequence: u32,
    /// MCAP channel id or sqlite3 topic id within its storage file.
    pub channel_id: u32,
    /// Where the message lies: [`BagReader::read_at`] reads its data again from there.
    pub location: Location,
    /// Its data (decompressed when the bag uses rosbag2's message compression) with
    /// [`Payload::Read`]; `None` with [`Payload::Skip`].
    pub data: Option<Vec<u8>>,
}

/// A message waiting in the merge.
struct Entry {
    key: MsgKey,
    topic: Arc<str>,
    publish_time_ns: u64,
    sequence: u32,
    channel_id: u32,
    location: Location,
    /// Its chunk, held while the message waits when its data will be read.
    chunk: Option<Arc<IndexedChunk>>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// Iterator over a bag's messages with their locations, in the order of
/// [`BagReader::messages_with`] (log time, then file, then position in the file).
///
/// What it holds: the entries (topic, times, location: under 100 bytes each) of the messages of
/// the chunks overlapping the current time, and with [`Payload::Read`] those chunks, decompressed;
/// for an MCAP file without a usable index (a writer killed before its summary), the entries of all
/// the file's selected messages (no data); for sqlite3, one page of 4096 entries per file, and one
/// row's data at a time.
pub struct LocatedIter<'a> {
    reader: &'a BagReader,
    opts: ReadOptions,
    payload: Payload,
    pending: Pending,
    ready: BinaryHeap<Reverse<Entry>>,
    wanted: Vec<Option<BTreeSet<u32>>>,
    failed: bool,
    deferred_error: Option<(usize, Error)>,
}

impl std::fmt::Debug for LocatedIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocatedIter")
            .field("opts", &self.opts)
            .field("payload", &self.payload)
            .finish_non_exhaustive()
    }
}

impl<'a> LocatedIter<'a> {
    pub(super) fn new(reader: &'a BagReader, opts: ReadOptions, payload: Payload) -> Self {
        let wanted = wanted_channels(reader, &opts);
        let pending = initial_loads(reader, &opts, &wanted);
        LocatedIter {
            reader,
            opts,
            payload,
            pending,
            ready: BinaryHeap::new(),
            wanted,
            failed: false,
            deferred_error: None,
        }
    }

    fn accept(&self, fi: usize, channel: u32, t: u64) -> bool {
        self.opts.wants_time(t) && self.wanted[fi].as_ref().is_none_or(|w| w.contains(&channel))
    }

    fn topic(&self, fi: usize, channel: u32) -> Arc<str> {
        let topic = match &self.reader.files[fi].storage {
            StorageFile::Mcap(m) => u16::try_from(channel)
                .ok()
                .and_then(|c| m.channels.get(&c))
                .map(|c| c.topic.clone()),
            StorageFile::Sqlite(s) => s.topics.get(&i64::from(channel)).map(|c| c.topic.clone()),
        };
        topic.unwrap_or_else(|| Arc::from(""))
    }

    /// Moves the entries of one pending load (an MCAP chunk, a whole MCAP file read linearly, or a
    /// page of sqlite3 rows) of file `fi` into the merge.
    fn load(&mut self, fi: usize, load: Load) -> Result<()> {
        let reader = self.reader;
        match (&reader.files[fi].storage, load) {
            (StorageFile::Mcap(m), Load::McapChunk(ci)) => self.load_chunk(fi, m, ci),
            (StorageFile::Mcap(m), Load::McapWhole) => self.load_whole(fi, m),
            (StorageFile::Sqlite(s), Load::SqlitePage(after)) => self.load_page(fi, s, after),
            _ => Ok(()),
        }
    }

    /// The selected messages of the `ci`-th indexed chunk of MCAP file `fi`.
    fn load_chunk(&mut self, fi: usize, m: &McapFile, ci: usize) -> Result<()> {
        let Some(index) = m.chunks.as_ref().and_then(|c| c.get(ci)) else {
            return Ok(());
        };
        let offset = index.chunk_start_offset;
        let chunk = self.reader.chunk(fi, offset, Some(index.chunk_length))?;
        for (i, slot) in chunk.messages() {
            let channel = u32::from(slot.channel_id);
            if !self.accept(fi, channel, slot.log_time) {
                continue;
            }
            self.ready.push(Reverse(Entry {
                key: (slot.log_time, fi, offset, i as u64 + 1),
                topic: self.topic(fi, channel),
                publish_time_ns: slot.publish_time,
                sequence: slot.sequence,
                channel_id: channel,
                location: Location::in_chunk(fi, offset, i),
                chunk: (self.payload == Payload::Read).then(|| chunk.clone()),
            }));
        }
        Ok(())
    }

    /// The selected messages of MCAP file `fi` without a usable index, read from start to end.
    fn load_whole(&mut self, fi: usize, m: &McapFile) -> Result<()> {
        // As `messages()` does: a damaged tail still lets the intact messages through; the
        // error is reported once they have been yielded.
        let damage = m.read_all(|pos, header, _data| {
            let channel = u32::from(header.channel_id);
            if !self.accept(fi, channel, header.log_time) {
                return;
            }
            let location = match pos.in_chunk {
                Some(i) => Location::in_chunk(fi, pos.offset, i),
                None => Location::from_parts(fi, pos.offset, None),
            };
            self.ready.push(Reverse(Entry {
                key: (
                    header.log_time,
                    fi,
                    pos.offset,
                    pos.in_chunk.map_or(0, |i| i as u64 + 1),
                ),
                topic: self.topic(fi, channel),
                publish_time_ns: header.publish_time,
                sequence: header.sequence,
                channel_id: channel,
                location,
                chunk: None,
            }));
        })?;
        if let Some(e) = damage {
            self.deferred_error.get_or_insert((fi, e));
        }
        Ok(())
    }

    /// The next page of selected rows of sqlite3 file `fi` after row `after`; a full page queues
    /// the one after it.
    fn load_page(&mut self, fi: usize, s: &SqliteFile, after: Option<(i64, i64)>) -> Result<()> {
        let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let bounds = (
            self.opts.start_ns.map_or(i64::MIN, as_i64),
            self.opts.end_ns.map_or(i64::MAX, as_i64),
        );
        let rows = s.read_page_keys(self.wanted[fi].as_ref(), bounds, after)?;
        if rows.len() as i64 == SQLITE_PAGE {
            if let Some(&(id, _, ts)) = rows.last() {
                self.pending
                    .push(Reverse((ts.max(0) as u64, fi, Load::SqlitePage(Some((ts, id))))));
            }
        }
        for (id, topic_id, ts) in rows {
            let t = ts.max(0) as u64;
            let channel = topic_id as u32;
            self.ready.push(Reverse(Entry {
                key: (t, fi, row_position(id), 0),
                topic: self.topic(fi, channel),
                publish_time_ns: t,
                sequence: 0,
                channel_id: channel,
                location: Location::from_parts(fi, id as u64, None),
                chunk: None,
            }));
        }
        Ok(())
    }

    /// The message of `entry`, with its data when asked for.
    fn finish(&self, entry: Entry) -> Result<LocatedMessage> {
        let data = match (self.payload, &entry.chunk) {
            (Payload::Skip, _) => None,
            (Payload::Read, Some(chunk)) => {
                let slot = entry
                    .location
                    .index_in_chunk()
                    .and_then(|i| chunk.slot(i as usize));
                let stored = slot.map(|s| chunk.data(s).to_vec()).unwrap_or_default();
                Some(if self.reader.compression == BagCompression::Message {
                    let file = &self.reader.files[entry.location.file_index()].path;
                    decompress_message(&stored, file, &entry.topic, entry.key.0)?
                } else {
                    stored
                })
            }
            (Payload::Read, None) => Some(self.reader.read_at(&entry.location)?),
        };
        Ok(LocatedMessage {
            topic: entry.topic,
            log_time_ns: entry.key.0,
            publish_time_ns: entry.publish_time_ns,
            sequence: entry.sequence,
            channel_id: entry.channel_id,
            location: entry.location,
            data,
        })
    }
}

impl Iterator for LocatedIter<'_> {
    type Item = Result<LocatedMessage>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            let next_ready = self.ready.peek().map(|r| r.0.key.0);
            let load_first = match (self.pending.peek(), next_ready) {
                (Some(p), Some(t)) => p.0 .0 <= t,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if load_first {
                let Some(Reverse((_, fi, load))) = self.pending.pop() else {
                    break;
                };
                if let Err(e) = self.load(fi, load) {
                    self.failed = true;
                    return Some(Err(self.reader.files[fi].wrap(e)));
                }
                continue;
            }
            if let Some(Reverse(entry)) = self.ready.pop() {
                let result = self.finish(entry);
                self.failed = result.is_err();
                return Some(result);
            }
            break;
        }
        self.failed = true;
        let files = &self.reader.files;
        self.deferred_error.take().map(|(fi, e)| Err(files[fi].wrap(e)))
    }
}

impl BagReader {
    /// Every message selected by `opts` in the order of [`messages_with`](Self::messages_with),
    /// each with its [`Location`], and its data only with [`Payload::Read`]: for indexing a bag
    /// larger than memory, then reading payloads on demand with [`read_at`](Self::read_at).
    pub fn located_messages(&self, opts: ReadOptions, payload: Payload) -> LocatedIter<'_> {
        LocatedIter::new(self, opts, payload)
    }
}
