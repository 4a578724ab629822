//! Pairing data messages with their headers.
//!
//! Data and headers travel on two topics, so either may arrive first, either may be lost, and a reliable
//! transport may still redeliver a header after a publisher restart. The matcher pairs them by
//! (channel, payload digest): the content itself names its header. Identical payloads share a digest; they
//! pair in arrival order, which is the best anyone can do and harmless, since their content is the same.

use std::collections::{BTreeMap, VecDeque};

use crate::model::TraceHeader;

/// Default number of unmatched data messages and of unmatched headers kept per channel.
pub const DEFAULT_MATCHER_CAPACITY: usize = 256;

/// Counters of what the matcher did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MatcherStats {
    /// Data messages paired with a header.
    pub matched: u64,
    /// Data messages dropped unmatched (evicted as the oldest, or given up by the caller).
    pub unmatched_data: u64,
    /// Headers evicted unmatched as the oldest.
    pub unmatched_headers: u64,
    /// Headers ignored because the same (channel, sequence, digest) was seen recently.
    pub duplicate_headers: u64,
}

#[derive(Debug)]
struct ChannelState<M> {
    data: VecDeque<(u64, M)>,
    headers: VecDeque<TraceHeader>,
    /// (sequence, digest) of the latest headers accepted, oldest first, to spot redeliveries.
    recent: VecDeque<(u32, u64)>,
}

impl<M> Default for ChannelState<M> {
    fn default() -> Self {
        Self {
            data: VecDeque::new(),
            headers: VecDeque::new(),
            recent: VecDeque::new(),
        }
    }
}

/// Pairs data messages (any payload `M`, e.g. the message or an index) with headers by (channel, digest),
/// with bounded buffers per channel that evict the oldest entry.
#[derive(Debug)]
pub struct HeaderMatcher<M> {
    capacity: usize,
    channels: BTreeMap<String, ChannelState<M>>,
    stats: MatcherStats,
}

impl<M> Default for HeaderMatcher<M> {
    fn default() -> Self {
        Self::new(DEFAULT_MATCHER_CAPACITY)
    }
}

impl<M> HeaderMatcher<M> {
    /// A matcher keeping at most `capacity` (at least 1) unmatched data and unmatched headers per channel.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            channels: BTreeMap::new(),
            stats: MatcherStats::default(),
        }
    }

    /// A data message with payload digest `digest` arrived on `channel`: its pair if its header is already
    /// here, else it waits (evicting the oldest waiting data of the channel when full).
    pub fn push_data(&mut self, channel: &str, digest: u64, data: M) -> Option<(M, TraceHeader)> {
        let capacity = self.capacity;
        let state = self.channels.entry(channel.to_owned()).or_default();
        if let Some(index) = state.headers.iter().position(|h| h.payload_digest == digest) {
            let header = state.headers.remove(index)?;
            self.stats.matched += 1;
            return Some((data, header));
        }
        state.data.push_back((digest, data));
        if state.data.len() > capacity {
            state.data.pop_front();
            self.stats.unmatched_data += 1;
        }
        None
    }

    /// A header arrived: its data if that is already here, else it waits (evicting the oldest waiting header
    /// of the channel when full). A redelivered header (same channel, sequence and digest as one of the
    /// latest `capacity` accepted) is counted and ignored.
    pub fn push_header(&mut self, header: TraceHeader) -> Option<(M, TraceHeader)> {
        let channel = header.channel_name.clone();
        self.push_header_on(&channel, header)
    }

    /// Like [`HeaderMatcher::push_header`], filed under `channel` instead of the header's own channel name
    /// (a subscriber knows the topic it listens to even when a remapped publisher names it differently).
    pub fn push_header_on(&mut self, channel: &str, header: TraceHeader) -> Option<(M, TraceHeader)> {
        let capacity = self.capacity;
        let state = self.channels.entry(channel.to_owned()).or_default();
        let id = (header.sequence_num, header.payload_digest);
        if state.recent.contains(&id) {
            self.stats.duplicate_headers += 1;
            return None;
        }
        state.recent.push_back(id);
        if state.recent.len() > capacity {
            state.recent.pop_front();
        }
        if let Some(index) = state.data.iter().position(|(d, _)| *d == header.payload_digest) {
            let (_, data) = state.data.remove(index)?;
            self.stats.matched += 1;
            return Some((data, header));
        }
        state.headers.push_back(header);
        if state.headers.len() > capacity {
            state.headers.pop_front();
            self.stats.unmatched_headers += 1;
        }
        None
    }

    /// Stop waiting for the header of the first waiting data on `channel` with `digest` that satisfies
    /// `which`; returns it (counted as unmatched) if found.
    pub fn give_up_data(&mut self, channel: &str, digest: u64, which: impl Fn(&M) -> bool) -> Option<M> {
        let state = self.channels.get_mut(channel)?;
        let index = state.data.iter().position(|(d, m)| *d == digest && which(m))?;
        let (_, data) = state.data.remove(index)?;
        self.stats.unmatched_data += 1;
        Some(data)
    }

    /// How many data messages of `channel` wait for their header.
    pub fn pending_data(&self, channel: &str) -> usize {
        self.channels.get(channel).map_or(0, |s| s.data.len())
    }

    /// How many headers of `channel` wait for their data.
    pub fn pending_headers(&self, channel: &str) -> usize {
        self.channels.get(channel).map_or(0, |s| s.headers.len())
    }

    /// Whether any header was ever accepted on `channel` (i.e. its publisher is traced).
    pub fn has_seen_headers(&self, channel: &str) -> bool {
        self.channels.get(channel).is_some_and(|s| !s.recent.is_empty())
    }

    /// The counters so far.
    pub fn stats(&self) -> MatcherStats {
        self.stats
    }
}
