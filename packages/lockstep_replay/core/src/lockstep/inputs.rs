//! Which message a step gets on each input channel.
//!
//! - An input the recorded header names, on a channel a live module produces: that module's *simulated*
//!   output for the same (channel, epoch, sequence number). When that output was not simulated (its frame
//!   precedes the recording, or was skipped), the recorded message is the backup input (by default), or the
//!   frame is skipped, or the replay stops, as [`MissingUpstream`] says.
//! - An input on any other channel (external, or a module not live): the recorded message with the digest
//!   the header names.
//! - A channel a live module reads now but did not read when recorded: the latest message at or before the
//!   frame's start, simulated where a live module produces the channel, else recorded.
//!
//! Recorded and simulated data of one channel never mix within one frame: each channel is one input.

use std::collections::{BTreeMap, BTreeSet};

use lockstep_trace::{InputRecord, TraceHeader};

use super::recording::Recording;
use super::types::{MissingUpstream, Simulated};

/// Where an input's bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// The output of this index in the replay's outputs.
    Simulated(usize),
    /// The recorded message with this digest.
    Recorded(u64),
}

/// How an input was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Choice {
    /// As the recorded header names it.
    Named,
    /// The recorded message, standing in for an upstream output that was not simulated.
    Backup,
    /// A channel the live module reads that its recorded frame does not name.
    Added,
}

/// One input of a step.
#[derive(Debug, Clone)]
pub(super) struct Resolved {
    /// The input as the step names it (digest as consumed).
    pub record: InputRecord,
    pub source: Source,
    pub choice: Choice,
    /// The digest the recorded header named (`None` for an added input).
    pub recorded_digest: Option<u64>,
}

/// Why a frame cannot be stepped.
#[derive(Debug, Clone)]
pub(super) enum Missing {
    /// Skip the frame (or, with `strict`, stop).
    Skip(String),
    /// Stop the replay.
    Stop(String),
}

type FrameId = (String, u64, u32);

/// What the replay has simulated so far, and how to find recorded inputs.
pub(super) struct Inputs<'r> {
    recording: &'r Recording,
    /// Channels a live module produces in this replay.
    live_channels: BTreeSet<String>,
    simulated: BTreeMap<FrameId, usize>,
    /// Per live channel: (start stamp, index) -> output index.
    by_start: BTreeMap<String, BTreeMap<(i64, usize), usize>>,
    /// Recorded headers by (channel, digest): to name a recorded input by its producer's header.
    headers: BTreeMap<(&'r str, u64), &'r TraceHeader>,
}

impl<'r> Inputs<'r> {
    pub fn new(recording: &'r Recording, live_channels: BTreeSet<String>) -> Self {
        let headers = recording
            .frames
            .iter()
            .map(|f| {
                (
                    (f.header.channel_name.as_str(), f.header.payload_digest),
                    &f.header,
                )
            })
            .collect();
        Self {
            recording,
            live_channels,
            simulated: BTreeMap::new(),
            by_start: BTreeMap::new(),
            headers,
        }
    }

    /// Whether a live module produces `channel`.
    pub fn is_live(&self, channel: &str) -> bool {
        self.live_channels.contains(channel)
    }

    /// Remember output `index` (of `outputs`) as the simulated `header`'s frame.
    pub fn simulated(&mut self, header: &TraceHeader, index: usize) {
        let id = (header.channel_name.clone(), header.epoch, header.sequence_num);
        self.simulated.insert(id, index);
        self.by_start
            .entry(header.channel_name.clone())
            .or_default()
            .insert((header.start_time_ns, index), index);
    }

    fn recorded(&self, channel: &str, digest: u64) -> bool {
        self.recording
            .channels
            .get(channel)
            .is_some_and(|c| c.by_digest.contains_key(&digest))
    }

    /// The input `named` by a recorded header.
    pub fn named(
        &self,
        named: &InputRecord,
        outputs: &[Simulated],
        mode: MissingUpstream,
    ) -> Result<Resolved, Missing> {
        let channel = named.channel_name.as_str();
        let recorded = |choice| Resolved {
            record: named.clone(),
            source: Source::Recorded(named.payload_digest),
            choice,
            recorded_digest: Some(named.payload_digest),
        };
        if !self.is_live(channel) {
            return if self.recorded(channel, named.payload_digest) {
                Ok(recorded(Choice::Named))
            } else {
                Err(Missing::Skip(format!(
                    "input {channel} #{} (digest {:016x}) is not in the recording",
                    named.sequence_num, named.payload_digest
                )))
            };
        }
        let id = (channel.to_owned(), named.epoch, named.sequence_num);
        if let Some(&index) = self.simulated.get(&id) {
            let mut record = named.clone();
            record.payload_digest = outputs[index].header.payload_digest;
            return Ok(Resolved {
                record,
                source: Source::Simulated(index),
                choice: Choice::Named,
                recorded_digest: Some(named.payload_digest),
            });
        }
        let reason = format!(
            "input {channel} #{} was not simulated (its frame was skipped or precedes the recording)",
            named.sequence_num
        );
        match mode {
            MissingUpstream::Recorded if self.recorded(channel, named.payload_digest) => {
                Ok(recorded(Choice::Backup))
            }
            MissingUpstream::Recorded => Err(Missing::Skip(format!(
                "{reason}, and the recording does not hold it as a backup input"
            ))),
            MissingUpstream::Skip => Err(Missing::Skip(reason)),
            MissingUpstream::Error => Err(Missing::Stop(format!("{reason} (--missing-upstream error)"))),
        }
    }

    /// The latest message on `channel` at or before `start_ns`, for a live module that reads the channel
    /// although its recorded frame names no input on it.
    pub fn latest(
        &self,
        channel: &str,
        start_ns: i64,
        outputs: &[Simulated],
        mode: MissingUpstream,
    ) -> Result<Resolved, Missing> {
        if self.is_live(channel) {
            let found = self
                .by_start
                .get(channel)
                .and_then(|m| m.range(..=(start_ns, usize::MAX)).next_back());
            if let Some((_, &index)) = found {
                return Ok(Resolved {
                    record: outputs[index].header.as_input(),
                    source: Source::Simulated(index),
                    choice: Choice::Added,
                    recorded_digest: None,
                });
            }
            if mode != MissingUpstream::Recorded {
                let reason = format!("no simulated {channel} at or before the frame's start");
                return Err(match mode {
                    MissingUpstream::Error => Missing::Stop(reason),
                    _ => Missing::Skip(reason),
                });
            }
        }
        let latest = self.recording.channels.get(channel).and_then(|c| {
            let t = u64::try_from(start_ns).unwrap_or(0);
            let end = c.by_time.partition_point(|&(log_time_ns, _)| log_time_ns <= t);
            end.checked_sub(1).map(|i| (i, c.by_time[i]))
        });
        let Some((k, (log_time_ns, digest))) = latest else {
            return Err(Missing::Skip(format!(
                "no recorded {channel} at or before the frame's start (a channel the live module reads \
                 and its recorded frame does not name)"
            )));
        };
        let record = match self.headers.get(&(channel, digest)) {
            Some(h) => h.as_input(),
            None => TraceHeader::external(
                channel,
                u32::try_from(k).unwrap_or(u32::MAX),
                i64::try_from(log_time_ns).unwrap_or(i64::MAX),
                digest,
            )
            .as_input(),
        };
        Ok(Resolved {
            record,
            source: Source::Recorded(digest),
            choice: Choice::Added,
            recorded_digest: None,
        })
    }
}
