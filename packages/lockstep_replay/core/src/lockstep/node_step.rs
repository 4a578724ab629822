//! One step of an unmodified node: its recorded callbacks reproduced in order ([`Module::step_events`]), each
//! given the message it took (the simulated output where a live module produced it in this replay, else the
//! recorded one), and the step's frames taken from what the last callback published.

use std::borrow::Cow;
use std::collections::BTreeMap;

use lockstep_trace::{InputRecord, TraceHeader};

use super::callback::{kind, EventOutput, GrantEvent, NodeCallback};
use super::error::Result;
use super::inputs::{Choice, Inputs, Missing, Resolved, Source};
use super::module::{Module, Stepped};
use super::plan::Step;
use super::recording::Recording;
use super::types::{MissingUpstream, ReplayOutcome, Simulated};

/// What an unmodified node's step gives: its outputs, or why it is skipped.
pub(super) enum EventStep {
    Done(Stepped),
    Skip(String),
}

/// The bytes each callback delivers, or why one cannot be delivered. Backup inputs are counted in `outcome`.
fn deliveries<'r>(
    recording: &'r Recording,
    inputs: &Inputs<'_>,
    outputs: &'r [Simulated],
    mode: MissingUpstream,
    events: &[NodeCallback],
    backups: &mut BTreeMap<String, u64>,
) -> Result<std::result::Result<Vec<Cow<'r, [u8]>>, String>> {
    let mut data = Vec::with_capacity(events.len());
    for e in events {
        let recorded = |channel: String| match recording.payload(&channel, e.payload_digest) {
            Ok(bytes) => Ok(bytes),
            Err(_) => Err(format!(
                "{} needs what was delivered on {channel}, which the recording does not hold",
                e.describe()
            )),
        };
        let bytes = match e.kind {
            kind::TIMER => Cow::Borrowed(&[][..]),
            kind::REQUEST_TAKEN => match recorded(format!("{}/lockstep_request", e.name)) {
                Ok(b) => b,
                Err(reason) => return Ok(Err(reason)),
            },
            kind::RESPONSE_TAKEN => match recorded(format!("{}/lockstep_response", e.name)) {
                Ok(b) => b,
                Err(reason) => return Ok(Err(reason)),
            },
            _ => {
                let (module, epoch, seq) = match &e.producer {
                    Some((_, epoch, seq)) => (recording.producer(&e.name).unwrap_or(""), *epoch, *seq),
                    None => ("", 0, 0),
                };
                let named = InputRecord {
                    module_name: module.to_owned(),
                    channel_name: e.name.clone(),
                    sequence_num: seq,
                    epoch,
                    payload_digest: e.payload_digest,
                    ..InputRecord::default()
                };
                let resolved = match inputs.named(&named, outputs, mode) {
                    Ok(r) => r,
                    Err(Missing::Skip(reason) | Missing::Stop(reason)) => {
                        return Ok(Err(format!("{}: {reason}", e.describe())))
                    }
                };
                if resolved.choice == Choice::Backup {
                    *backups.entry(e.name.clone()).or_default() += 1;
                }
                match resolved.source {
                    Source::Simulated(i) => Cow::Borrowed(&outputs[i].data[..]),
                    Source::Recorded(d) => recording.payload(&e.name, d)?,
                }
            }
        };
        data.push(bytes);
    }
    Ok(Ok(data))
}

/// The step's frames' outputs: per frame, in order, the next output the last callback published on its
/// channel. Outputs left over, and those of the callbacks before it, are counted as extra; a frame without
/// one is counted as missing, and the channels missing are the error.
fn frame_outputs(
    step: &Step<'_>,
    published: &[Vec<EventOutput>],
    outcome: &mut ReplayOutcome,
) -> std::result::Result<Vec<Vec<u8>>, Vec<String>> {
    let module = &step.first().header.module_name;
    let count = |map: &mut BTreeMap<(String, String), u64>, channel: &str| {
        *map.entry((module.clone(), channel.to_owned())).or_default() += 1;
    };
    let (last, before) = published
        .split_last()
        .map_or((&[][..], &[][..]), |(l, b)| (&l[..], b));
    let mut left: Vec<Option<&EventOutput>> = (last.iter())
        .filter(|o| o.kind == kind::PUBLISH)
        .map(Some)
        .collect();
    let mut outputs = Vec::with_capacity(step.frames.len());
    let mut missing = Vec::new();
    for f in &step.frames {
        let channel = &f.header.channel_name;
        let found = (left.iter_mut())
            .find(|o| o.is_some_and(|o| o.name == *channel))
            .and_then(Option::take);
        match found {
            Some(o) => outputs.push(o.data.clone()),
            None => {
                count(&mut outcome.missing_outputs, channel);
                missing.push(channel.clone());
            }
        }
    }
    let extra = before.iter().flatten().filter(|o| o.kind == kind::PUBLISH);
    for o in extra.chain(left.into_iter().flatten()) {
        count(&mut outcome.extra_outputs, &o.name);
    }
    if missing.is_empty() {
        Ok(outputs)
    } else {
        Err(missing)
    }
}

/// Reproduce the callbacks of `step` (an unmodified node's) through `module`; the step's frames get, in
/// order, the outputs the last callback published on their channels. Outputs beyond those (and outputs of
/// the callbacks before it, which published nothing when recorded) are counted in `outcome.extra_outputs`;
/// a frame without one skips the step, counted in `outcome.missing_outputs`.
pub(super) fn run_events(
    recording: &Recording,
    inputs: &Inputs<'_>,
    module: &mut dyn Module,
    step: &Step<'_>,
    resolved: &[Resolved],
    outcome: &mut ReplayOutcome,
    mode: MissingUpstream,
) -> Result<EventStep> {
    let first = step.first();
    let header = &first.header;
    let events = first.events.as_deref().unwrap_or_default();
    let Some(trigger) = events.last() else {
        return Ok(EventStep::Skip(format!(
            "`{}` published {} #{} outside any callback its recorded event log shows (before the log \
             starts, or from a thread of its own)",
            header.module_name, header.channel_name, header.sequence_num
        )));
    };
    let mut backups = BTreeMap::new();
    let data = match deliveries(recording, inputs, &outcome.outputs, mode, events, &mut backups)? {
        Ok(d) => d,
        Err(reason) => return Ok(EventStep::Skip(reason)),
    };
    let grants: Vec<GrantEvent<'_>> = events
        .iter()
        .zip(&data)
        .map(|(e, d)| GrantEvent {
            kind: e.kind,
            name: &e.name,
            ros_time_ns: e.ros_time_ns,
            sequence_number: e.sequence_number,
            data: d,
            clock_reads_ns: &e.clock_reads_ns,
        })
        .collect();
    let started = std::time::Instant::now();
    let published = module
        .step_events(&grants)
        .map_err(|reason| super::error::LockstepError::Step {
            module: header.module_name.clone(),
            channel: header.channel_name.clone(),
            sequence_num: header.sequence_num,
            reason,
        })?;
    let process_time_ns = module
        .last_process_time_ns()
        .unwrap_or_else(|| lockstep_trace::duration_to_ns_u32(started.elapsed()));
    *outcome
        .events_granted
        .entry(header.module_name.clone())
        .or_default() += grants.len() as u64;
    for (channel, n) in backups {
        *outcome.backup_inputs.entry(channel).or_default() += n;
    }
    let outputs = match frame_outputs(step, &published, outcome) {
        Ok(outputs) => outputs,
        Err(missing) => {
            return Ok(EventStep::Skip(format!(
                "`{}` published nothing on {} for {} (recorded: {} output(s) of that callback)",
                header.module_name,
                missing.join(", "),
                trigger.describe(),
                step.frames.len()
            )))
        }
    };
    let headers: Vec<TraceHeader> = (step.frames.iter())
        .map(|f| TraceHeader {
            inputs: resolved.iter().map(|r| r.record.clone()).collect(),
            ..f.header.clone()
        })
        .collect();
    Ok(EventStep::Done(Stepped {
        headers,
        data: outputs,
        process_time_ns,
    }))
}
