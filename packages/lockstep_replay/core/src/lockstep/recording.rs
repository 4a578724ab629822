//! A recorded run, indexed for lock-step replay: the module topology the recorder stored, every frame (one
//! dependency header of a module of that topology), and each channel's recorded data by payload digest
//! (a channel data map: a header names its inputs by channel and digest, so the data is found exactly,
//! also for untraced publishers).

use std::borrow::Cow;
use std::collections::BTreeMap;

use lockstep_bag::cdr::Schema;
use lockstep_bag::traced::NodeEventLogReader;
use lockstep_bag::{BagReader, Location, MessageDefinition, Payload, ReadOptions};
use lockstep_trace::{digest, Topology};

use super::error::{LockstepError, Result};
use super::frame::Frame;
use super::header::{header_from_value, HEADER_SUFFIX};
use super::order::replay_order;
use super::topology_source::{topology_facts, TopologySource};
use super::unmodified::attach;

/// One recorded data message.
#[derive(Debug, Clone)]
pub struct RecordedMessage {
    /// Its log time in the bag.
    pub log_time_ns: u64,
    /// Where it is in the bag.
    pub location: Location,
    /// Its bytes as recorded, when held in memory; `None`: read from the bag when needed
    /// ([`Recording::payload`]).
    pub data: Option<Vec<u8>>,
}

/// One recorded channel.
#[derive(Debug, Clone)]
pub struct Channel {
    /// Its message type.
    pub type_name: String,
    /// Its message definition in the bag.
    pub definition: Option<MessageDefinition>,
    /// The parsed definition, when the bag holds a usable one.
    pub schema: Option<Schema>,
    /// Messages by payload digest (the first one recorded with that digest).
    pub by_digest: BTreeMap<u64, RecordedMessage>,
    /// Messages recorded.
    pub count: u64,
    /// Every message recorded, (log time, payload digest), in log order: what "the latest message at or
    /// before a time" is looked up in.
    pub by_time: Vec<(u64, u64)>,
    /// The QoS profiles its publishers offered when recorded (rosbag2 metadata).
    pub offered_qos: Vec<lockstep_bag::QosProfile>,
    /// Its type's description hash as recorded (`RIHS01_...`; empty when the bag has none).
    pub type_hash: String,
}

/// A recorded output of a module with no dependency header in the bag: it cannot be replayed (nothing says
/// which inputs it was computed from). Happens when the recording ended between a message and its header, or
/// began between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headerless {
    /// The module that publishes its channel in the recorded topology.
    pub module: String,
    /// Its channel.
    pub channel: String,
    /// Its log time in the bag.
    pub log_time_ns: u64,
}

/// A recorded run.
#[derive(Debug)]
pub struct Recording {
    /// The module topology the recorder stored (a DAG: checked when loading).
    pub topology: Topology,
    /// Every frame of a module of the topology, in replay order: after the frames it depends on (its inputs,
    /// the module's previous output on the channel), then by recorded start time, the module's topological
    /// rank, channel, epoch and sequence number (see `replay_order`).
    pub frames: Vec<Frame>,
    /// Data channels (header sidecars excluded), by name.
    pub channels: BTreeMap<String, Channel>,
    /// Type and definition of the header sidecar topics, if any.
    pub header_type: Option<(String, MessageDefinition, Schema)>,
    /// The header type's description hash as recorded (empty when the bag has none).
    pub header_type_hash: String,
    /// Recorded outputs of the topology's modules that have no header in the bag, in log order.
    pub headerless: Vec<Headerless>,
    /// Where [`Self::topology`] came from: the recorder's record, or rebuilt from the header topics.
    pub topology_source: TopologySource,
    /// Per unmodified node (recorded through the interceptor): the limits the interceptor detected while
    /// recording (a multi-threaded executor, intra-process communication, ...).
    pub unmodified_warnings: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Per unmodified node: the messages of its event log that could not be decoded (skipped), and why the
    /// first could not. Its outputs that only those batches could explain are skipped at replay.
    pub unreadable_event_batches: BTreeMap<String, (u64, String)>,
    /// The bag, kept open to read the payloads not held in memory (see [`Recording::open_indexed`]).
    source: Option<Source>,
}

/// The open bag of an indexed recording.
struct Source(BagReader);

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Source").field(&self.0.path()).finish()
    }
}

impl Recording {
    /// Indexes the bag `reader`. The topology is the recorder's record, or when the bag holds none (a copy
    /// written by another tool, `ros2 bag record`, a cut recording), the one the dependency headers on the
    /// `<channel>/lockstep_header` topics describe ([`Self::topology_source`] says which). Fails when the
    /// bag holds neither, when the topology is not a DAG (naming the cycle), or when a header cannot be read
    /// (naming topic and index).
    pub fn load(reader: &BagReader) -> Result<Self> {
        Self::index(reader, u64::MAX)
    }

    /// [`Recording::load`] with bounded memory: payloads are held in memory until they add up to
    /// `memory_budget_bytes`; past that only each message's location is kept, and [`Recording::payload`]
    /// reads it from the bag when a frame needs it. A recording of camera images or point clouds larger than
    /// the machine's memory replays this way.
    pub fn open_indexed(reader: BagReader, memory_budget_bytes: u64) -> Result<Self> {
        let mut recording = Self::index(&reader, memory_budget_bytes)?;
        recording.source = Some(Source(reader));
        Ok(recording)
    }

    /// The bytes of the recorded message with `digest` on `channel`: from memory, or read from the bag.
    pub fn payload(&self, channel: &str, digest: u64) -> Result<Cow<'_, [u8]>> {
        let fail = |reason: String| LockstepError::Payload {
            channel: channel.to_owned(),
            digest,
            reason,
        };
        let message = self
            .channels
            .get(channel)
            .and_then(|c| c.by_digest.get(&digest))
            .ok_or_else(|| fail("not in the recording".into()))?;
        if let Some(data) = &message.data {
            return Ok(Cow::Borrowed(data));
        }
        let Some(Source(reader)) = &self.source else {
            return Err(fail("not held in memory, and the bag is not open".into()));
        };
        reader
            .read_at(&message.location)
            .map(Cow::Owned)
            .map_err(|e| fail(e.to_string()))
    }

    fn index(reader: &BagReader, memory_budget_bytes: u64) -> Result<Self> {
        let records = reader.metadata_records()?;
        let (builder, topology_source) = topology_facts(reader, &records)?;
        let topology = builder.build().map_err(LockstepError::Topology)?;
        let (mut channels, header_type, header_type_hash) = channels_of(reader)?;

        let modules: BTreeMap<String, usize> = topology
            .module_order()
            .into_iter()
            .enumerate()
            .map(|(rank, m)| (m, rank))
            .collect();
        // Each module output's (digest, log time), to find the ones no header names.
        let mut outputs: BTreeMap<String, Vec<(u64, u64)>> = topology
            .components
            .iter()
            .flat_map(|c| c.writer_channels.iter().cloned())
            .map(|channel| (channel, Vec::new()))
            .collect();
        let scan = Scan {
            header_schema: header_type.as_ref().map(|(_, _, schema)| schema),
            modules: &modules,
            memory_budget_bytes,
        };
        // Event logs of unmodified nodes: only read when the bag has events topics.
        let mut logs = Some(NodeEventLogReader::new(reader.topics())).filter(|l| !l.is_empty());
        let mut frames = scan.messages(reader, &mut channels, &mut outputs, &mut logs)?;
        let logs = logs.map(NodeEventLogReader::finish).unwrap_or_default();
        attach(&logs, &mut frames);
        let unmodified_warnings = (logs.iter())
            .filter(|(_, log)| log.batches > 0)
            .map(|(module, log)| (module.clone(), log.warnings.clone()))
            .collect();
        let unreadable_event_batches = (logs.into_iter())
            .filter(|(_, log)| log.undecodable > 0)
            .map(|(module, log)| {
                let reason = log.undecodable_reason.unwrap_or_default();
                (module, (log.undecodable, reason))
            })
            .collect();
        for c in channels.values_mut() {
            c.by_time.sort_by_key(|&(log_time_ns, _)| log_time_ns);
        }
        let headerless = headerless(&topology, &frames, outputs);
        let rank = |module: &str| modules.get(module).copied().unwrap_or(usize::MAX);
        replay_order(&mut frames, &rank);
        Ok(Self {
            topology,
            frames,
            channels,
            header_type,
            header_type_hash,
            headerless,
            topology_source,
            unmodified_warnings,
            unreadable_event_batches,
            source: None,
        })
    }

    /// Whether the recording holds `module`'s event log (an unmodified node traced by interception: it is
    /// replayed by reproducing its events).
    pub fn has_event_log(&self, module: &str) -> bool {
        self.channels
            .contains_key(&format!("{}{module}", super::unmodified::EVENTS_TOPIC_PREFIX))
    }

    /// When the recorder logged the data message of `frame` (the output's log time, what the bag tools show
    /// for the message): the last message on its channel with its digest logged at or before its header (a
    /// module publishes the data, then the header, which the recorder logs a little later), looked for among
    /// the few messages before the header; else the first message with that digest; else the header's log
    /// time (the data was not recorded).
    pub fn data_log_time_ns(&self, frame: &Frame) -> u64 {
        const LOOK_BACK: usize = 64;
        let Some(channel) = self.channels.get(&frame.header.channel_name) else {
            return frame.header_log_time_ns;
        };
        let end = channel
            .by_time
            .partition_point(|&(t, _)| t <= frame.header_log_time_ns);
        channel.by_time[end.saturating_sub(LOOK_BACK)..end]
            .iter()
            .rev()
            .find(|&&(_, d)| d == frame.header.payload_digest)
            .map(|&(t, _)| t)
            .or_else(|| {
                channel
                    .by_digest
                    .get(&frame.header.payload_digest)
                    .map(|m| m.log_time_ns)
            })
            .unwrap_or(frame.header_log_time_ns)
    }

    /// The module writing `channel` in the recorded topology (`None`: an external channel).
    pub fn producer(&self, channel: &str) -> Option<&str> {
        self.topology
            .components
            .iter()
            .find(|c| c.writer_channels.contains(channel))
            .map(|c| c.module_name.as_str())
    }
}

/// The recorded outputs that no header names: per channel, each header pairs with one recorded message of its
/// payload digest (equal payloads are paired by count); the messages left over have no header.
fn headerless(
    topology: &Topology,
    frames: &[Frame],
    outputs: BTreeMap<String, Vec<(u64, u64)>>,
) -> Vec<Headerless> {
    let mut named: BTreeMap<(&str, u64), usize> = BTreeMap::new();
    for f in frames {
        *named
            .entry((f.header.channel_name.as_str(), f.header.payload_digest))
            .or_default() += 1;
    }
    let mut out = Vec::new();
    for (channel, messages) in &outputs {
        let Some(module) = topology
            .components
            .iter()
            .find(|c| c.writer_channels.contains(channel))
        else {
            continue;
        };
        for &(digest, log_time_ns) in messages {
            match named.get_mut(&(channel.as_str(), digest)) {
                Some(n) if *n > 0 => *n -= 1,
                _ => out.push(Headerless {
                    module: module.module_name.clone(),
                    channel: channel.clone(),
                    log_time_ns,
                }),
            }
        }
    }
    out.sort_by(|a, b| (a.log_time_ns, &a.channel).cmp(&(b.log_time_ns, &b.channel)));
    out
}

/// The type of the dependency headers: name, definition and parsed schema.
type HeaderType = (String, MessageDefinition, Schema);

/// The bag's data channels (empty of messages yet) and the header type with its type hash, from the first
/// header topic. A header topic without a usable ros2msg definition is an error naming it.
fn channels_of(reader: &BagReader) -> Result<(BTreeMap<String, Channel>, Option<HeaderType>, String)> {
    let mut channels = BTreeMap::new();
    let mut header_type = None;
    let mut header_type_hash = String::new();
    for t in reader.topics() {
        let name = &t.metadata.name;
        let definition = t.definition.clone();
        let schema = definition
            .as_ref()
            .filter(|d| d.encoding == "ros2msg" && !d.text.trim().is_empty())
            .map(|d| Schema::parse(&t.metadata.type_name, &d.text));
        if name.ends_with(HEADER_SUFFIX) {
            if header_type.is_none() {
                let schema = schema
                    .ok_or_else(|| LockstepError::Header {
                        what: name.clone(),
                        reason: "the bag holds no ros2msg definition of the header type".into(),
                    })?
                    .map_err(|e| LockstepError::Header {
                        what: name.clone(),
                        reason: e.to_string(),
                    })?;
                let definition = definition.unwrap_or_else(MessageDefinition::empty);
                header_type = Some((t.metadata.type_name.clone(), definition, schema));
                header_type_hash = t.metadata.type_description_hash.clone();
            }
            continue;
        }
        channels.insert(
            name.clone(),
            Channel {
                type_name: t.metadata.type_name.clone(),
                definition,
                schema: schema.and_then(std::result::Result::ok),
                by_digest: BTreeMap::new(),
                count: 0,
                by_time: Vec::new(),
                offered_qos: t.metadata.offered_qos_profiles.clone(),
                type_hash: t.metadata.type_description_hash.clone(),
            },
        );
    }
    Ok((channels, header_type, header_type_hash))
}

/// One pass over the bag's messages: headers become frames, data messages are digested and indexed.
struct Scan<'a> {
    header_schema: Option<&'a Schema>,
    /// The recorded modules (with their rank in module order): frames of other modules are left out.
    modules: &'a BTreeMap<String, usize>,
    /// Payloads are held in memory until they add up to this; past it only their location is kept.
    memory_budget_bytes: u64,
}

impl Scan<'_> {
    /// Read every message in bag order; returns the frames (unordered), fills `channels`, the module
    /// `outputs` (digest, log time) and, when the bag has events topics, the unmodified nodes' event `logs`.
    fn messages(
        &self,
        reader: &BagReader,
        channels: &mut BTreeMap<String, Channel>,
        outputs: &mut BTreeMap<String, Vec<(u64, u64)>>,
        logs: &mut Option<NodeEventLogReader>,
    ) -> Result<Vec<Frame>> {
        let mut held_bytes = 0u64;
        let mut frames = Vec::new();
        let mut index_by_topic: BTreeMap<String, usize> = BTreeMap::new();
        for message in reader.located_messages(ReadOptions::default(), Payload::Read) {
            let message = message?;
            let data = message.data.unwrap_or_default();
            let topic: &str = &message.topic;
            let index = index_by_topic.entry(topic.to_owned()).or_insert(0);
            let what = format!("{topic} message {index}");
            *index += 1;
            if topic.ends_with(HEADER_SUFFIX) {
                let Some(schema) = self.header_schema else {
                    continue;
                };
                let value = schema.decode(&data).map_err(|e| LockstepError::Header {
                    what: what.clone(),
                    reason: e.to_string(),
                })?;
                let header = header_from_value(&value, &what)?;
                if self.modules.contains_key(header.module_name.as_str()) {
                    frames.push(Frame {
                        header,
                        header_log_time_ns: message.log_time_ns,
                        events: None,
                    });
                }
            } else if let Some(channel) = channels.get_mut(topic) {
                if let Some(logs) = logs.as_mut() {
                    logs.add(topic, &data);
                }
                let canonical = channel.schema.as_ref().and_then(|s| s.canonical(&data).ok());
                let d = digest(canonical.as_deref().unwrap_or(&data));
                channel.count += 1;
                channel.by_time.push((message.log_time_ns, d));
                if let Some(list) = outputs.get_mut(topic) {
                    list.push((d, message.log_time_ns));
                }
                channel.by_digest.entry(d).or_insert_with(|| {
                    let size = data.len() as u64;
                    let hold = held_bytes.saturating_add(size) <= self.memory_budget_bytes;
                    held_bytes += if hold { size } else { 0 };
                    RecordedMessage {
                        log_time_ns: message.log_time_ns,
                        location: message.location,
                        data: hold.then_some(data),
                    }
                });
            }
        }
        Ok(frames)
    }
}
