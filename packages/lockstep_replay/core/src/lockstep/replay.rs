//! The lock-step orchestration, without DDS: live modules are Rust objects
//! ([`Module`]); the same plan drives the DDS replay node.
//!
//! Frames run in the recorded order (start time, then topological rank). For each frame of a live module,
//! its inputs are back-traced through its header: an input produced by a live module is that module's
//! *simulated* output for the same (channel, epoch, sequence number), never the recorded copy (recorded and
//! simulated data of one channel never mix); an input from an external channel, or from a
//! module with no live counterpart, is the recorded message with the digest the header names. A frame whose
//! back-trace reaches before the recording (an input not recorded, or an upstream frame skipped) is skipped
//! and counted, or with `strict` is an error naming module, channel and sequence number.

use std::collections::{BTreeMap, BTreeSet};

use lockstep_trace::{digest, TraceHeader};

use super::recording::{Frame, Recording};
use super::{LockstepError, Result};

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

    /// How long the last step's computation took, if the module measured it (a module in another process
    /// does); otherwise the replay times the `step` call.
    fn last_process_time_ns(&self) -> Option<u32> {
        None
    }
}

/// Which frames to replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FrameSelection {
    /// Every recorded frame of every live module.
    #[default]
    All,
    /// The frames of one module and the frames of live modules they depend on.
    Module(String),
}

/// Options of a replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Which frames.
    pub frames: FrameSelection,
    /// A frame that cannot be replayed is an error instead of skipped.
    pub strict: bool,
}

/// One simulated output.
#[derive(Debug, Clone)]
pub struct Simulated {
    /// Its header: the recorded one with the simulated payload digest (and simulated input digests).
    pub header: TraceHeader,
    /// Its serialized message.
    pub data: Vec<u8>,
    /// Log time of the recorded header.
    pub header_log_time_ns: u64,
    /// Log time of the recorded data message (the header's when the data was not recorded).
    pub data_log_time_ns: u64,
    /// Whether it equals the recorded output (same payload digest).
    pub exact: bool,
    /// Whether every input it was computed from equals the recorded input (digest for digest); false when
    /// an upstream module's simulated output differs from its recording.
    pub inputs_as_recorded: bool,
    /// How long the module computed it in this replay, nanoseconds (the header keeps the recorded time).
    pub process_time_ns: u32,
}

/// A frame that was not replayed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFrame {
    /// Its module.
    pub module: String,
    /// Its output channel.
    pub channel: String,
    /// Its sequence number (`None`: a recorded output with no header, so no sequence number is known).
    pub sequence_num: Option<u32>,
    /// Why.
    pub reason: String,
}

/// What a replay did.
#[derive(Debug, Clone, Default)]
pub struct ReplayOutcome {
    /// Simulated outputs, in replay order.
    pub outputs: Vec<Simulated>,
    /// Frames selected.
    pub selected: usize,
    /// Frames not replayed.
    pub skipped: Vec<SkippedFrame>,
    /// Modules of the recorded topology with no live module: their recorded outputs were used.
    pub not_live: Vec<String>,
}

impl ReplayOutcome {
    /// Per output channel: (simulated, equal to the recorded output).
    pub fn exact_by_channel(&self) -> BTreeMap<String, (u64, u64)> {
        let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for o in &self.outputs {
            let e = out.entry(o.header.channel_name.clone()).or_default();
            e.0 += 1;
            e.1 += u64::from(o.exact);
        }
        out
    }

    /// The first output (in replay order) of each channel that differs from the recording.
    pub fn first_differences(&self) -> BTreeMap<String, &Simulated> {
        let mut out = BTreeMap::new();
        for o in self.outputs.iter().filter(|o| !o.exact) {
            out.entry(o.header.channel_name.clone()).or_insert(o);
        }
        out
    }
}

type FrameId = (String, u64, u32);

/// Replays `recording` through `modules` in lock-step.
pub fn replay(
    recording: &Recording,
    modules: &mut [Box<dyn Module>],
    options: &ReplayOptions,
) -> Result<ReplayOutcome> {
    replay_observed(recording, modules, options, &mut |_, _| {})
}

/// [`replay`], calling `progress(frames done, frames selected)` as frames are done (for a progress bar).
pub fn replay_observed(
    recording: &Recording,
    modules: &mut [Box<dyn Module>],
    options: &ReplayOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<ReplayOutcome> {
    let live: BTreeMap<String, usize> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.name().to_owned(), i))
        .collect();
    for name in live.keys() {
        if recording.topology.component(name).is_none() {
            return Err(LockstepError::UnknownModule { module: name.clone() });
        }
    }
    let not_live: Vec<String> = recording
        .topology
        .components
        .iter()
        .map(|c| c.module_name.clone())
        .filter(|m| !live.contains_key(m))
        .collect();
    let is_live_channel = |channel: &str| recording.producer(channel).is_some_and(|m| live.contains_key(m));
    let selected = select(recording, &live, &options.frames, &is_live_channel)?;

    let mut simulated: BTreeMap<FrameId, u64> = BTreeMap::new(); // frame -> index in outputs
    let mut outcome = ReplayOutcome {
        not_live,
        ..ReplayOutcome::default()
    };
    let total = selected.len();
    for frame in recording.frames.iter().filter(|f| selected.contains(&f.id())) {
        outcome.selected += 1;
        progress(outcome.selected - 1, total);
        let header = &frame.header;
        let mut inputs = Vec::with_capacity(header.inputs.len());
        let mut missing = None;
        for input in &header.inputs {
            let channel = input.channel_name.as_str();
            if is_live_channel(channel) {
                let id = (channel.to_owned(), input.epoch, input.sequence_num);
                match simulated.get(&id) {
                    Some(&i) => inputs.push((channel, i as usize, true)),
                    None => {
                        missing = Some(format!(
                            "input {channel} #{} was not simulated (its frame was skipped or precedes the recording)",
                            input.sequence_num
                        ));
                        break;
                    }
                }
            } else {
                let found = recording
                    .channels
                    .get(channel)
                    .and_then(|c| c.by_digest.get(&input.payload_digest));
                match found {
                    Some(_) => inputs.push((channel, usize::MAX, false)),
                    None => {
                        missing = Some(format!(
                            "input {channel} #{} (digest {:016x}) is not in the recording",
                            input.sequence_num, input.payload_digest
                        ));
                        break;
                    }
                }
            }
        }
        if let Some(reason) = missing {
            if options.strict {
                return Err(LockstepError::Unreplayable {
                    module: header.module_name.clone(),
                    channel: header.channel_name.clone(),
                    sequence_num: header.sequence_num,
                    reason,
                });
            }
            outcome.skipped.push(SkippedFrame {
                module: header.module_name.clone(),
                channel: header.channel_name.clone(),
                sequence_num: Some(header.sequence_num),
                reason,
            });
            continue;
        }
        let step_inputs: Vec<StepInput<'_>> = inputs
            .iter()
            .zip(&header.inputs)
            .map(|(&(channel, index, is_simulated), record)| {
                if is_simulated {
                    let output = &outcome.outputs[index];
                    StepInput {
                        channel,
                        data: &output.data,
                        simulated: true,
                        payload_digest: output.header.payload_digest,
                    }
                } else {
                    StepInput {
                        channel,
                        data: &recording.channels[channel].by_digest[&record.payload_digest].data,
                        simulated: false,
                        payload_digest: record.payload_digest,
                    }
                }
            })
            .collect();
        let module = &mut modules[live[&header.module_name]];
        let started = std::time::Instant::now();
        let stepped = module.step(header, &step_inputs);
        let process_time_ns = module
            .last_process_time_ns()
            .unwrap_or_else(|| lockstep_trace::duration_to_ns_u32(started.elapsed()));
        let data = stepped.map_err(|reason| LockstepError::Step {
            module: header.module_name.clone(),
            channel: header.channel_name.clone(),
            sequence_num: header.sequence_num,
            reason,
        })?;
        let mut output = simulate(recording, frame, data, &inputs, &outcome.outputs);
        output.process_time_ns = process_time_ns;
        simulated.insert(frame.id(), outcome.outputs.len() as u64);
        outcome.outputs.push(output);
    }
    // Recorded outputs of the replayed modules with no header: counted as skipped so that every recorded
    // output is either replayed or accounted for (also with `strict`, which concerns frames with headers).
    let replays = |module: &str| match &options.frames {
        FrameSelection::All => live.contains_key(module),
        FrameSelection::Module(m) => m == module,
    };
    for h in recording.headerless.iter().filter(|h| replays(&h.module)) {
        outcome.skipped.push(SkippedFrame {
            module: h.module.clone(),
            channel: h.channel.clone(),
            sequence_num: None,
            reason: format!(
                "the recorded message on {} logged at {} ns has no dependency header in the bag (the recording \
                 ended or began between the two)",
                h.channel, h.log_time_ns
            ),
        });
    }
    progress(total, total);
    Ok(outcome)
}

/// The frames to replay: every frame of a live module, or those of one module plus what they depend on.
fn select(
    recording: &Recording,
    live: &BTreeMap<String, usize>,
    frames: &FrameSelection,
    is_live_channel: &dyn Fn(&str) -> bool,
) -> Result<BTreeSet<FrameId>> {
    let of_live = recording
        .frames
        .iter()
        .filter(|f| live.contains_key(&f.header.module_name));
    let FrameSelection::Module(module) = frames else {
        return Ok(of_live.map(Frame::id).collect());
    };
    if !live.contains_key(module) {
        return Err(LockstepError::UnknownModule {
            module: module.clone(),
        });
    }
    let by_id: BTreeMap<FrameId, &Frame> = of_live.map(|f| (f.id(), f)).collect();
    let mut todo: Vec<FrameId> = by_id
        .values()
        .filter(|f| f.header.module_name == *module)
        .map(|f| f.id())
        .collect();
    let mut chosen = BTreeSet::new();
    while let Some(id) = todo.pop() {
        if !chosen.insert(id.clone()) {
            continue;
        }
        if let Some(frame) = by_id.get(&id) {
            for input in frame
                .header
                .inputs
                .iter()
                .filter(|i| is_live_channel(&i.channel_name))
            {
                todo.push((input.channel_name.clone(), input.epoch, input.sequence_num));
            }
        }
    }
    Ok(chosen)
}

/// The simulated output of `frame`: its header is the recorded one with the new payload digest, and with
/// the digests of simulated inputs.
fn simulate(
    recording: &Recording,
    frame: &Frame,
    data: Vec<u8>,
    inputs: &[(&str, usize, bool)],
    outputs: &[Simulated],
) -> Simulated {
    let channel = recording.channels.get(&frame.header.channel_name);
    let canonical = channel
        .and_then(|c| c.schema.as_ref())
        .and_then(|s| s.canonical(&data).ok());
    let new_digest = digest(canonical.as_deref().unwrap_or(&data));
    let mut header = frame.header.clone();
    header.payload_digest = new_digest;
    let mut inputs_as_recorded = true;
    for (record, &(_, index, is_simulated)) in header.inputs.iter_mut().zip(inputs) {
        if is_simulated {
            let consumed = outputs[index].header.payload_digest;
            inputs_as_recorded &= consumed == record.payload_digest;
            record.payload_digest = consumed;
        }
    }
    let data_log_time_ns = channel
        .and_then(|c| c.by_digest.get(&frame.header.payload_digest))
        .map_or(frame.header_log_time_ns, |m| m.log_time_ns);
    Simulated {
        exact: new_digest == frame.header.payload_digest,
        header,
        data,
        header_log_time_ns: frame.header_log_time_ns,
        data_log_time_ns,
        inputs_as_recorded,
        process_time_ns: 0,
    }
}
