//! The lock-step orchestration, without DDS: live modules are Rust objects
//! ([`Module`]); the same plan drives the DDS replay node.
//!
//! Frames run in the recording's replay order (dependencies first, then start stamps: see
//! [`Recording::frames`]); the outputs of one computation on several channels are one step. Each step's
//! inputs are found as the `inputs` module says: simulated where a live module produces the channel,
//! recorded otherwise, the recorded message as backup where an upstream output was not simulated, and the
//! latest message for a channel a live module reads that its recorded frame does not name. A frame that
//! still cannot be replayed is skipped and counted, or with `strict` is an error naming module, channel and
//! sequence number. Live modules the recording does not have are stepped once per arrival of their trigger
//! input ([`NewModule`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use lockstep_trace::{digest, TraceHeader};

use super::error::{LockstepError, Result};
use super::frame::Frame;
use super::inputs::{Choice, Inputs, Missing, Resolved, Source};
use super::module::Stepped;
pub use super::module::{Module, StepInput};
use super::node_step::{run_events, EventStep};
use super::plan::{plan, Step};
use super::recording::Recording;
use super::types::{
    FrameSelection, MissingUpstream, NewModule, ReplayOptions, ReplayOutcome, Simulated, SkippedFrame,
};

type FrameId = (String, u64, u32);

/// Replays `recording` through `modules` in lock-step.
pub fn replay(
    recording: &Recording,
    modules: &mut [Box<dyn Module>],
    options: &ReplayOptions,
) -> Result<ReplayOutcome> {
    replay_observed(recording, modules, options, &mut |_, _| {})
}

/// [`replay`], calling `progress(steps done, steps planned)` as steps are done (for a progress bar).
pub fn replay_observed(
    recording: &Recording,
    modules: &mut [Box<dyn Module>],
    options: &ReplayOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<ReplayOutcome> {
    let (live, new_names) = live_modules(recording, modules, options)?;
    let new_modules: Vec<NewModule> = options
        .new_modules
        .iter()
        .filter(|m| live.contains_key(&m.name))
        .cloned()
        .collect();
    let live_channels = live_channels(recording, &live, &new_modules);
    let selected = select(recording, &live, &options.frames, &new_names, &|c| {
        live_channels.contains(c)
    })?;
    let steps = plan(recording, &selected, &new_modules);

    let mut inputs = Inputs::new(recording, live_channels);
    let mut outcome = ReplayOutcome {
        not_live: not_live(recording, &live),
        new_channel_types: new_modules
            .iter()
            .flat_map(|m| m.types.clone())
            .filter(|(channel, _)| !recording.channels.contains_key(channel))
            .collect(),
        ..ReplayOutcome::default()
    };
    let total = steps.len();
    let no_reads = BTreeSet::new();
    for (done, step) in steps.iter().enumerate() {
        progress(done, total);
        outcome.selected += step.frames.len();
        let header = &step.first().header;
        let reads = options.live_reads.get(&header.module_name).unwrap_or(&no_reads);
        let resolved = match resolve(&inputs, header, reads, &outcome.outputs, options.missing_upstream) {
            Ok(r) => r,
            Err(Missing::Stop(reason)) => return Err(unreplayable(header, reason)),
            Err(Missing::Skip(reason)) if options.strict => return Err(unreplayable(header, reason)),
            Err(Missing::Skip(reason)) => {
                skip_step(&mut outcome, step, &reason);
                continue;
            }
        };
        let module = &mut modules[live[&header.module_name]];
        if step.first().events.is_some() {
            let done = run_events(
                recording,
                &inputs,
                module.as_mut(),
                step,
                &resolved,
                &mut outcome,
                options,
            )?;
            match done {
                EventStep::Done(done, stepped) if !done.frames.is_empty() => {
                    record_outputs(recording, &mut inputs, &mut outcome, &done, &resolved, stepped);
                    count(&mut outcome, &done, &resolved);
                }
                EventStep::Done(..) => {} // every frame was skipped, and counted
                EventStep::Skip(reason) if options.strict => return Err(unreplayable(header, reason)),
                EventStep::Skip(reason) => skip_step(&mut outcome, step, &reason),
            }
            continue;
        }
        let stepped = run_step(recording, module.as_mut(), step, &resolved, &outcome.outputs)?;
        record_outputs(recording, &mut inputs, &mut outcome, step, &resolved, stepped);
        count(&mut outcome, step, &resolved);
    }
    skip_headerless(recording, &live, &options.frames, &mut outcome);
    progress(total, total);
    Ok(outcome)
}

/// The live modules by name (index into `modules`), and the names of those the recording does not have;
/// an error for a live module that is neither in the recording nor declared new.
fn live_modules<'o>(
    recording: &Recording,
    modules: &[Box<dyn Module>],
    options: &'o ReplayOptions,
) -> Result<(BTreeMap<String, usize>, BTreeSet<&'o str>)> {
    let live: BTreeMap<String, usize> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.name().to_owned(), i))
        .collect();
    let new_names: BTreeSet<&str> = options.new_modules.iter().map(|m| m.name.as_str()).collect();
    for name in live.keys() {
        if recording.topology.component(name).is_none() && !new_names.contains(name.as_str()) {
            return Err(LockstepError::UnknownModule { module: name.clone() });
        }
    }
    Ok((live, new_names))
}

/// The recorded modules that are not live: their outputs come from the recording.
fn not_live(recording: &Recording, live: &BTreeMap<String, usize>) -> Vec<String> {
    recording
        .topology
        .components
        .iter()
        .map(|c| c.module_name.clone())
        .filter(|m| !live.contains_key(m))
        .collect()
}

/// The channels a live module writes: those of its recorded component, and those a new module declares.
fn live_channels(
    recording: &Recording,
    live: &BTreeMap<String, usize>,
    new_modules: &[NewModule],
) -> BTreeSet<String> {
    recording
        .topology
        .components
        .iter()
        .filter(|c| live.contains_key(&c.module_name))
        .flat_map(|c| c.writer_channels.iter().cloned())
        .chain(new_modules.iter().flat_map(|m| m.writes.iter().cloned()))
        .collect()
}

/// Count every frame of a step that cannot be replayed as skipped, with `reason`.
fn skip_step(outcome: &mut ReplayOutcome, step: &Step<'_>, reason: &str) {
    for f in &step.frames {
        outcome.skipped.push(SkippedFrame {
            module: f.header.module_name.clone(),
            channel: f.header.channel_name.clone(),
            sequence_num: Some(f.header.sequence_num),
            reason: reason.to_owned(),
        });
    }
}

/// Step `module` through `step` with the `resolved` inputs; an error names module, channel and frame when
/// the module fails or answers a different number of outputs than the step has frames.
fn run_step(
    recording: &Recording,
    module: &mut dyn Module,
    step: &Step<'_>,
    resolved: &[Resolved],
    outputs: &[Simulated],
) -> Result<Stepped> {
    let header = &step.first().header;
    let headers: Vec<TraceHeader> = step
        .frames
        .iter()
        .map(|f| TraceHeader {
            inputs: resolved.iter().map(|r| r.record.clone()).collect(),
            ..f.header.clone()
        })
        .collect();
    // Recorded inputs, from memory or read from the bag.
    let recorded: Vec<Cow<'_, [u8]>> = resolved
        .iter()
        .map(|r| match r.source {
            Source::Recorded(digest) => recording.payload(&r.record.channel_name, digest),
            Source::Simulated(_) => Ok(Cow::Borrowed(&[][..])),
        })
        .collect::<Result<_>>()?;
    let step_inputs: Vec<StepInput<'_>> = resolved
        .iter()
        .zip(&recorded)
        .map(|(r, data)| step_input(outputs, r, data))
        .collect();
    let started = std::time::Instant::now();
    let stepped = module.step_group(&headers.iter().collect::<Vec<_>>(), &step_inputs);
    let process_time_ns = module
        .last_process_time_ns()
        .unwrap_or_else(|| lockstep_trace::duration_to_ns_u32(started.elapsed()));
    let failed = |reason: String| LockstepError::Step {
        module: header.module_name.clone(),
        channel: header.channel_name.clone(),
        sequence_num: header.sequence_num,
        reason,
    };
    let data = stepped.map_err(failed)?;
    if data.len() != headers.len() {
        return Err(failed(format!(
            "answered {} outputs for a computation with {}",
            data.len(),
            headers.len()
        )));
    }
    Ok(Stepped {
        headers,
        data,
        process_time_ns,
    })
}

/// Keep a step's outputs, in frame order, as simulated messages (and as inputs of later steps).
fn record_outputs(
    recording: &Recording,
    inputs: &mut Inputs<'_>,
    outcome: &mut ReplayOutcome,
    step: &Step<'_>,
    resolved: &[Resolved],
    stepped: Stepped,
) {
    let Stepped {
        headers,
        data,
        process_time_ns,
    } = stepped;
    for (k, ((frame, mut header), data)) in step.frames.iter().zip(headers).zip(data).enumerate() {
        let inputs_as_recorded = resolved
            .iter()
            .zip(&header.inputs)
            .all(|(r, i)| r.recorded_digest.is_none_or(|d| d == i.payload_digest));
        let new_digest = canonical_digest(recording, &header.channel_name, &data);
        header.payload_digest = new_digest;
        let data_log_time_ns = recording.data_log_time_ns(frame);
        inputs.simulated(&header, outcome.outputs.len());
        outcome.outputs.push(Simulated {
            exact: !step.new_module && new_digest == frame.header.payload_digest,
            header,
            data,
            header_log_time_ns: frame.header_log_time_ns,
            data_log_time_ns,
            inputs_as_recorded,
            process_time_ns,
            new_module: step.new_module,
            first_of_step: k == 0,
            event: frame.events.as_ref().and_then(|e| e.last()).map(|e| e.describe()),
        });
    }
}

/// Recorded outputs of the replayed modules with no header: counted as skipped so that every recorded
/// output is either replayed or accounted for (also with `strict`, which concerns frames with headers).
fn skip_headerless(
    recording: &Recording,
    live: &BTreeMap<String, usize>,
    frames: &FrameSelection,
    outcome: &mut ReplayOutcome,
) {
    let replays = |module: &str| match frames {
        FrameSelection::All => live.contains_key(module),
        FrameSelection::Module(m) => m == module,
    };
    for h in recording.headerless.iter().filter(|h| replays(&h.module)) {
        outcome.selected += 1;
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
}

/// The inputs of a step: those its recorded header names, then the channels the live module reads now
/// that the header does not name (in channel order).
fn resolve(
    inputs: &Inputs<'_>,
    header: &TraceHeader,
    reads: &BTreeSet<String>,
    outputs: &[Simulated],
    mode: MissingUpstream,
) -> std::result::Result<Vec<Resolved>, Missing> {
    let mut resolved = Vec::with_capacity(header.inputs.len());
    for named in &header.inputs {
        resolved.push(inputs.named(named, outputs, mode)?);
    }
    for channel in reads.iter().filter(|c| header.input(c).is_none()) {
        resolved.push(inputs.latest(channel, header.start_time_ns, outputs, mode)?);
    }
    Ok(resolved)
}

fn step_input<'a>(outputs: &'a [Simulated], r: &'a Resolved, recorded: &'a [u8]) -> StepInput<'a> {
    let channel = r.record.channel_name.as_str();
    match r.source {
        Source::Simulated(index) => StepInput {
            channel,
            data: &outputs[index].data,
            simulated: true,
            payload_digest: outputs[index].header.payload_digest,
        },
        Source::Recorded(digest) => StepInput {
            channel,
            data: recorded,
            simulated: false,
            payload_digest: digest,
        },
    }
}

fn count(outcome: &mut ReplayOutcome, step: &Step<'_>, resolved: &[Resolved]) {
    let header = &step.first().header;
    let frames = step.frames.len() as u64;
    for r in resolved {
        match r.choice {
            Choice::Named => {}
            Choice::Backup => {
                *outcome
                    .backup_inputs
                    .entry(r.record.channel_name.clone())
                    .or_default() += frames;
            }
            Choice::Added => {
                *outcome
                    .added_inputs
                    .entry((header.module_name.clone(), r.record.channel_name.clone()))
                    .or_default() += frames;
            }
        }
    }
    if step.new_module {
        *outcome
            .new_module_steps
            .entry(header.module_name.clone())
            .or_default() += 1;
    }
}

fn unreplayable(header: &TraceHeader, reason: String) -> LockstepError {
    LockstepError::Unreplayable {
        module: header.module_name.clone(),
        channel: header.channel_name.clone(),
        sequence_num: header.sequence_num,
        reason,
    }
}

/// The frames to replay: every frame of a live module, or those of one module plus what they depend on (the
/// outputs of live modules their headers name, and for an unmodified node those its callbacks took; every
/// live module's frames when that module is one the recording does not have).
fn select(
    recording: &Recording,
    live: &BTreeMap<String, usize>,
    frames: &FrameSelection,
    new_modules: &BTreeSet<&str>,
    is_live_channel: &dyn Fn(&str) -> bool,
) -> Result<BTreeSet<FrameId>> {
    let of_live = recording
        .frames
        .iter()
        .filter(|f| live.contains_key(&f.header.module_name));
    let module = match frames {
        FrameSelection::Module(m) if !new_modules.contains(m.as_str()) => m,
        _ => return Ok(of_live.map(Frame::id).collect()),
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
            // An unmodified node's output also depends on what its callbacks took before it.
            let producers = frame.events.iter().flatten().filter_map(|e| e.producer.as_ref());
            todo.extend(producers.filter(|p| is_live_channel(&p.0)).cloned());
        }
    }
    Ok(chosen)
}

/// The digest of `data` on `channel`: of its canonical CDR when the recording holds the channel's
/// definition (padding zeroed, as modules compute it).
fn canonical_digest(recording: &Recording, channel: &str, data: &[u8]) -> u64 {
    let canonical = recording
        .channels
        .get(channel)
        .and_then(|c| c.schema.as_ref())
        .and_then(|s| s.canonical(data).ok());
    digest(canonical.as_deref().unwrap_or(data))
}
