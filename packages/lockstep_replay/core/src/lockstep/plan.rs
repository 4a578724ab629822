//! The steps of a replay: the selected recorded frames in replay order, the outputs of one computation on
//! several channels joined into one step, and the frames of live modules the recording does not have
//! (stepped once per arrival of their trigger input).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use lockstep_trace::{InputRecord, TraceHeader};

use super::frame::Frame;
use super::recording::Recording;
use super::types::NewModule;

/// One computation to grant: its frames (one per output channel; same module, start time and inputs), or
/// the outputs one callback of an unmodified node published (possibly several on one channel).
#[derive(Debug, Clone)]
pub(super) struct Step<'r> {
    pub frames: Vec<Cow<'r, Frame>>,
    /// A live module absent from the recording: nothing recorded to compare with.
    pub new_module: bool,
}

impl Step<'_> {
    pub fn first(&self) -> &Frame {
        &self.frames[0]
    }
}

/// What makes two recorded outputs one computation: module, start stamp and the exact inputs; for an
/// unmodified node, the callback that published them (module, epoch, where its event is in the log), which
/// may have published several outputs on one channel.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum ComputationKey {
    Inputs(String, i64, Vec<(String, u64, u32, u64)>),
    Callback(String, u64, u64),
}

fn computation(frame: &Frame) -> ComputationKey {
    let header = &frame.header;
    if let Some(trigger) = frame.events.as_ref().and_then(|e| e.last()) {
        return ComputationKey::Callback(header.module_name.clone(), header.epoch, trigger.index);
    }
    ComputationKey::Inputs(
        header.module_name.clone(),
        header.start_time_ns,
        header
            .inputs
            .iter()
            .map(|i| (i.channel_name.clone(), i.epoch, i.sequence_num, i.payload_digest))
            .collect(),
    )
}

/// The steps for the frames of `recording` whose ids are in `selected`, plus the frames of `new_modules`.
pub(super) fn plan<'r>(
    recording: &'r Recording,
    selected: &BTreeSet<(String, u64, u32)>,
    new_modules: &[NewModule],
) -> Vec<Step<'r>> {
    let steps = recorded_steps(recording, selected);
    if new_modules.is_empty() {
        return steps;
    }
    let inserts = new_module_steps(recording, &steps, new_modules);
    let mut out = Vec::with_capacity(steps.len() + inserts.len());
    let mut inserts = inserts.into_iter().peekable();
    for (i, step) in steps.into_iter().enumerate() {
        while let Some(((at, ..), _)) = inserts.peek() {
            if *at > i {
                break;
            }
            out.extend(inserts.next().map(|(_, s)| s));
        }
        out.push(step);
    }
    out.extend(inserts.map(|(_, s)| s));
    out
}

/// The selected recorded frames in replay order, the outputs of one computation joined into one step.
fn recorded_steps<'r>(recording: &'r Recording, selected: &BTreeSet<(String, u64, u32)>) -> Vec<Step<'r>> {
    let mut steps: Vec<Step<'r>> = Vec::new();
    let mut open: BTreeMap<ComputationKey, usize> = BTreeMap::new();
    for frame in recording.frames.iter().filter(|f| selected.contains(&f.id())) {
        let key = computation(frame);
        if let Some(&i) = open.get(&key) {
            let step = &mut steps[i];
            let one_callback = matches!(key, ComputationKey::Callback(..));
            if one_callback
                || step
                    .frames
                    .iter()
                    .all(|f| f.header.channel_name != frame.header.channel_name)
            {
                step.frames.push(Cow::Borrowed(frame));
                continue;
            }
        }
        open.insert(key, steps.len());
        steps.push(Step {
            frames: vec![Cow::Borrowed(frame)],
            new_module: false,
        });
    }
    steps
}

/// Where a new module's step goes: before the step with this index, then by stamp, module, trigger order.
type InsertKey = (usize, i64, String, usize);

/// The steps of `new_modules`, one per arrival of each one's trigger input, keyed by where they go among
/// the recorded `steps`: right after the step that produced the trigger, or (for an external trigger)
/// before the first recorded step that starts later.
fn new_module_steps<'r>(
    recording: &'r Recording,
    steps: &[Step<'r>],
    new_modules: &[NewModule],
) -> BTreeMap<InsertKey, Step<'r>> {
    // Where each recorded output sits in the plan, and each step's start stamp (nearly sorted).
    let mut position: BTreeMap<(&str, u64, u32), usize> = BTreeMap::new();
    for (i, step) in steps.iter().enumerate() {
        for f in &step.frames {
            let h = &f.header;
            position.insert((h.channel_name.as_str(), h.epoch, h.sequence_num), i);
        }
    }
    let starts: Vec<i64> = steps.iter().map(|s| s.first().header.start_time_ns).collect();
    let before_first_later = |t: i64| starts.partition_point(|&s| s <= t);
    let mut inserts: BTreeMap<InsertKey, Step<'r>> = BTreeMap::new();
    for m in new_modules {
        for (k, (trigger, log_time_ns)) in triggers(recording, &m.trigger).into_iter().enumerate() {
            let at = position
                .get(&(trigger.channel_name.as_str(), trigger.epoch, trigger.sequence_num))
                .map_or_else(|| before_first_later(trigger.start_time_ns), |&i| i + 1);
            let frames = m
                .writes
                .iter()
                .map(|channel| {
                    Cow::Owned(Frame {
                        header: TraceHeader {
                            module_name: m.name.clone(),
                            channel_name: channel.clone(),
                            sequence_num: u32::try_from(k).unwrap_or(u32::MAX),
                            epoch: 0,
                            start_time_ns: trigger.start_time_ns,
                            process_time_ns: 0,
                            payload_digest: 0,
                            inputs: vec![trigger.clone()],
                        },
                        header_log_time_ns: log_time_ns,
                        events: None,
                    })
                })
                .collect();
            inserts.insert(
                (at, trigger.start_time_ns, m.name.clone(), k),
                Step {
                    frames,
                    new_module: true,
                },
            );
        }
    }
    inserts
}

/// Every arrival on `channel` in the recording, as the input record a step names and its log time: each
/// recorded output of the module producing it, or each recorded message of an external channel.
fn triggers(recording: &Recording, channel: &str) -> Vec<(InputRecord, u64)> {
    if recording.producer(channel).is_some() {
        return recording
            .frames
            .iter()
            .filter(|f| f.header.channel_name == channel)
            .map(|f| (f.header.as_input(), f.header_log_time_ns))
            .collect();
    }
    let Some(recorded) = recording.channels.get(channel) else {
        return Vec::new();
    };
    recorded
        .by_time
        .iter()
        .enumerate()
        .map(|(k, &(log_time_ns, digest))| {
            let header = TraceHeader::external(
                channel,
                u32::try_from(k).unwrap_or(u32::MAX),
                i64::try_from(log_time_ns).unwrap_or(i64::MAX),
                digest,
            );
            (header.as_input(), log_time_ns)
        })
        .collect()
}
