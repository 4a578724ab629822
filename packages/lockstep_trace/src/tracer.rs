//! Module-side bookkeeping: number outputs, remember inputs, build headers.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::model::TraceHeader;
use crate::{digest, Error, Result};

/// Wall-clock time now, nanoseconds since the Unix epoch (0 if the clock is before 1970, saturating in 2262).
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A duration in nanoseconds as the schema's `uint32 process_time`, saturating at `u32::MAX` (~4.29 s).
pub fn duration_to_ns_u32(duration: Duration) -> u32 {
    u32::try_from(duration.as_nanos()).unwrap_or(u32::MAX)
}

/// The start of one computation, returned by [`Tracer::begin`]: its wall-clock stamp for the header, and a
/// monotonic instant so the processing time is immune to clock jumps.
#[derive(Debug, Clone, Copy)]
pub struct Token {
    start_time_ns: i64,
    started: Instant,
}

impl Token {
    /// The start stamp, nanoseconds since the Unix epoch.
    pub fn start_time_ns(&self) -> i64 {
        self.start_time_ns
    }

    /// Time elapsed since the start.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// The dependency bookkeeping of one module: per output channel a sequence counter from 0, per input channel
/// the latest header received.
#[derive(Debug, Clone)]
pub struct Tracer {
    module_name: String,
    epoch: u64,
    next_sequence: BTreeMap<String, u32>,
    latest: BTreeMap<String, TraceHeader>,
}

impl Tracer {
    /// A tracer for the module (node) `module_name`; its epoch is the wall clock now (ns since the Unix
    /// epoch), so a restarted module's headers differ from its earlier run's even though sequence numbers
    /// start from 0 again.
    pub fn new(module_name: impl Into<String>) -> Self {
        Self::with_epoch(module_name, u64::try_from(now_ns()).unwrap_or(0).max(1))
    }

    /// A tracer with a chosen epoch (deterministic tests; a replay reproducing a recorded run).
    pub fn with_epoch(module_name: impl Into<String>, epoch: u64) -> Self {
        Self {
            module_name: module_name.into(),
            epoch,
            next_sequence: BTreeMap::new(),
            latest: BTreeMap::new(),
        }
    }

    /// The epoch written into every header (see [`TraceHeader::epoch`]).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The module this tracer writes headers for.
    pub fn module_name(&self) -> &str {
        &self.module_name
    }

    /// Start a computation now.
    pub fn begin(&self) -> Token {
        self.begin_at(now_ns())
    }

    /// Start a computation with an explicit start stamp (simulated time, replay).
    pub fn begin_at(&self, start_time_ns: i64) -> Token {
        Token {
            start_time_ns,
            started: Instant::now(),
        }
    }

    /// Remember `header` as the latest input received on its channel (replacing the previous one).
    pub fn record_input(&mut self, header: TraceHeader) {
        self.latest.insert(header.channel_name.clone(), header);
    }

    /// The latest input received on `channel`.
    pub fn latest_input(&self, channel: &str) -> Option<&TraceHeader> {
        self.latest.get(channel)
    }

    /// The sequence number the next output on `channel` will get.
    pub fn next_sequence(&self, channel: &str) -> u32 {
        self.next_sequence.get(channel).copied().unwrap_or(0)
    }

    /// Finish a computation: the header of the output `payload` (serialized message) on `channel`, computed
    /// from `inputs`. The processing time is measured from `token`.
    pub fn finish(
        &mut self,
        token: Token,
        channel: &str,
        payload: &[u8],
        inputs: &[&TraceHeader],
    ) -> TraceHeader {
        let process_time = token.elapsed();
        self.finish_with_process_time(token, process_time, channel, payload, inputs)
    }

    /// Like [`Tracer::finish`] with an explicit processing time (deterministic tests, replay).
    pub fn finish_with_process_time(
        &mut self,
        token: Token,
        process_time: Duration,
        channel: &str,
        payload: &[u8],
        inputs: &[&TraceHeader],
    ) -> TraceHeader {
        let counter = self.next_sequence.entry(channel.to_owned()).or_insert(0);
        let sequence_num = *counter;
        // Wrapping after 2^32 outputs keeps the module running; the (channel, digest) pairing and the start
        // stamps still tell wrapped numbers apart.
        *counter = counter.wrapping_add(1);
        TraceHeader {
            module_name: self.module_name.clone(),
            channel_name: channel.to_owned(),
            sequence_num,
            epoch: self.epoch,
            start_time_ns: token.start_time_ns,
            process_time_ns: duration_to_ns_u32(process_time),
            payload_digest: digest(payload),
            inputs: inputs.iter().map(|input| input.as_input()).collect(),
        }
    }

    /// Finish a computation that used the latest recorded input of each of `input_channels` (in that order).
    /// Fails, numbering nothing, if one of them never received an input.
    pub fn finish_latest(
        &mut self,
        token: Token,
        channel: &str,
        payload: &[u8],
        input_channels: &[&str],
    ) -> Result<TraceHeader> {
        let inputs = self.latest_of(input_channels)?;
        let process_time = token.elapsed();
        Ok(self.finish_with_process_time(
            token,
            process_time,
            channel,
            payload,
            &inputs.iter().collect::<Vec<_>>(),
        ))
    }

    fn latest_of(&self, channels: &[&str]) -> Result<Vec<TraceHeader>> {
        channels
            .iter()
            .map(|channel| {
                self.latest.get(*channel).cloned().ok_or_else(|| Error::NoInput {
                    module: self.module_name.clone(),
                    channel: (*channel).to_owned(),
                })
            })
            .collect()
    }
}
