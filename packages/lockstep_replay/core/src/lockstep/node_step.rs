//! One step of an unmodified node: its recorded callbacks reproduced in order ([`Module::step_events`]), each
//! given what it took (the simulated output where a live module produced it in this replay, else the
//! recorded message), and the step's frames taken from what the last callback, the one that published them
//! when recorded, published now.

use std::borrow::Cow;
use std::collections::BTreeMap;

use lockstep_trace::{InputRecord, TraceHeader};

use super::callback::{kind, EventOutput, GrantEvent, NodeCallback};
use super::error::{LockstepError, Result};
use super::inputs::{Choice, Inputs, Missing, Resolved, Source};
use super::module::{Module, Stepped};
use super::plan::Step;
use super::recording::Recording;
use super::types::{MissingUpstream, ReplayOptions, ReplayOutcome, Simulated, SkippedFrame};

/// What an unmodified node's step gives.
pub(super) enum EventStep<'r> {
    /// The frames its callback published (a part of the step: those it did not publish are counted as
    /// skipped and missing already), with their outputs.
    Done(Step<'r>, Stepped),
    /// The step is not replayed, for this reason.
    Skip(String),
}

/// What the callbacks of a step deliver: the bytes of each, or why one cannot be delivered.
struct Delivery<'a, 'r> {
    recording: &'r Recording,
    inputs: &'a Inputs<'r>,
    outputs: &'a [Simulated],
    mode: MissingUpstream,
    /// Per channel: messages delivered as the recorded backup of an output of a live module that was not
    /// simulated.
    backups: BTreeMap<String, u64>,
}

impl<'a> Delivery<'a, '_> {
    /// The bytes each of `events` delivers (`trigger`: how the step's inputs resolved the first input its
    /// header names, which is what the last event took).
    fn all(
        &mut self,
        events: &[NodeCallback],
        trigger: Option<&Resolved>,
    ) -> Result<std::result::Result<Vec<Cow<'a, [u8]>>, Missing>> {
        let mut data = Vec::with_capacity(events.len());
        for (k, e) in events.iter().enumerate() {
            let is_trigger = k + 1 == events.len();
            let bytes = match e.kind {
                kind::TIMER => Ok(Cow::Borrowed(&[][..])),
                kind::REQUEST_TAKEN => self.service(e, "request", "lockstep_request")?,
                kind::RESPONSE_TAKEN => self.service(e, "response", "lockstep_response")?,
                _ => match trigger.filter(|r| is_trigger && r.record.channel_name == e.name) {
                    Some(r) => Ok(self.source(&r.record.channel_name, r.source)?),
                    None => self.take(e)?,
                },
            };
            match bytes {
                Ok(b) => data.push(b),
                Err(missing) => return Ok(Err(missing)),
            }
        }
        Ok(Ok(data))
    }

    fn source(&self, channel: &str, source: Source) -> Result<Cow<'a, [u8]>> {
        Ok(match source {
            Source::Simulated(i) => Cow::Borrowed(&self.outputs[i].data[..]),
            Source::Recorded(digest) => self.recording.payload(channel, digest)?,
        })
    }

    fn recorded(&self, channel: &str, digest: u64) -> bool {
        (self.recording.channels.get(channel)).is_some_and(|c| c.by_digest.contains_key(&digest))
    }

    /// The request or response a service callback took, as recorded on the service's `<service>/<topic>`.
    fn service(
        &self,
        e: &NodeCallback,
        what: &str,
        topic: &str,
    ) -> Result<std::result::Result<Cow<'a, [u8]>, Missing>> {
        let channel = format!("{}/{topic}", e.name);
        if !self.recorded(&channel, e.payload_digest) {
            return Ok(Err(Missing::Skip(format!(
                "{} needs the {what} it took, which the recording does not hold on {channel} (record the \
                 service's requests and responses to replay its callbacks)",
                e.describe()
            ))));
        }
        Ok(Ok(self.recording.payload(&channel, e.payload_digest)?))
    }

    /// The message a take delivers: the simulated output of its producer frame when this replay simulated
    /// it, else the recorded message (a backup input when a live module writes the channel).
    fn take(&mut self, e: &NodeCallback) -> Result<std::result::Result<Cow<'a, [u8]>, Missing>> {
        let within = |reason: String| format!("{}: {reason}", e.describe());
        let resolved = match &e.producer {
            Some((channel, epoch, sequence_num)) => {
                let named = InputRecord {
                    module_name: self.recording.producer(channel).unwrap_or_default().to_owned(),
                    channel_name: channel.clone(),
                    sequence_num: *sequence_num,
                    epoch: *epoch,
                    payload_digest: e.payload_digest,
                    ..InputRecord::default()
                };
                self.inputs.named(&named, self.outputs, self.mode)
            }
            None => self.unproduced(e),
        };
        let resolved = match resolved {
            Ok(r) => r,
            Err(Missing::Skip(reason)) => return Ok(Err(Missing::Skip(within(reason)))),
            Err(Missing::Stop(reason)) => return Ok(Err(Missing::Stop(within(reason)))),
        };
        if resolved.choice == Choice::Backup {
            *self.backups.entry(e.name.clone()).or_default() += 1;
        }
        Ok(Ok(self.source(&e.name, resolved.source)?))
    }

    /// A take of a message no recorded frame outputs (an external channel, or an output of a module whose
    /// frame precedes the recording): the recorded message.
    fn unproduced(&self, e: &NodeCallback) -> std::result::Result<Resolved, Missing> {
        let recorded = self.recorded(&e.name, e.payload_digest);
        let live = self.inputs.is_live(&e.name);
        let not_held = || {
            format!(
                "the message it took on {} (digest {:016x}) is not in the recording",
                e.name, e.payload_digest
            )
        };
        if !recorded {
            return Err(Missing::Skip(not_held()));
        }
        let choice = match (live, self.mode) {
            (false, _) => Choice::Named,
            (true, MissingUpstream::Recorded) => Choice::Backup,
            (true, mode) => {
                let reason = format!(
                    "no recorded output of a live module carries the message it took on {}",
                    e.name
                );
                return Err(match mode {
                    MissingUpstream::Error => Missing::Stop(format!("{reason} (--missing-upstream error)")),
                    _ => Missing::Skip(reason),
                });
            }
        };
        Ok(Resolved {
            record: InputRecord {
                channel_name: e.name.clone(),
                payload_digest: e.payload_digest,
                ..InputRecord::default()
            },
            source: Source::Recorded(e.payload_digest),
            choice,
            recorded_digest: Some(e.payload_digest),
        })
    }
}

/// The error that stops a replay at `header`'s frame.
fn unreplayable(header: &TraceHeader, reason: String) -> LockstepError {
    LockstepError::Unreplayable {
        module: header.module_name.clone(),
        channel: header.channel_name.clone(),
        sequence_num: header.sequence_num,
        reason,
    }
}

/// Per frame of the step, in order, the next output the last callback published on its channel, or why
/// there is none. Outputs left over, and those of the callbacks before it (which published nothing when
/// recorded), are counted as extra; a frame without one as missing.
fn frame_outputs(
    step: &Step<'_>,
    trigger: &NodeCallback,
    published: &[Vec<EventOutput>],
    outcome: &mut ReplayOutcome,
) -> Vec<std::result::Result<Vec<u8>, String>> {
    let module = &step.first().header.module_name;
    let count = |map: &mut BTreeMap<(String, String), u64>, channel: &str| {
        *map.entry((module.clone(), channel.to_owned())).or_default() += 1;
    };
    let (last, before) = published
        .split_last()
        .map_or((&[][..], &[][..]), |(l, b)| (&l[..], b));
    let last: Vec<&EventOutput> = last.iter().filter(|o| o.kind == kind::PUBLISH).collect();
    let mut used = vec![false; last.len()];
    let mut out = Vec::with_capacity(step.frames.len());
    for f in &step.frames {
        let channel = &f.header.channel_name;
        match (0..last.len()).find(|&i| !used[i] && last[i].name == *channel) {
            Some(i) => {
                used[i] = true;
                out.push(Ok(last[i].data.clone()));
            }
            None => {
                count(&mut outcome.missing_outputs, channel);
                let on_channel = |name: &str| name == channel;
                out.push(Err(format!(
                    "`{module}` published {} of the {} recorded output(s) on {channel} for {}",
                    last.iter().filter(|o| on_channel(&o.name)).count(),
                    step.frames
                        .iter()
                        .filter(|f| on_channel(&f.header.channel_name))
                        .count(),
                    trigger.describe()
                )));
            }
        }
    }
    let extra = before.iter().flatten().filter(|o| o.kind == kind::PUBLISH);
    let left = (last.iter().zip(&used)).filter(|(_, &u)| !u).map(|(o, _)| *o);
    for o in extra.chain(left) {
        count(&mut outcome.extra_outputs, &o.name);
    }
    out
}

/// Why a frame whose event log shows no callback publishing it cannot be replayed.
fn outside_callbacks(recording: &Recording, header: &TraceHeader) -> String {
    let mut reason = format!(
        "`{}` published {} #{} outside any callback the interceptor saw (its event log shows no data \
         callback on the publishing thread before it, or does not hold the publication: logged before \
         the recording began, or lost)",
        header.module_name, header.channel_name, header.sequence_num
    );
    if let Some((n, why)) = recording.unreadable_event_batches.get(&header.module_name) {
        reason.push_str(&format!(
            "; {n} message(s) of its event log could not be decoded ({why})"
        ));
    }
    reason
}

/// Grant `events` to `module` with what each delivers (`data`): per event what its callback sent, and how
/// long the module says the callbacks took (else the call's wall time). An error names the frame `header`.
fn reproduce(
    module: &mut dyn Module,
    header: &TraceHeader,
    events: &[NodeCallback],
    data: &[Cow<'_, [u8]>],
) -> Result<(Vec<Vec<EventOutput>>, u32)> {
    let grants: Vec<GrantEvent<'_>> = events
        .iter()
        .zip(data)
        .map(|(e, d)| GrantEvent {
            kind: e.kind,
            name: &e.name,
            ros_time_ns: e.ros_time_ns,
            sequence_number: e.sequence_number,
            data: d,
            clock_reads_ns: &e.clock_reads_ns,
        })
        .collect();
    let failed = |reason: String| LockstepError::Step {
        module: header.module_name.clone(),
        channel: header.channel_name.clone(),
        sequence_num: header.sequence_num,
        reason,
    };
    let started = std::time::Instant::now();
    let published = module.step_events(&grants).map_err(failed)?;
    let process_time_ns = module
        .last_process_time_ns()
        .unwrap_or_else(|| lockstep_trace::duration_to_ns_u32(started.elapsed()));
    if published.len() != grants.len() {
        return Err(failed(format!(
            "answered what {} callback(s) sent for {} events",
            published.len(),
            grants.len()
        )));
    }
    Ok((published, process_time_ns))
}

/// Reproduce the callbacks of `step` (an unmodified node's) through `module`: the callbacks that published
/// nothing when recorded, then the one that published the step's frames. The frames get, in order, the
/// outputs that last callback published on their channels; outputs beyond those (and outputs of the
/// callbacks before it) are counted in `outcome.extra_outputs`; a frame without one is skipped, counted in
/// `outcome.missing_outputs`. A callback that cannot be given what it took when recorded skips the step.
pub(super) fn run_events<'r>(
    recording: &'r Recording,
    inputs: &Inputs<'r>,
    module: &mut dyn Module,
    step: &Step<'r>,
    resolved: &[Resolved],
    outcome: &mut ReplayOutcome,
    options: &ReplayOptions,
) -> Result<EventStep<'r>> {
    let first = step.first();
    let header = &first.header;
    let events = first.events.as_deref().unwrap_or_default();
    let Some(trigger) = events.last() else {
        return Ok(EventStep::Skip(outside_callbacks(recording, header)));
    };
    let mut delivery = Delivery {
        recording,
        inputs,
        outputs: &outcome.outputs,
        mode: options.missing_upstream,
        backups: BTreeMap::new(),
    };
    let data = match delivery.all(events, resolved.first())? {
        Ok(d) => d,
        Err(Missing::Skip(reason)) => return Ok(EventStep::Skip(reason)),
        Err(Missing::Stop(reason)) => return Err(unreplayable(header, reason)),
    };
    let (published, process_time_ns) = reproduce(module, header, events, &data)?;
    let granted = events.len() as u64;
    let backups = std::mem::take(&mut delivery.backups);
    drop(data);
    *outcome
        .events_granted
        .entry(header.module_name.clone())
        .or_default() += granted;
    for (channel, n) in backups {
        *outcome.backup_inputs.entry(channel).or_default() += n;
    }
    let mut done = Step {
        frames: Vec::with_capacity(step.frames.len()),
        new_module: false,
    };
    let mut stepped = Stepped {
        headers: Vec::with_capacity(step.frames.len()),
        data: Vec::with_capacity(step.frames.len()),
        process_time_ns,
    };
    for (f, output) in step
        .frames
        .iter()
        .zip(frame_outputs(step, trigger, &published, outcome))
    {
        match output {
            Ok(data) => {
                stepped.headers.push(TraceHeader {
                    inputs: resolved.iter().map(|r| r.record.clone()).collect(),
                    ..f.header.clone()
                });
                stepped.data.push(data);
                done.frames.push(f.clone());
            }
            Err(reason) if options.strict => return Err(unreplayable(&f.header, reason)),
            Err(reason) => outcome.skipped.push(SkippedFrame {
                module: f.header.module_name.clone(),
                channel: f.header.channel_name.clone(),
                sequence_num: Some(f.header.sequence_num),
                reason,
            }),
        }
    }
    Ok(EventStep::Done(done, stepped))
}
