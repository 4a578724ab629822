//! A recorded run, indexed for lock-step replay: the module topology the recorder stored, every frame (one
//! dependency header of a module of that topology), and each channel's recorded data by payload digest
//! (a channel data map: a header names its inputs by channel and digest, so the data is found exactly,
//! also for untraced publishers).

use std::collections::BTreeMap;

use lockstep_bag::cdr::Schema;
use lockstep_bag::{BagReader, MessageDefinition};
use lockstep_trace::{digest, Component, Topology, TopologyBuilder, TraceHeader};

use super::header::header_from_value;
use super::{LockstepError, Result};

/// Suffix of the sidecar topic holding a channel's dependency headers.
pub const HEADER_SUFFIX: &str = "/lockstep_header";

/// The MCAP metadata record holding the module topology when the recorder closed the bag (one entry per
/// module: `reads=a,b;writes=c`).
pub const TOPOLOGY_RECORD: &str = "lockstep_topology";

/// The same, written by the recorder whenever the topology grew during the recording.
pub const TOPOLOGY_UPDATE_RECORD: &str = "lockstep_topology_update";

/// One recorded data message.
#[derive(Debug, Clone)]
pub struct RecordedMessage {
    /// Its log time in the bag.
    pub log_time_ns: u64,
    /// Its bytes as recorded.
    pub data: Vec<u8>,
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
    /// The QoS profiles its publishers offered when recorded (rosbag2 metadata).
    pub offered_qos: Vec<lockstep_bag::QosProfile>,
}

/// One recorded computation: a module's output header.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The header as recorded.
    pub header: TraceHeader,
    /// When the recorder logged the header.
    pub header_log_time_ns: u64,
}

impl Frame {
    /// (channel, epoch, sequence): what names this output everywhere.
    pub fn id(&self) -> (String, u64, u32) {
        (
            self.header.channel_name.clone(),
            self.header.epoch,
            self.header.sequence_num,
        )
    }
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
    /// Every frame of a module of the topology, in replay order: recorded start time, then the module's
    /// topological rank, then channel, epoch and sequence number.
    pub frames: Vec<Frame>,
    /// Data channels (header sidecars excluded), by name.
    pub channels: BTreeMap<String, Channel>,
    /// Type and definition of the header sidecar topics, if any.
    pub header_type: Option<(String, MessageDefinition, Schema)>,
    /// Recorded outputs of the topology's modules that have no header in the bag, in log order.
    pub headerless: Vec<Headerless>,
}

/// `reads=a,b;writes=c` (the recorder's `lockstep_topology` record entry) as a component of `module`.
fn component(module: &str, wiring: &str) -> Component {
    let part = |key: &str| -> Vec<String> {
        wiring
            .split(';')
            .find_map(|p| p.strip_prefix(key))
            .map(|list| {
                list.split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    Component::new(module, part("reads="), part("writes="))
}

impl Recording {
    /// Indexes the bag `reader`. Fails when the bag holds no module topology, when it is not a DAG (naming
    /// the cycle), or when a header cannot be read (naming topic and index).
    pub fn load(reader: &BagReader) -> Result<Self> {
        let records = reader.metadata_records()?;
        // The recorder stores the topology learnt so far whenever it grows (`lockstep_topology_update`)
        // and in full when it closes the bag (`lockstep_topology`); a recording cut short and repaired
        // holds only the former. Their union is the topology: each record only ever adds wiring.
        let mut stored = records
            .iter()
            .filter(|r| r.name == TOPOLOGY_RECORD || r.name == TOPOLOGY_UPDATE_RECORD)
            .peekable();
        if stored.peek().is_none() {
            return Err(LockstepError::NoTopology);
        }
        let mut builder = TopologyBuilder::new();
        for (module, wiring) in stored.flat_map(|r| &r.entries) {
            builder
                .add_component(&component(module, wiring))
                .map_err(LockstepError::Topology)?;
        }
        let topology = builder.build().map_err(LockstepError::Topology)?;

        let mut channels = BTreeMap::new();
        let mut header_type = None;
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
                    offered_qos: t.metadata.offered_qos_profiles.clone(),
                },
            );
        }

        let modules: BTreeMap<String, usize> = topology
            .module_order()
            .into_iter()
            .enumerate()
            .map(|(rank, m)| (m, rank))
            .collect();
        let mut frames = Vec::new();
        // Each module output's (digest, log time), to find the ones no header names.
        let mut outputs: BTreeMap<String, Vec<(u64, u64)>> = topology
            .components
            .iter()
            .flat_map(|c| c.writer_channels.iter().cloned())
            .map(|channel| (channel, Vec::new()))
            .collect();
        let mut index_by_topic: BTreeMap<String, usize> = BTreeMap::new();
        for message in reader.messages() {
            let message = message?;
            let topic: &str = &message.topic;
            let index = index_by_topic.entry(topic.to_owned()).or_insert(0);
            let what = format!("{topic} message {index}");
            *index += 1;
            if topic.ends_with(HEADER_SUFFIX) {
                let Some((_, _, schema)) = &header_type else {
                    continue;
                };
                let value = schema.decode(&message.data).map_err(|e| LockstepError::Header {
                    what: what.clone(),
                    reason: e.to_string(),
                })?;
                let header = header_from_value(&value, &what)?;
                if modules.contains_key(header.module_name.as_str()) {
                    frames.push(Frame {
                        header,
                        header_log_time_ns: message.log_time_ns,
                    });
                }
            } else if let Some(channel) = channels.get_mut(topic) {
                let canonical = channel
                    .schema
                    .as_ref()
                    .and_then(|s| s.canonical(&message.data).ok());
                let d = digest(canonical.as_deref().unwrap_or(&message.data));
                channel.count += 1;
                if let Some(list) = outputs.get_mut(topic) {
                    list.push((d, message.log_time_ns));
                }
                channel.by_digest.entry(d).or_insert(RecordedMessage {
                    log_time_ns: message.log_time_ns,
                    data: message.data,
                });
            }
        }
        let headerless = headerless(&topology, &frames, outputs);
        let rank = |f: &Frame| {
            modules
                .get(f.header.module_name.as_str())
                .copied()
                .unwrap_or(usize::MAX)
        };
        frames.sort_by(|a, b| {
            (a.header.start_time_ns, rank(a), a.id()).cmp(&(b.header.start_time_ns, rank(b), b.id()))
        });
        Ok(Self {
            topology,
            frames,
            channels,
            header_type,
            headerless,
        })
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
