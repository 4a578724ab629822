//! What the replay steps: a module ([`Module`]), granted one computation at a time with exactly the inputs
//! its recorded frame names ([`StepInput`]), or, for an unmodified node, its recorded callbacks
//! ([`GrantEvent`]); and what one step gives back ([`Stepped`]).

use lockstep_trace::TraceHeader;

use super::callback::{EventOutput, GrantEvent};

/// One input handed to a step.
#[derive(Debug, Clone, Copy)]
pub struct StepInput<'a> {
    /// The channel it was read from.
    pub channel: &'a str,
    /// Its serialized message (CDR).
    pub data: &'a [u8],
    /// Whether a live module produced it in this replay (else it is the recorded message).
    pub simulated: bool,
    /// Digest of its canonical CDR: what the step must consume on `channel`.
    pub payload_digest: u64,
}

/// A module run in-process: computes one output per step from exactly the inputs it is given.
pub trait Module {
    /// Its name: the module name of its headers.
    fn name(&self) -> &str;

    /// Compute the output of `frame` (its recorded header: channel, sequence number, start time) from
    /// `inputs`, in the order the header names them. Returns the serialized output, or why it cannot.
    fn step(&mut self, frame: &TraceHeader, inputs: &[StepInput<'_>])
        -> std::result::Result<Vec<u8>, String>;

    /// Compute one computation that published on several channels at once: `frames` are its recorded
    /// headers (one per output channel; same module, start time and inputs), `inputs` as for [`Module::step`]
    /// (named by the first frame). Returns one serialized output per frame, in the order of `frames`. A module
    /// that publishes one output per computation only needs [`Module::step`].
    fn step_group(
        &mut self,
        frames: &[&TraceHeader],
        inputs: &[StepInput<'_>],
    ) -> std::result::Result<Vec<Vec<u8>>, String> {
        match frames {
            [frame] => Ok(vec![self.step(frame, inputs)?]),
            _ => Err(format!(
                "`{}` computes one output per step, but the recording holds one computation with {} outputs",
                self.name(),
                frames.len()
            )),
        }
    }

    /// How long the last step's computation took, if the module measured it (a module in another process
    /// does); otherwise the replay times the `step` call.
    fn last_process_time_ns(&self) -> Option<u32> {
        None
    }

    /// Reproduce `events` of an unmodified node, one callback each, in order; returns per event what its
    /// callback sent. Only a node replayed through the rcl interceptor can.
    fn step_events(
        &mut self,
        events: &[GrantEvent<'_>],
    ) -> std::result::Result<Vec<Vec<EventOutput>>, String> {
        let _ = events;
        Err(format!(
            "`{}` is not an unmodified node replayed through the interceptor (`lockstep trace --replay`)",
            self.name()
        ))
    }
}

/// What one step computed: the headers it was granted (inputs as resolved), one output per header, and the
/// computation's processing time.
pub(super) struct Stepped {
    pub headers: Vec<TraceHeader>,
    pub data: Vec<Vec<u8>>,
    pub process_time_ns: u32,
}
