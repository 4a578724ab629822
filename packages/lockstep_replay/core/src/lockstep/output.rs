//! The simulated run as a bag: the outputs and their headers, in the recorder's format, together with the
//! recorded inputs the replayed frames consumed, so the new bag is itself a recording that replays again.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lockstep_bag::cdr::Schema;
use lockstep_bag::{BagWriter, MessageDefinition, TopicSpec, WriterOptions};
use lockstep_trace::TraceHeader;

use super::error::{LockstepError, Result};
use super::frame::Frame;
use super::header::{header_to_value, HEADER_SUFFIX};
use super::recording::{RecordedMessage, Recording};
use super::topology_source::TOPOLOGY_RECORD;
use super::types::ReplayOutcome;

/// Writes `outcome` into a new bag at `dir`, a recording of its own:
/// - per output channel the data topic and its `/lockstep_header` sidecar with the simulated outputs and
///   their headers;
/// - every recorded message a replayed frame consumed that no live module simulated (external inputs such
///   as odometry or scans, outputs of modules that were not live, recorded messages that stood in for a
///   missing upstream output), with its recorded header where the recording has one;
/// - a data topic for every other recorded channel a live module reads (so the same modules find their
///   wiring in it), and the topology (the recorded one, with what the simulated headers add).
///
/// Every message is at its recorded log time (ties: recorded data, recorded headers, then the outputs in
/// replay order, each output's data before its header); types, definitions and offered QoS are as
/// recorded. Replaying the new bag with the same modules gives the same outputs again. Nothing depends on
/// the wall clock, so one outcome always gives the same bytes.
pub fn write_bag(recording: &Recording, outcome: &ReplayOutcome, dir: &Path) -> Result<()> {
    let (header_type, header_definition, header_schema) =
        recording
            .header_type
            .as_ref()
            .ok_or_else(|| LockstepError::Encode {
                what: "headers".into(),
                reason: "the recording holds no header type definition".into(),
            })?;
    let consumed = RecordedInputs::of(recording, outcome);

    let mut data_channels: BTreeSet<&str> = outcome
        .outputs
        .iter()
        .map(|o| o.header.channel_name.as_str())
        .collect();
    let mut header_channels = data_channels.clone();
    data_channels.extend(consumed.data.keys().map(|(channel, _)| *channel));
    header_channels.extend(consumed.headers.values().map(|f| f.header.channel_name.as_str()));
    data_channels.extend(live_reader_channels(recording, outcome));

    let mut writer = BagWriter::create(dir, WriterOptions::default())?;
    for channel in &data_channels {
        writer.add_topic(data_topic(recording, outcome, channel))?;
        if header_channels.contains(channel) {
            writer.add_topic(
                TopicSpec::new(format!("{channel}{HEADER_SUFFIX}"), header_type.as_str())
                    .with_definition(header_definition.clone())
                    .with_type_hash(recording.header_type_hash.clone()),
            )?;
        }
    }

    let mut messages = pending_messages(recording, outcome, &consumed, header_schema)?;
    messages.sort_by_key(|m| m.key);
    for m in messages {
        writer.write(&m.topic, m.key.0, &m.data)?;
    }
    writer.write_metadata_record(TOPOLOGY_RECORD, &topology_record(recording, outcome))?;
    writer.finish()?;
    Ok(())
}

/// The data topic of `channel` in the new bag: type, definition, offered QoS and type hash as recorded
/// (a channel only a new module writes has the type it declared).
fn data_topic(recording: &Recording, outcome: &ReplayOutcome, channel: &str) -> TopicSpec {
    let recorded = recording.channels.get(channel);
    let type_name = recorded.map_or_else(
        || outcome.new_channel_types.get(channel).map_or("", String::as_str),
        |c| c.type_name.as_str(),
    );
    let definition = recorded
        .and_then(|c| c.definition.clone())
        .unwrap_or_else(MessageDefinition::empty);
    let qos = recorded.map(|c| c.offered_qos.clone()).unwrap_or_default();
    let hash = recorded.map(|c| c.type_hash.clone()).unwrap_or_default();
    TopicSpec::new(channel, type_name)
        .with_definition(definition)
        .with_qos(qos)
        .with_type_hash(hash)
}

/// Every message of the new bag, not yet in order: the consumed recorded data, their recorded headers, and
/// each simulated output's data and header.
fn pending_messages<'a>(
    recording: &'a Recording,
    outcome: &'a ReplayOutcome,
    consumed: &RecordedInputs<'a>,
    header_schema: &Schema,
) -> Result<Vec<Pending<'a>>> {
    let mut messages: Vec<Pending<'_>> =
        Vec::with_capacity(outcome.outputs.len() * 2 + consumed.data.len() + consumed.headers.len());
    for (i, ((channel, digest), m)) in consumed.data.iter().enumerate() {
        messages.push(Pending {
            key: (m.log_time_ns, 0, i, 0),
            topic: (*channel).to_owned(),
            data: recording.payload(channel, *digest)?,
        });
    }
    for (i, f) in consumed.headers.values().enumerate() {
        messages.push(Pending {
            key: (f.header_log_time_ns, 1, i, 0),
            topic: format!("{}{HEADER_SUFFIX}", f.header.channel_name),
            data: Cow::Owned(encode_header(header_schema, &f.header)?),
        });
    }
    for (i, o) in outcome.outputs.iter().enumerate() {
        messages.push(Pending {
            key: (o.data_log_time_ns, 2, i, 0),
            topic: o.header.channel_name.clone(),
            data: Cow::Borrowed(&o.data),
        });
        messages.push(Pending {
            key: (o.header_log_time_ns, 2, i, 1),
            topic: format!("{}{HEADER_SUFFIX}", o.header.channel_name),
            data: Cow::Owned(encode_header(header_schema, &o.header)?),
        });
    }
    Ok(messages)
}

/// One message of the new bag. `key` orders them: (log time, source: recorded data 0, recorded headers 1,
/// outputs 2; index within its source; part: an output's data 0, its header 1).
struct Pending<'a> {
    key: (u64, u8, usize, u8),
    topic: String,
    data: Cow<'a, [u8]>,
}

/// The recorded messages the replayed frames consumed, and the recorded headers of those messages.
struct RecordedInputs<'r> {
    /// By (channel, payload digest).
    data: BTreeMap<(&'r str, u64), &'r RecordedMessage>,
    /// By (channel, epoch, sequence number).
    headers: BTreeMap<(&'r str, u64, u32), &'r Frame>,
}

impl<'r> RecordedInputs<'r> {
    /// Every input named by a simulated output's header that is not a simulated output of its channel (same
    /// channel and digest) was taken from the recording: its data, found by digest, and the recorded header
    /// of the frame the input names (by channel, epoch and sequence number, with that digest; else the first
    /// recorded frame of the channel with that digest).
    fn of(recording: &'r Recording, outcome: &ReplayOutcome) -> Self {
        let simulated: BTreeSet<(&str, u64)> = outcome
            .outputs
            .iter()
            .map(|o| (o.header.channel_name.as_str(), o.header.payload_digest))
            .collect();
        let mut by_id: BTreeMap<(&str, u64, u32), &Frame> = BTreeMap::new();
        let mut by_digest: BTreeMap<(&str, u64), &Frame> = BTreeMap::new();
        for f in &recording.frames {
            let channel = f.header.channel_name.as_str();
            by_id
                .entry((channel, f.header.epoch, f.header.sequence_num))
                .or_insert(f);
            by_digest.entry((channel, f.header.payload_digest)).or_insert(f);
        }
        let mut out = Self {
            data: BTreeMap::new(),
            headers: BTreeMap::new(),
        };
        for input in outcome.outputs.iter().flat_map(|o| &o.header.inputs) {
            let Some((channel, recorded)) = recording.channels.get_key_value(&input.channel_name) else {
                continue;
            };
            let digest = input.payload_digest;
            if simulated.contains(&(channel.as_str(), digest)) {
                continue;
            }
            let Some(message) = recorded.by_digest.get(&digest) else {
                continue;
            };
            out.data.insert((channel.as_str(), digest), message);
            let frame = by_id
                .get(&(channel.as_str(), input.epoch, input.sequence_num))
                .filter(|f| f.header.payload_digest == digest)
                .or_else(|| by_digest.get(&(channel.as_str(), digest)));
            if let Some(&f) = frame {
                out.headers.insert(
                    (
                        f.header.channel_name.as_str(),
                        f.header.epoch,
                        f.header.sequence_num,
                    ),
                    f,
                );
            }
        }
        out
    }
}

/// The recorded channels that the live modules (the recorded topology's modules the outcome does not list
/// as not live) read.
fn live_reader_channels<'r>(recording: &'r Recording, outcome: &ReplayOutcome) -> BTreeSet<&'r str> {
    recording
        .topology
        .components
        .iter()
        .filter(|c| !outcome.not_live.contains(&c.module_name))
        .flat_map(|c| &c.reader_channels)
        .filter(|channel| recording.channels.contains_key(*channel))
        .map(String::as_str)
        .collect()
}

/// `header` as CDR of the recording's header type.
fn encode_header(schema: &Schema, header: &TraceHeader) -> Result<Vec<u8>> {
    schema
        .encode(&header_to_value(header, schema))
        .map_err(|e| LockstepError::Encode {
            what: format!("the header of {} #{}", header.channel_name, header.sequence_num),
            reason: e.to_string(),
        })
}

/// The topology as the recorder's `lockstep_topology` record (one entry per module: `reads=a,b;writes=c`):
/// the recorded one, with the wiring the simulated headers show added (a live module reading a channel its
/// recorded frames did not name, a live module the recording does not have), so that the new bag describes
/// the run it holds.
fn topology_record(recording: &Recording, outcome: &ReplayOutcome) -> BTreeMap<String, String> {
    let mut wiring: BTreeMap<&str, (BTreeSet<&str>, BTreeSet<&str>)> = BTreeMap::new();
    for c in &recording.topology.components {
        let (reads, writes) = wiring.entry(c.module_name.as_str()).or_default();
        reads.extend(c.reader_channels.iter().map(String::as_str));
        writes.extend(c.writer_channels.iter().map(String::as_str));
    }
    for o in &outcome.outputs {
        let (reads, writes) = wiring.entry(o.header.module_name.as_str()).or_default();
        reads.extend(o.header.inputs.iter().map(|i| i.channel_name.as_str()));
        writes.insert(o.header.channel_name.as_str());
    }
    let list = |s: &BTreeSet<&str>| s.iter().copied().collect::<Vec<_>>().join(",");
    wiring
        .iter()
        .map(|(module, (reads, writes))| {
            (
                (*module).to_owned(),
                format!("reads={};writes={}", list(reads), list(writes)),
            )
        })
        .collect()
}
