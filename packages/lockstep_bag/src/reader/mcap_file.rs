//! The MCAP storage of the reader: what an MCAP file holds (from its summary, or from one linear
//! pass when it has no usable summary), and reading its chunks, messages and extra records.

use super::types::ChannelInfo;
use crate::mcapio::{self, RecordPos, SummaryState};
use crate::metadata::union_range;
use crate::msgdefs::MessageDefinition;
use crate::{Error, Result};
use mcap::records::{ChunkIndex, MessageHeader, Record};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An MCAP storage file opened for reading (read-only).
pub(super) struct McapFile {
    pub(super) path: PathBuf,
    pub(super) channels: BTreeMap<u16, ChannelInfo>,
    /// Chunk indexes (sorted by start time) when the file has a usable summary; `None`: the file is
    /// read linearly, all at once.
    pub(super) chunks: Option<Vec<ChunkIndex>>,
    /// The summary, kept exactly when `chunks` is (for the attachment and metadata indexes).
    summary: Option<mcap::Summary>,
    pub(super) counts: BTreeMap<u16, u64>,
    pub(super) time_range: Option<(u64, u64)>,
    /// What is wrong with the file, when its summary could not be trusted or a linear pass stopped
    /// before the footer (one line, naming the file and the byte offset).
    pub(super) damage: Option<String>,
}

/// The non-message records a reader can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ExtraKind {
    Attachments,
    Metadata,
}

fn channel_info(channel: &mcap::Channel<'_>) -> ChannelInfo {
    let (type_name, definition) = match &channel.schema {
        Some(s) => (
            s.name.clone(),
            Some(MessageDefinition {
                encoding: s.encoding.clone(),
                text: String::from_utf8_lossy(&s.data).into_owned(),
            }),
        ),
        None => (String::new(), None),
    };
    let meta = |key: &str| channel.metadata.get(key).cloned().unwrap_or_default();
    ChannelInfo {
        topic: Arc::from(channel.topic.as_str()),
        type_name,
        encoding: channel.message_encoding.clone(),
        qos_text: meta("offered_qos_profiles"),
        type_hash: meta("topic_type_hash"),
        definition,
    }
}

/// An error about one MCAP file without the file's name (the caller names it).
fn reason_of(error: &Error) -> String {
    match error {
        Error::Malformed { offset, reason, .. } => format!("at byte offset {offset}: {reason}"),
        Error::Mcap {
            offset: Some(offset),
            source,
            ..
        } => format!("at byte offset {offset}: {source}"),
        other => crate::error_chain(other),
    }
}

impl McapFile {
    pub(super) fn open(path: &Path) -> Result<Self> {
        let summary = match mcapio::read_summary(path)? {
            SummaryState::Present(summary) => Some(*summary),
            SummaryState::Absent => None,
            SummaryState::Untrusted(e) => return Self::open_linear(path, Some(e)),
        };
        if let Some(summary) = summary {
            let stats = summary.stats.clone();
            // Files whose summary lacks chunk indexes (or holds messages outside chunks) are read
            // linearly.
            let indexed = !summary.chunk_indexes.is_empty()
                && stats
                    .as_ref()
                    .is_some_and(|s| s.chunk_count as usize == summary.chunk_indexes.len());
            if indexed || stats.as_ref().is_some_and(|s| s.message_count == 0) {
                let mut chunks = summary.chunk_indexes.clone();
                chunks.sort_by_key(|c| (c.message_start_time, c.chunk_start_offset));
                return Ok(McapFile {
                    path: path.to_path_buf(),
                    channels: summary
                        .channels
                        .iter()
                        .map(|(id, c)| (*id, channel_info(c)))
                        .collect(),
                    chunks: Some(chunks),
                    counts: stats
                        .as_ref()
                        .map(|s| s.channel_message_counts.clone())
                        .unwrap_or_default(),
                    time_range: stats
                        .as_ref()
                        .filter(|s| s.message_count > 0)
                        .map(|s| (s.message_start_time, s.message_end_time)),
                    summary: Some(summary),
                    damage: None,
                });
            }
        }
        Self::open_linear(path, None)
    }

    /// Learns channels, counts and times from one pass over the data section. `untrusted`: why the
    /// summary was not used, if the file has one that does not fit it.
    fn open_linear(path: &Path, untrusted: Option<Error>) -> Result<Self> {
        let mut acc = mcap::read::ChannelAccumulator::default();
        let mut counts: BTreeMap<u16, u64> = BTreeMap::new();
        let mut range: Option<(u64, u64)> = None;
        let mut channel_ids = BTreeSet::new();
        let end = mcapio::scan(path, |pos, record| {
            match record {
                Record::Schema { header, data } => {
                    acc.add_schema(header, data.into_owned().into())
                        .map_err(|e| Error::mcap(path, Some(pos.offset), e))?;
                }
                Record::Channel(c) => {
                    channel_ids.insert(c.id);
                    acc.add_channel(c)
                        .map_err(|e| Error::mcap(path, Some(pos.offset), e))?;
                }
                Record::Message { header, .. } => {
                    *counts.entry(header.channel_id).or_default() += 1;
                    range = union_range(range, header.log_time, header.log_time);
                }
                _ => {}
            }
            Ok(())
        })?;
        let size = std::fs::metadata(path).map_err(|e| Error::io(path, e))?.len();
        let messages: u64 = counts.values().sum();
        let damage = match (end.error, untrusted) {
            (Some(err), _) if end.valid_end == 0 => return Err(err),
            (Some(err), _) => Some(format!(
                "{}: truncated at byte {} of {size} ({messages} messages before it), summary not trusted: {}",
                path.display(),
                end.valid_end,
                reason_of(&err)
            )),
            (None, Some(why)) => Some(format!(
                "{}: summary not trusted ({messages} messages read from the data section instead): {}",
                path.display(),
                reason_of(&why)
            )),
            (None, None) => None,
        };
        let channels = channel_ids
            .iter()
            .filter_map(|&id| acc.get(id).map(|c| (id, channel_info(&c))))
            .collect();
        Ok(McapFile {
            path: path.to_path_buf(),
            channels,
            chunks: None,
            summary: None,
            counts,
            time_range: range,
            damage,
        })
    }

    /// Calls `f` with every message of chunk `ci` (an index into `chunks`).
    pub(super) fn read_chunk(
        &self,
        ci: usize,
        mut f: impl FnMut(RecordPos, MessageHeader, Vec<u8>),
    ) -> Result<()> {
        let Some(chunk) = self.chunks.as_ref().and_then(|c| c.get(ci)) else {
            return Ok(());
        };
        let mut file = File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        let offset = chunk.chunk_start_offset;
        mcapio::for_each_in_chunk(&self.path, &mut file, chunk, |i, record| {
            if let Record::Message { header, data } = record {
                let pos = RecordPos {
                    offset,
                    in_chunk: Some(i),
                };
                f(pos, header, data.into_owned());
            }
            Ok(())
        })
    }

    /// Calls `f` with every message of the file, in one linear pass. A damaged tail (crashed
    /// writer) does not fail the pass: the messages before it are passed on and the error that
    /// stopped the pass is returned as `Ok(Some(..))`.
    pub(super) fn read_all(
        &self,
        mut f: impl FnMut(RecordPos, MessageHeader, Vec<u8>),
    ) -> Result<Option<Error>> {
        let end = mcapio::scan(&self.path, |pos, record| {
            if let Record::Message { header, data } = record {
                f(pos, header, data.into_owned());
            }
            Ok(())
        })?;
        Ok(end.error)
    }

    /// Calls `f` with every attachment or metadata record of the file: through the summary's
    /// indexes when the file has them, else by a linear pass.
    pub(super) fn for_each_extra(&self, kind: ExtraKind, mut f: impl FnMut(Record<'_>)) -> Result<()> {
        let Some(summary) = &self.summary else {
            mcapio::scan(&self.path, |_, record| {
                f(record);
                Ok(())
            })?;
            return Ok(());
        };
        let places: Vec<(u64, u64)> = match kind {
            ExtraKind::Attachments => summary
                .attachment_indexes
                .iter()
                .map(|i| (i.offset, i.length))
                .collect(),
            ExtraKind::Metadata => summary
                .metadata_indexes
                .iter()
                .map(|i| (i.offset, i.length))
                .collect(),
        };
        let mut file = File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        for (offset, length) in places {
            mcapio::with_record_at(&self.path, &mut file, offset, length, |record| {
                f(record);
                Ok(())
            })?;
        }
        Ok(())
    }
}
