//! The bookkeeping of lock-step replay's step protocol, without ROS: what a grant allows, the recent inputs a
//! module keeps to find a grant's inputs in, and matching a computation's outputs to the grant's frames.
//!
//! `lockstep_trace_ros::step` serves the step service and answers it; everything it decides from plain
//! headers, digests and times lives here so that it is testable without a ROS graph.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::model::TraceHeader;
use crate::pairing::Traced;

/// What a refusal says when a grant's inputs did not arrive before its deadline (the replay looks for it to
/// publish recorded inputs again; the Python module's refusal says the same).
pub const INPUTS_NOT_RECEIVED: &str = "inputs not received";

/// How long a module waits for a grant's inputs when the request says 0.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_millis(2000);

/// How many recent messages per input channel a module in step mode keeps to find a grant's inputs in.
pub const RECENT_DEPTH: usize = 256;

/// One output published for a grant: its header and canonical CDR.
pub type StepOutputData = (TraceHeader, Vec<u8>);

/// The wait for a grant's inputs a request asks for: `timeout_ms`, or [`DEFAULT_STEP_TIMEOUT`] for 0.
pub fn step_timeout(timeout_ms: u32) -> Duration {
    match timeout_ms {
        0 => DEFAULT_STEP_TIMEOUT,
        ms => Duration::from_millis(u64::from(ms)),
    }
}

/// The last [`RECENT_DEPTH`] messages received on one channel, by digest.
#[derive(Debug)]
pub struct Recent<T> {
    items: VecDeque<(u64, T)>,
}

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Self {
            items: VecDeque::new(),
        }
    }
}

impl<T> Recent<T> {
    /// Keep `reading` (the oldest goes when full).
    pub fn push(&mut self, reading: Traced<T>) {
        if self.items.len() == RECENT_DEPTH {
            self.items.pop_front();
        }
        self.items.push_back((reading.digest, reading.msg));
    }

    /// The newest message with `digest`.
    pub fn find(&self, digest: u64) -> Option<&T> {
        self.items
            .iter()
            .rev()
            .find(|(d, _)| *d == digest)
            .map(|(_, m)| m)
    }

    /// The newest message.
    pub fn latest(&self) -> Option<&T> {
        self.items.back().map(|(_, m)| m)
    }
}

/// What one granted computation allows: the frames to compute, until when its inputs may arrive, and the
/// input channels looked up in vain (named when the grant is refused).
#[derive(Debug)]
pub struct StepGrant {
    /// The recorded header of the frame to compute, input digests as the replay wants them consumed.
    pub frame: TraceHeader,
    /// The recorded headers of the computation's other outputs (empty for a one-output computation).
    pub more_frames: Vec<TraceHeader>,
    started: Instant,
    deadline: Instant,
    missing: Mutex<BTreeSet<String>>,
}

impl StepGrant {
    /// A grant of `frame` (and `more_frames`) made at `started`, whose inputs may arrive for `timeout`.
    pub fn new(
        frame: TraceHeader,
        more_frames: Vec<TraceHeader>,
        started: Instant,
        timeout: Duration,
    ) -> Self {
        Self {
            frame,
            more_frames,
            started,
            deadline: started + timeout,
            missing: Mutex::default(),
        }
    }

    /// When the grant expires unless answered.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The digest of the input the frame names on `channel`.
    pub fn input_digest(&self, channel: &str) -> Option<u64> {
        self.frame.input(channel).map(|i| i.payload_digest)
    }

    /// The message of `recent` (the buffer of `channel`) that the frame names as its input on `channel`;
    /// `None` while it has not arrived (or if the frame names no input on `channel`), remembered for the
    /// refusal if it never does.
    pub fn find<'r, T>(&self, recent: &'r Recent<T>, channel: &str) -> Option<&'r T> {
        let found = self.input_digest(channel).and_then(|d| recent.find(d));
        if found.is_none() {
            if let Ok(mut missing) = self.missing.lock() {
                missing.insert(channel.to_owned());
            }
        }
        found
    }

    /// Every frame of the computation: [`StepGrant::frame`], then [`StepGrant::more_frames`].
    pub fn frames(&self) -> impl Iterator<Item = &TraceHeader> {
        std::iter::once(&self.frame).chain(&self.more_frames)
    }

    /// The frame of the output on `channel`, if the grant names one. A module with several outputs publishes
    /// those the grant names (a recording may have lost one output of a computation).
    pub fn frame_for(&self, channel: &str) -> Option<&TraceHeader> {
        self.frames().find(|f| f.channel_name == channel)
    }

    /// The output channels the grant names, comma separated (for messages).
    pub fn channels(&self) -> String {
        self.frames()
            .map(|f| f.channel_name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// When the computation was granted (for the process time reported back).
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The header of the output on `channel` whose canonical CDR is `payload`: the grant's frame of that
    /// channel (recorded channel, sequence number, epoch, start stamp, process time and inputs) with the
    /// payload's digest. `None` when the grant names no output on `channel`.
    pub fn output_header(&self, channel: &str, payload: &[u8]) -> Option<TraceHeader> {
        let mut header = self.frame_for(channel)?.clone();
        header.payload_digest = crate::digest::digest(payload);
        Some(header)
    }

    /// Why the grant is refused at its deadline: the inputs looked up but never received.
    pub fn refusal(&self) -> String {
        let missing = self.missing.lock().map(|m| m.clone()).unwrap_or_default();
        let named: Vec<String> = missing
            .iter()
            .map(|channel| match self.input_digest(channel) {
                Some(d) => format!("{channel} (digest {d:016x})"),
                None => format!("{channel} (the frame names no input on it)"),
            })
            .collect();
        format!(
            "{} #{}: {INPUTS_NOT_RECEIVED} within {} ms: {}",
            self.frame.channel_name,
            self.frame.sequence_num,
            self.deadline.saturating_duration_since(self.started).as_millis(),
            if named.is_empty() {
                "(none looked up)".to_owned()
            } else {
                named.join(", ")
            }
        )
    }

    /// Why the grant is refused at its deadline when the module's simulated clock (reading `now_ns`, or
    /// nothing) never reached the frame's start.
    pub fn clock_refusal(&self, now_ns: Option<i64>) -> String {
        format!(
            "{} #{}: the node runs with use_sim_time and its clock reads {} ns, not the frame's \
             start {} ns: is /clock published (lockstep replay publishes it)?",
            self.frame.channel_name,
            self.frame.sequence_num,
            now_ns.map_or_else(|| "nothing".to_owned(), |n| n.to_string()),
            self.frame.start_time_ns
        )
    }
}

/// A grant with the reply its answer or refusal goes to (the step service's request in `lockstep_trace_ros`);
/// it dereferences to its [`StepGrant`].
pub struct Granted<R> {
    state: StepGrant,
    reply: R,
}

impl<R> std::fmt::Debug for Granted<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("frame", &self.state.frame)
            .finish_non_exhaustive()
    }
}

impl<R> std::ops::Deref for Granted<R> {
    type Target = StepGrant;

    fn deref(&self) -> &StepGrant {
        &self.state
    }
}

impl<R> Granted<R> {
    /// `state` to be answered through `reply`.
    pub fn new(state: StepGrant, reply: R) -> Self {
        Self { state, reply }
    }

    /// What the grant allows, and its reply.
    pub fn into_parts(self) -> (StepGrant, R) {
        (self.state, self.reply)
    }
}

/// The grant a module in step mode works on: at most one at a time. `sim_now_ns` arguments say what the
/// module's clock reads: `None` without `use_sim_time`, `Some(reading)` with it (`Some(None)`: unreadable).
pub struct PendingStep<R> {
    pending: Option<Granted<R>>,
}

impl<R> Default for PendingStep<R> {
    fn default() -> Self {
        Self { pending: None }
    }
}

impl<R> std::fmt::Debug for PendingStep<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.pending.fmt(f)
    }
}

impl<R> PendingStep<R> {
    /// Make `grant` pending; returns the grant it replaces with the reason to refuse it (the replay gave up
    /// on that one).
    pub fn grant(&mut self, grant: Granted<R>) -> Option<(R, String)> {
        let old = self.pending.replace(grant)?;
        let reason = format!("superseded by a newer grant; {}", old.refusal());
        Some((old.reply, reason))
    }

    /// When the pending grant expires.
    pub fn deadline(&self) -> Option<Instant> {
        self.pending.as_ref().map(|g| g.deadline())
    }

    /// Whether the pending grant still waits for a simulated clock to read its frame's start (the replay
    /// publishes it on `/clock` before granting, so `now()` during the computation is the recorded time).
    pub fn waits_for_clock(&self, sim_now_ns: Option<Option<i64>>) -> bool {
        match (&self.pending, sim_now_ns) {
            (Some(grant), Some(now)) => now != Some(grant.frame.start_time_ns),
            _ => false,
        }
    }

    /// The pending grant once the clock allows computing it.
    pub fn pending(&self, sim_now_ns: Option<Option<i64>>) -> Option<&Granted<R>> {
        if self.waits_for_clock(sim_now_ns) {
            return None;
        }
        self.pending.as_ref()
    }

    /// Take the pending grant, to answer it.
    pub fn take(&mut self) -> Option<Granted<R>> {
        self.pending.take()
    }

    /// Drop the pending grant at its deadline; returns its reply with the reason to refuse it: the clock
    /// that never read its start, or the inputs that never arrived.
    pub fn expire(&mut self, sim_now_ns: Option<Option<i64>>) -> Option<(R, String)> {
        let waited_for_clock = self.waits_for_clock(sim_now_ns).then(|| sim_now_ns.flatten());
        let grant = self.pending.take()?;
        let reason = match waited_for_clock {
            Some(now) => grant.clock_refusal(now),
            None => grant.refusal(),
        };
        Some((grant.reply, reason))
    }
}

/// The outputs in the order of `frames` (a grant's [`StepGrant::frames`]), matched by channel: (the first
/// frame's, the others'). A frame without an output is an error naming its channel.
pub fn match_outputs(
    frames: &[&TraceHeader],
    mut outputs: Vec<StepOutputData>,
) -> std::result::Result<(StepOutputData, Vec<StepOutputData>), String> {
    let Some(first_frame) = frames.first() else {
        return Err("the step names no frame".to_owned());
    };
    let published: Vec<String> = outputs.iter().map(|(h, _)| h.channel_name.clone()).collect();
    let mut ordered = Vec::with_capacity(frames.len());
    for frame in frames {
        let Some(at) = outputs
            .iter()
            .position(|(h, _)| h.channel_name == frame.channel_name)
        else {
            let named: Vec<&str> = frames.iter().map(|f| f.channel_name.as_str()).collect();
            return Err(format!(
                "{} #{}: the step names outputs on {}, but the module published nothing on {} (it published on {})",
                first_frame.channel_name,
                first_frame.sequence_num,
                named.join(", "),
                frame.channel_name,
                if published.is_empty() { "none".to_owned() } else { published.join(", ") }
            ));
        };
        ordered.push(outputs.remove(at));
    }
    let first = ordered.remove(0);
    Ok((first, ordered))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::InputRecord;

    fn frame(channel: &str) -> TraceHeader {
        TraceHeader::external(channel, 7, 0, 0)
    }

    fn output(channel: &str, byte: u8) -> StepOutputData {
        (frame(channel), vec![byte])
    }

    fn reading(digest: u64, msg: &'static str) -> Traced<&'static str> {
        Traced {
            msg,
            header: None,
            digest,
        }
    }

    fn grant_reading(channel: &str, digest: u64) -> StepGrant {
        let mut main = frame("/out");
        main.inputs.push(InputRecord {
            module_name: "m1".into(),
            channel_name: channel.into(),
            sequence_num: 3,
            epoch: 0,
            payload_digest: digest,
            start_time_ns: 0,
            process_time_ns: 0,
            sources: Vec::new(),
        });
        StepGrant::new(
            main,
            vec![frame("/side")],
            Instant::now(),
            Duration::from_millis(5),
        )
    }

    #[test]
    fn outputs_follow_the_order_of_the_frames_whatever_order_they_were_published_in() {
        let (a, b) = (frame("/range_clamped"), frame("/range_margin"));
        let (first, more) = match_outputs(
            &[&b, &a],
            vec![output("/range_clamped", 1), output("/range_margin", 2)],
        )
        .expect("both outputs");
        assert_eq!(
            (first.0.channel_name.as_str(), first.1),
            ("/range_margin", vec![2])
        );
        assert_eq!(more.len(), 1);
        assert_eq!(
            (more[0].0.channel_name.as_str(), more[0].1.clone()),
            ("/range_clamped", vec![1])
        );
    }

    #[test]
    fn a_frame_without_its_output_names_the_channel() {
        let (a, b) = (frame("/range_clamped"), frame("/range_margin"));
        let why = match_outputs(&[&a, &b], vec![output("/range_clamped", 1)]).expect_err("one missing");
        assert!(why.contains("nothing on /range_margin"), "{why}");
        assert!(why.contains("it published on /range_clamped"), "{why}");
        let why = match_outputs(&[&a], Vec::new()).expect_err("none published");
        assert!(why.contains("(it published on none)"), "{why}");
    }

    #[test]
    fn one_output_for_one_frame_is_the_answer() {
        let a = frame("/obstacles");
        let (first, more) = match_outputs(&[&a], vec![output("/obstacles", 3)]).expect("the output");
        assert_eq!((first.1, more.len()), (vec![3], 0));
    }

    #[test]
    fn recent_keeps_the_newest_of_a_digest_and_drops_the_oldest_when_full() {
        let mut recent = Recent::default();
        recent.push(reading(1, "old"));
        recent.push(reading(1, "new"));
        assert_eq!((recent.find(1), recent.latest()), (Some(&"new"), Some(&"new")));
        for _ in 0..RECENT_DEPTH {
            recent.push(reading(2, "filler"));
        }
        assert_eq!(recent.find(1), None);
        assert_eq!(recent.find(2), Some(&"filler"));
    }

    #[test]
    fn a_grant_finds_its_input_by_digest_and_names_what_it_missed() {
        let grant = grant_reading("/in", 0xab);
        let mut recent = Recent::default();
        assert_eq!(grant.find(&recent, "/in"), None);
        assert_eq!(grant.find(&recent, "/other"), None);
        let why = grant.refusal();
        assert!(
            why.starts_with("/out #7: inputs not received within 5 ms"),
            "{why}"
        );
        assert!(why.contains("/in (digest 00000000000000ab)"), "{why}");
        assert!(why.contains("/other (the frame names no input on it)"), "{why}");
        recent.push(reading(0xab, "input"));
        assert_eq!(grant.find(&recent, "/in"), Some(&"input"));
        assert!(grant_reading("/in", 1).refusal().ends_with("(none looked up)"));
    }

    #[test]
    fn a_grant_names_its_frames_and_builds_each_output_header() {
        let grant = grant_reading("/in", 1);
        assert_eq!(grant.channels(), "/out, /side");
        assert_eq!(grant.frame_for("/side").map(|f| f.sequence_num), Some(7));
        assert!(grant.frame_for("/nowhere").is_none());
        let header = grant.output_header("/out", b"payload").expect("a frame on /out");
        assert_eq!(header.payload_digest, crate::digest(b"payload"));
        assert_eq!(header.inputs, grant.frame.inputs);
        assert!(grant.output_header("/nowhere", b"payload").is_none());
        assert!(grant.clock_refusal(None).contains("clock reads nothing ns"));
        assert_eq!(
            (step_timeout(0), step_timeout(7)),
            (DEFAULT_STEP_TIMEOUT, Duration::from_millis(7))
        );
    }

    #[test]
    fn a_newer_grant_supersedes_the_pending_one() {
        let mut pending = PendingStep::default();
        assert!(pending
            .grant(Granted::new(grant_reading("/in", 1), "first"))
            .is_none());
        let (reply, why) = pending
            .grant(Granted::new(grant_reading("/in", 2), "second"))
            .expect("replaced");
        assert_eq!(reply, "first");
        assert!(why.starts_with("superseded by a newer grant; /out #7"), "{why}");
        assert_eq!(pending.pending(None).and_then(|g| g.input_digest("/in")), Some(2));
        let (state, reply) = pending.take().expect("pending").into_parts();
        assert_eq!((state.frame.sequence_num, reply), (7, "second"));
        assert!(pending.deadline().is_none() && pending.expire(None).is_none());
    }

    #[test]
    fn a_grant_waits_for_the_simulated_clock_and_expires_naming_it() {
        let mut pending = PendingStep::default();
        pending.grant(Granted::new(grant_reading("/in", 1), ()));
        // The frame starts at 0 ns: a clock reading 0 lets the module compute it.
        assert!(pending.pending(Some(Some(0))).is_some());
        assert!(pending.pending(Some(Some(5))).is_none() && pending.pending(Some(None)).is_none());
        assert!(pending.pending(None).is_some(), "without use_sim_time no wait");
        let (_, why) = pending.expire(Some(Some(5))).expect("expired");
        assert!(
            why.contains("its clock reads 5 ns, not the frame's start 0 ns"),
            "{why}"
        );
        pending.grant(Granted::new(grant_reading("/in", 1), ()));
        let (_, why) = pending.expire(Some(Some(0))).expect("expired");
        assert!(why.contains("inputs not received"), "{why}");
    }
}
