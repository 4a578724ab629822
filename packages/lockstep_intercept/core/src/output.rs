//! Outputs waiting for their inputs' headers: an inferred header names each input with its producer's
//! header (module, sequence number, epoch, its own inputs), which a traced upstream publishes just after the
//! data. An output's header is published once every traced input's header is here, or when its wait runs
//! out (the input is then named as from an untraced publisher, as an instrumented module would).

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use lockstep_trace::{InputRecord, TraceHeader};

/// How long an output waits for the headers of its inputs by default; headers follow their data within a
/// millisecond normally, this only bounds the wait when one is lost. `LOCKSTEP_INTERCEPT_HEADER_WAIT_MS`
/// sets another (a machine so loaded that headers come later would otherwise name inputs as untraced).
pub const HEADER_WAIT: Duration = Duration::from_millis(200);
/// The longest wait `LOCKSTEP_INTERCEPT_HEADER_WAIT_MS` may ask for (an output's header is held that long).
pub const MAX_HEADER_WAIT: Duration = Duration::from_secs(10);

/// The header wait an environment value asks for: milliseconds in [0, 10000]; anything else (not set, not a
/// number, out of range) is the default.
pub fn header_wait(value: Option<&str>) -> Duration {
    value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
        .filter(|d| *d <= MAX_HEADER_WAIT)
        .unwrap_or(HEADER_WAIT)
}
/// Headers kept per channel to name inputs by (the latest ones).
pub const HEADERS_KEPT: usize = 256;

/// A message a node took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub channel: String,
    pub digest: u64,
    /// The node's count of messages taken on this subscription before this one.
    pub arrival: u32,
    /// Wall clock when it was taken.
    pub wall_ns: i64,
    /// Whether its publisher's header is to be waited for.
    pub traced_upstream: bool,
}

/// One input of an output, until it is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingInput {
    pub taken: Taken,
}

impl From<Taken> for PendingInput {
    fn from(taken: Taken) -> Self {
        Self { taken }
    }
}

/// An output whose header waits for its inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingOutput {
    /// The header, inputs still empty.
    pub header: TraceHeader,
    pub inputs: Vec<PendingInput>,
}

/// The latest headers received per channel.
#[derive(Debug, Default)]
pub struct HeaderStore {
    channels: BTreeMap<String, VecDeque<TraceHeader>>,
    /// Headers pushed so far: waiting outputs are looked at again only when it changed.
    generation: u64,
}

impl HeaderStore {
    /// Keep a header received on `channel`'s header topic.
    pub fn push(&mut self, channel: &str, header: TraceHeader) {
        let kept = self.channels.entry(channel.to_owned()).or_default();
        if kept.len() >= HEADERS_KEPT {
            kept.pop_front();
        }
        kept.push_back(header);
        self.generation += 1;
    }

    /// The latest header of the message with `digest` on `channel`.
    pub fn find(&self, channel: &str, digest: u64) -> Option<&TraceHeader> {
        self.channels
            .get(channel)?
            .iter()
            .rev()
            .find(|h| h.payload_digest == digest)
    }
}

/// Outputs waiting, in publish order, each with its deadline.
#[derive(Debug, Default)]
pub struct Waiting {
    outputs: VecDeque<(Instant, PendingOutput)>,
    /// How long each waits ([`HEADER_WAIT`] when not set).
    wait: Option<Duration>,
    /// Inputs named as untraced because their header did not come in time.
    pub headers_missed: u64,
    /// The store's generation when the outputs were last looked at.
    seen_generation: u64,
}

impl Waiting {
    /// Outputs that wait `wait` for their inputs' headers.
    pub fn with_wait(wait: Duration) -> Waiting {
        Waiting {
            wait: Some(wait),
            ..Waiting::default()
        }
    }

    /// The header of `output`, published at `now`, if every input can be named already; else it waits.
    pub fn push(&mut self, store: &HeaderStore, now: Instant, output: PendingOutput) -> Option<TraceHeader> {
        if let Some((header, _)) = name_inputs(&output, store, false) {
            return Some(header);
        }
        self.outputs
            .push_back((now + self.wait.unwrap_or(HEADER_WAIT), output));
        None
    }

    /// Outputs waiting.
    pub fn len(&self) -> usize {
        self.outputs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty()
    }

    /// The headers ready at `now` (every input named, or the wait over; everything with `flush`), in the
    /// order their outputs were published.
    pub fn ready(&mut self, store: &HeaderStore, now: Instant, flush: bool) -> Vec<TraceHeader> {
        // Nothing new to name inputs with and no wait over (outputs wait in publish order, so the oldest
        // deadline is the first): nothing to look at.
        let first_deadline = self.outputs.front().map(|(deadline, _)| *deadline);
        let stale = store.generation == self.seen_generation;
        if first_deadline.is_none() || (!flush && stale && first_deadline.is_some_and(|d| now < d)) {
            return Vec::new();
        }
        self.seen_generation = store.generation;
        let mut ready = Vec::new();
        let mut kept = VecDeque::new();
        while let Some((deadline, output)) = self.outputs.pop_front() {
            let give_up = flush || now >= deadline;
            match name_inputs(&output, store, give_up) {
                Some((header, missed)) => {
                    self.headers_missed += missed;
                    ready.push(header);
                }
                None => kept.push_back((deadline, output)),
            }
        }
        self.outputs = kept;
        ready
    }
}

/// The header of `output` with every input named, or `None` while a traced input's header is missing and
/// `give_up` is false. Also returns how many inputs were named without their header.
fn name_inputs(output: &PendingOutput, store: &HeaderStore, give_up: bool) -> Option<(TraceHeader, u64)> {
    let mut inputs: Vec<InputRecord> = Vec::with_capacity(output.inputs.len());
    let mut missed = 0;
    for input in &output.inputs {
        let t = &input.taken;
        match store.find(&t.channel, t.digest) {
            Some(header) => inputs.push(header.as_input()),
            None if t.traced_upstream && !give_up => return None,
            None => {
                missed += u64::from(t.traced_upstream);
                inputs.push(TraceHeader::external(&t.channel, t.arrival, t.wall_ns, t.digest).as_input());
            }
        }
    }
    let mut header = output.header.clone();
    header.inputs = inputs;
    Some((header, missed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_wait_comes_from_the_environment_within_its_bound() {
        assert_eq!(header_wait(None), HEADER_WAIT);
        assert_eq!(header_wait(Some(" 2000 ")), Duration::from_millis(2000));
        for bad in ["", "x", "-1", "1e3", "10001", "18446744073709551616"] {
            assert_eq!(header_wait(Some(bad)), HEADER_WAIT, "{bad}");
        }
    }

    fn taken(channel: &str, digest: u64, traced: bool) -> PendingInput {
        PendingInput::from(Taken {
            channel: channel.into(),
            digest,
            arrival: 4,
            wall_ns: 10,
            traced_upstream: traced,
        })
    }

    fn output(inputs: Vec<PendingInput>) -> PendingOutput {
        let mut header = TraceHeader::external("/out", 0, 1, 99);
        header.module_name = "fusion".into();
        PendingOutput { header, inputs }
    }

    fn upstream(channel: &str, digest: u64) -> TraceHeader {
        let mut h = TraceHeader::external(channel, 7, 5, digest);
        h.module_name = "filter".into();
        h.epoch = 3;
        h
    }

    #[test]
    fn an_output_waits_for_its_traced_inputs_header_then_names_it() {
        let mut store = HeaderStore::default();
        let mut waiting = Waiting::default();
        let t0 = Instant::now();
        let untraced = waiting.push(&store, t0, output(vec![taken("/b", 2, false)]));
        assert!(untraced.is_some(), "no traced input: named at once");
        let both = output(vec![taken("/a", 1, true), taken("/b", 2, false)]);
        assert!(waiting.push(&store, t0, both).is_none());
        assert!(
            waiting.ready(&store, t0, false).is_empty(),
            "the header of /a is not here yet"
        );
        store.push("/a", upstream("/a", 1));
        let ready = waiting.ready(&store, t0, false);
        assert_eq!(ready.len(), 1);
        let inputs = &ready[0].inputs;
        assert_eq!(
            (
                inputs[0].module_name.as_str(),
                inputs[0].sequence_num,
                inputs[0].epoch
            ),
            ("filter", 7, 3)
        );
        assert_eq!(
            (inputs[1].module_name.as_str(), inputs[1].sequence_num),
            ("", 4),
            "untraced: arrival count"
        );
        assert_eq!(waiting.headers_missed, 0);
    }

    #[test]
    fn a_lost_header_names_the_input_as_untraced_at_the_deadline() {
        let store = HeaderStore::default();
        let mut waiting = Waiting::default();
        let t0 = Instant::now();
        assert!(waiting
            .push(&store, t0, output(vec![taken("/a", 1, true)]))
            .is_none());
        assert!(waiting.ready(&store, t0 + HEADER_WAIT / 2, false).is_empty());
        let ready = waiting.ready(&store, t0 + HEADER_WAIT, false);
        assert_eq!(ready[0].inputs[0].module_name, "");
        assert_eq!(waiting.headers_missed, 1);
        assert!(waiting.is_empty());
    }

    #[test]
    fn the_store_names_the_latest_header_of_a_digest() {
        let mut store = HeaderStore::default();
        let mut first = upstream("/a", 1);
        first.sequence_num = 1;
        store.push("/a", first);
        store.push("/a", upstream("/a", 1));
        assert_eq!(store.find("/a", 1).map(|h| h.sequence_num), Some(7));
        assert!(store.find("/a", 2).is_none());
        for n in 0..(HEADERS_KEPT as u64 + 1) {
            store.push("/c", upstream("/c", n));
        }
        assert!(store.find("/c", 0).is_none(), "the oldest is dropped");
    }
}
