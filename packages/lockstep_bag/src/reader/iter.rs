//! Iteration: merges the messages of every storage file of a bag into one timestamp-ordered stream.

use super::bag::BagReader;
use super::compressed::{decompress_message, BagCompression};
use super::mcap_file::McapFile;
use super::sqlite_file::SQLITE_PAGE;
use super::storage::StorageFile;
use super::types::{BagMessage, ReadOptions};
use crate::mcapio::RecordPos;
use crate::{Error, Result};
use mcap::records::MessageHeader;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::sync::Arc;

/// Ordering key of a message: log time, then the order the bag was written in: file index, then
/// position in the file. For MCAP the position is the byte offset of the top-level record holding
/// the message (the message itself, or its chunk) and, inside a chunk, 1 + the record's index in
/// the chunk; for sqlite3 it is the row id (insertion order). Channel id and MCAP sequence play no
/// part: messages of different topics with equal times come in the order they were written, on
/// every path (indexed chunks, a linear pass, sqlite3 pages) and after `seek`.
pub(super) type MsgKey = (u64, usize, u64, u64);

/// A sqlite3 row id as a position that sorts like the id (ids may in theory be negative).
pub(super) fn row_position(id: i64) -> u64 {
    (id as u64) ^ (1 << 63)
}

/// Loads still to do, by the earliest time they can yield (then file index).
pub(super) type Pending = BinaryHeap<Reverse<(u64, usize, Load)>>;

struct Ready {
    key: MsgKey,
    msg: BagMessage,
}

impl PartialEq for Ready {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ready {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// One read of a storage file while iterating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Load {
    /// The chunk at this index of the file's chunk indexes.
    McapChunk(usize),
    /// The whole file in one linear pass (no usable index).
    McapWhole,
    /// The next page of rows after (timestamp, id).
    SqlitePage(Option<(i64, i64)>),
}

/// Per storage file, the channel (MCAP) or topic (sqlite3) ids `opts` selects (`None`: all).
pub(super) fn wanted_channels(reader: &BagReader, opts: &ReadOptions) -> Vec<Option<BTreeSet<u32>>> {
    let topics = opts.topics.as_ref();
    reader
        .files
        .iter()
        .map(|f| {
            let topics = topics?;
            Some(
                f.storage
                    .channels()
                    .into_iter()
                    .filter(|(_, c, _)| topics.contains(&*c.topic))
                    .map(|(id, _, _)| id)
                    .collect(),
            )
        })
        .collect()
}

/// What to read first, ordered by the earliest time each load can yield: the MCAP chunks that may
/// hold selected messages, a linear pass for each unindexed MCAP file, the first page of each
/// sqlite3 file.
pub(super) fn initial_loads(
    reader: &BagReader,
    opts: &ReadOptions,
    wanted: &[Option<BTreeSet<u32>>],
) -> Pending {
    let mut pending = BinaryHeap::new();
    for (fi, f) in reader.files.iter().enumerate() {
        match &f.storage {
            StorageFile::Mcap(m) => match &m.chunks {
                Some(chunks) => {
                    for (ci, c) in chunks.iter().enumerate() {
                        if opts.start_ns.is_some_and(|s| c.message_end_time < s)
                            || opts.end_ns.is_some_and(|e| c.message_start_time >= e)
                        {
                            continue;
                        }
                        if let Some(w) = wanted.get(fi).and_then(Option::as_ref) {
                            if !c.message_index_offsets.is_empty()
                                && !c.message_index_offsets.keys().any(|k| w.contains(&u32::from(*k)))
                            {
                                continue;
                            }
                        }
                        pending.push(Reverse((c.message_start_time, fi, Load::McapChunk(ci))));
                    }
                }
                None => pending.push(Reverse((0, fi, Load::McapWhole))),
            },
            StorageFile::Sqlite(_) => {
                pending.push(Reverse((opts.start_ns.unwrap_or(0), fi, Load::SqlitePage(None))));
            }
        }
    }
    pending
}

/// Iterator over a bag's messages in timestamp order.
///
/// What it holds in memory depends on the storage:
/// - an indexed MCAP file (one with a summary and chunk indexes, as every finished writer leaves):
///   a chunk is decompressed when the merge reaches its start time, so the iterator holds the
///   messages of the chunks that overlap the current time (one or two for a bag written in time
///   order; more when chunks overlap in time, e.g. out-of-order writes);
/// - an MCAP file without a usable index (a writer killed before it wrote the summary, or a file
///   written without chunk indexes): read in one linear pass, so **every selected message of that
///   file is held at once**. `lockstep bag reindex` rewrites such a file with indexes;
/// - sqlite3: pages of 4096 rows per file, fetched in timestamp order.
pub struct MessageIter<'a> {
    reader: &'a BagReader,
    opts: ReadOptions,
    // Pending loads, ordered by the earliest time they can yield.
    pending: Pending,
    ready: BinaryHeap<Reverse<Ready>>,
    wanted: Vec<Option<BTreeSet<u32>>>,
    failed: bool,
    deferred_error: Option<(usize, Error)>,
}

impl std::fmt::Debug for MessageIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageIter")
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl<'a> MessageIter<'a> {
    pub(super) fn new(reader: &'a BagReader, opts: ReadOptions) -> Self {
        let mut it = MessageIter {
            reader,
            opts,
            pending: BinaryHeap::new(),
            ready: BinaryHeap::new(),
            wanted: Vec::new(),
            failed: false,
            deferred_error: None,
        };
        it.reset();
        it
    }

    /// Restarts iteration at the first message at or after `time_ns` (same topic filter).
    pub fn seek(&mut self, time_ns: u64) {
        self.opts.start_ns = Some(time_ns);
        self.reset();
    }

    fn reset(&mut self) {
        self.ready.clear();
        self.failed = false;
        self.deferred_error = None;
        self.wanted = wanted_channels(self.reader, &self.opts);
        self.pending = initial_loads(self.reader, &self.opts, &self.wanted);
    }

    fn accept(&self, fi: usize, channel: u32, t: u64) -> bool {
        self.opts.wants_time(t) && self.wanted[fi].as_ref().is_none_or(|w| w.contains(&channel))
    }

    fn load(&mut self, fi: usize, load: Load) -> Result<()> {
        let reader = self.reader;
        match (&reader.files[fi].storage, load) {
            (StorageFile::Mcap(m), Load::McapChunk(ci)) => {
                m.read_chunk(ci, |pos, header, data| self.push_mcap(m, fi, pos, header, data))
            }
            (StorageFile::Mcap(m), Load::McapWhole) => {
                // A damaged tail (crashed writer) still lets the intact messages through; the
                // error is reported once they have been yielded.
                if let Some(e) = m.read_all(|pos, header, data| self.push_mcap(m, fi, pos, header, data))? {
                    self.deferred_error.get_or_insert((fi, e));
                }
                Ok(())
            }
            (StorageFile::Sqlite(s), Load::SqlitePage(after)) => {
                let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
                let bounds = (
                    self.opts.start_ns.map_or(i64::MIN, as_i64),
                    self.opts.end_ns.map_or(i64::MAX, as_i64),
                );
                let rows = s.read_page(self.wanted[fi].as_ref(), bounds, after)?;
                if rows.len() as i64 == SQLITE_PAGE {
                    if let Some(&(id, _, ts, _)) = rows.last() {
                        self.pending
                            .push(Reverse((ts.max(0) as u64, fi, Load::SqlitePage(Some((ts, id))))));
                    }
                }
                for (id, topic_id, ts, data) in rows {
                    let t = ts.max(0) as u64;
                    let topic = s.topics.get(&topic_id).map(|c| c.topic.clone());
                    let ids = (topic_id as u32, 0);
                    self.push((t, fi, row_position(id), 0), ids, topic, t, data);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn push_mcap(&mut self, m: &McapFile, fi: usize, pos: RecordPos, header: MessageHeader, data: Vec<u8>) {
        let channel = u32::from(header.channel_id);
        if !self.accept(fi, channel, header.log_time) {
            return;
        }
        let topic = m.channels.get(&header.channel_id).map(|c| c.topic.clone());
        let in_chunk = pos.in_chunk.map_or(0, |i| i as u64 + 1);
        self.push(
            (header.log_time, fi, pos.offset, in_chunk),
            (channel, header.sequence),
            topic,
            header.publish_time,
            data,
        );
    }

    /// Queues a message; `(channel_id, sequence)` are reported with it, not used for ordering.
    fn push(
        &mut self,
        key: MsgKey,
        (channel_id, sequence): (u32, u32),
        topic: Option<Arc<str>>,
        publish_time_ns: u64,
        data: Vec<u8>,
    ) {
        let (log_time_ns, file_index, _, _) = key;
        self.ready.push(Reverse(Ready {
            key,
            msg: BagMessage {
                topic: topic.unwrap_or_else(|| Arc::from("")),
                log_time_ns,
                publish_time_ns,
                data,
                sequence,
                file_index,
                channel_id,
            },
        }));
    }
}

impl Iterator for MessageIter<'_> {
    type Item = Result<BagMessage>;

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
            if let Some(r) = self.ready.pop() {
                let mut msg = r.0.msg;
                if self.reader.compression == BagCompression::Message {
                    let file = &self.reader.files[msg.file_index].path;
                    match decompress_message(&msg.data, file, &msg.topic, msg.log_time_ns) {
                        Ok(data) => msg.data = data,
                        Err(e) => {
                            self.failed = true;
                            return Some(Err(e));
                        }
                    }
                }
                return Some(Ok(msg));
            }
            break;
        }
        self.failed = true;
        let files = &self.reader.files;
        self.deferred_error.take().map(|(fi, e)| Err(files[fi].wrap(e)))
    }
}
