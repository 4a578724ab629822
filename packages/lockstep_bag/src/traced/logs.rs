//! Every event of the nodes traced by interception, decoded in full and put in log order: what a lock-step
//! replay of an unmodified node reproduces (the messages it took, the timers that fired, the outputs each
//! callback published).
//!
//! [`EventsDecoder`] decodes one `lockstep_interfaces/msg/NodeEvents` batch with the definition the bag
//! stores for its topic (the same decoder `bag info` sums the batches up with). [`NodeEventLogReader`]
//! collects the batches of a bag's events topics while the bag is read for other reasons too;
//! [`node_event_logs`] reads only those topics. A batch that does not decode (a damaged message, a definition
//! of another shape) is skipped and counted, never a panic: every length in a batch is checked against the
//! bytes left before anything is allocated for it.

use std::collections::{BTreeMap, BTreeSet};

use crate::cdr::{Schema, Value};
use crate::{BagReader, BagTopic, ReadOptions};

/// The prefix of the topics the interceptor publishes each node's events on (`/lockstep/events/robot1/filter`).
pub const EVENTS_TOPIC_PREFIX: &str = "/lockstep/events/";

/// The message type of the interceptor's event batches.
pub const NODE_EVENTS_TYPE: &str = "lockstep_interfaces/msg/NodeEvents";

/// Whether `topic` carries the interceptor's event batches.
pub(super) fn is_events_topic(topic: &BagTopic) -> bool {
    let type_name = topic.metadata.type_name.as_str();
    type_name == NODE_EVENTS_TYPE || type_name == "lockstep_interfaces/NodeEvents"
}

/// The `kind` codes of `lockstep_interfaces/msg/NodeEvent`.
pub mod kind {
    /// A message taken from a subscription.
    pub const TAKE: u8 = 0;
    /// A message published.
    pub const PUBLISH: u8 = 1;
    /// A timer's callback called.
    pub const TIMER: u8 = 2;
    /// A service request taken by a server.
    pub const REQUEST_TAKEN: u8 = 3;
    /// A service response sent by a server.
    pub const RESPONSE_SENT: u8 = 4;
    /// A service request sent by a client.
    pub const REQUEST_SENT: u8 = 5;
    /// A service response taken by a client.
    pub const RESPONSE_TAKEN: u8 = 6;
    /// A ROS time a callback read from a clock (the time read is the event's stamp).
    pub const CLOCK: u8 = 7;
}

/// One event as the interceptor logged it (`lockstep_interfaces/msg/NodeEvent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEvent {
    /// What happened ([`kind`]; a kind this reader does not know is kept as logged, up to 255).
    pub kind: u8,
    /// The node's ROS time when it happened, nanoseconds (CLOCK: the time read).
    pub ros_time_ns: i64,
    /// The Linux thread id it happened on.
    pub thread: u32,
    /// The topic or service, fully qualified; empty for a timer.
    pub name: String,
    /// Infrastructure (`/rosout`, `/parameter_events`, `/clock`, parameter services): never a data input.
    pub infrastructure: bool,
    /// TAKE: the publisher's GID; REQUEST_TAKEN: the client's GID; otherwise empty.
    pub gid: Vec<u8>,
    /// TAKE: the publisher's publication sequence number; PUBLISH: the node's sequence number of that output
    /// (the `sequence_num` of its dependency header); TIMER: the timer's number in the process; services:
    /// the request's sequence number.
    pub sequence_number: i64,
    /// The digest of the payload's canonical CDR (as `DependencyHeader.payload_digest`); 0 when unknown.
    pub payload_digest: u64,
}

/// One decoded batch (`lockstep_interfaces/msg/NodeEvents`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventBatch {
    /// The node's name as the interceptor wrote it.
    pub node_name: String,
    /// The interceptor's epoch in the node's process (the `epoch` of the node's dependency headers).
    pub epoch: u64,
    /// The index of the batch's first event in the node's log.
    pub first_index: u64,
    /// Its events, in the order they happened.
    pub events: Vec<NodeEvent>,
    /// The limits the interceptor had detected for the node so far.
    pub warnings: Vec<String>,
}

/// Decodes the batches of one events topic with the definition the bag stores for it.
#[derive(Debug, Clone)]
pub struct EventsDecoder {
    schema: Schema,
}

impl EventsDecoder {
    /// The decoder of `topic`'s batches, or why they cannot be decoded (no usable stored definition).
    pub fn for_topic(topic: &BagTopic) -> Result<Self, String> {
        let type_name = &topic.metadata.type_name;
        match &topic.definition {
            Some(d) if d.encoding == crate::msgdefs::ROS2MSG && !d.text.trim().is_empty() => {
                Schema::parse(type_name, &d.text)
                    .map(|schema| EventsDecoder { schema })
                    .map_err(|e| format!("its stored definition does not parse: {e}"))
            }
            Some(d) if !d.encoding.is_empty() => Err(format!(
                "its definition is stored as {}, which this reader does not decode",
                d.encoding
            )),
            _ => Err(format!("the bag stores no definition of {type_name}")),
        }
    }

    /// One batch, or why it does not decode.
    pub fn decode(&self, data: &[u8]) -> Result<EventBatch, String> {
        let value = self.schema.decode(data).map_err(|e| e.to_string())?;
        batch(&value)
    }
}

fn uint(value: &Value, name: &str) -> Result<u64, String> {
    match value.field(name) {
        Some(Value::UInt(u)) => Ok(*u),
        _ => Err(format!("no unsigned integer field `{name}`")),
    }
}

fn int(value: &Value, name: &str) -> Result<i64, String> {
    match value.field(name) {
        Some(Value::Int(i)) => Ok(*i),
        _ => Err(format!("no signed integer field `{name}`")),
    }
}

fn list<'v>(value: &'v Value, name: &str) -> Result<&'v [Value], String> {
    match value.field(name) {
        Some(Value::Array(items)) => Ok(items),
        _ => Err(format!("no array field `{name}`")),
    }
}

fn text(value: &Value, name: &str) -> Result<String, String> {
    match value.field(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(format!("no string field `{name}`")),
    }
}

/// The fields of a decoded NodeEvents message, or what is missing (a definition of another shape).
fn batch(value: &Value) -> Result<EventBatch, String> {
    let events = (list(value, "events")?.iter())
        .enumerate()
        .map(|(i, e)| event(e).map_err(|reason| format!("event {i}: {reason}")))
        .collect::<Result<Vec<NodeEvent>, String>>()?;
    let warnings = (list(value, "warnings")?.iter())
        .map(|w| match w {
            Value::String(s) => Ok(s.clone()),
            _ => Err("a warning that is not a string".to_owned()),
        })
        .collect::<Result<Vec<String>, String>>()?;
    Ok(EventBatch {
        node_name: text(value, "node_name")?,
        epoch: uint(value, "epoch")?,
        first_index: uint(value, "first_index")?,
        events,
        warnings,
    })
}

/// One decoded NodeEvent.
fn event(value: &Value) -> Result<NodeEvent, String> {
    let stamp = value
        .field("stamp")
        .ok_or_else(|| "no field `stamp`".to_owned())?;
    let ros_time_ns = int(stamp, "sec")?
        .saturating_mul(1_000_000_000)
        .saturating_add(i64::try_from(uint(stamp, "nanosec")?).unwrap_or(i64::MAX));
    let gid = match value.field("gid") {
        None => Vec::new(),
        Some(Value::Array(bytes)) => (bytes.iter())
            .map(|b| match b {
                Value::UInt(b) => u8::try_from(*b).map_err(|_| format!("gid byte {b}")),
                _ => Err("a gid byte that is not an unsigned integer".to_owned()),
            })
            .collect::<Result<Vec<u8>, String>>()?,
        Some(_) => return Err("field `gid` is not an array".to_owned()),
    };
    let infrastructure = match value.field("infrastructure") {
        Some(Value::Bool(b)) => *b,
        _ => return Err("no bool field `infrastructure`".to_owned()),
    };
    Ok(NodeEvent {
        kind: u8::try_from(uint(value, "kind")?).unwrap_or(u8::MAX),
        ros_time_ns,
        thread: u32::try_from(uint(value, "thread")?).unwrap_or(u32::MAX),
        name: text(value, "name")?,
        infrastructure,
        gid,
        sequence_number: int(value, "sequence_number")?,
        payload_digest: uint(value, "payload_digest")?,
    })
}

/// One event of a node's log, with where the log puts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedEvent {
    /// The interceptor's epoch in the node's process when it was logged (a restarted process logs anew).
    pub epoch: u64,
    /// Its index in that epoch's log, from 0.
    pub index: u64,
    /// What happened.
    pub event: NodeEvent,
}

/// One node's event log as the bag holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeEventLog {
    /// The events topic.
    pub topic: String,
    /// Every event decoded, in log order: by epoch, then index; an event logged twice (a batch sent again)
    /// is kept once.
    pub events: Vec<LoggedEvent>,
    /// The union of the batches' warnings (the limits the interceptor detected while recording).
    pub warnings: BTreeSet<String>,
    /// Batches decoded.
    pub batches: u64,
    /// Events dropped because an earlier batch already held their index.
    pub duplicates: u64,
    /// Messages on the topic that do not decode as NodeEvents (skipped).
    pub undecodable: u64,
    /// Why: the first decoding error, or why the whole topic cannot be decoded.
    pub undecodable_reason: Option<String>,
}

/// The module name of an events topic: the node's fully qualified name without the leading slash
/// (`/lockstep/events/robot1/filter` is `robot1/filter`).
pub fn events_topic_module(topic: &str) -> String {
    topic
        .strip_prefix(EVENTS_TOPIC_PREFIX)
        .unwrap_or(topic)
        .trim_start_matches('/')
        .to_owned()
}

/// One events topic while its batches are read.
struct Pending {
    module: String,
    decoder: Result<EventsDecoder, String>,
    log: NodeEventLog,
}

/// Collects the event logs of a bag's events topics from messages read in any order.
#[derive(Default)]
pub struct NodeEventLogReader {
    /// By events topic.
    topics: BTreeMap<String, Pending>,
}

impl std::fmt::Debug for NodeEventLogReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.topics.keys()).finish()
    }
}

impl NodeEventLogReader {
    /// A reader of the events topics among `topics` (the bag's topics; the others are ignored).
    pub fn new(topics: &[BagTopic]) -> Self {
        let topics = (topics.iter())
            .filter(|t| is_events_topic(t))
            .map(|t| {
                let name = t.metadata.name.clone();
                let pending = Pending {
                    module: events_topic_module(&name),
                    decoder: EventsDecoder::for_topic(t),
                    log: NodeEventLog {
                        topic: name.clone(),
                        ..NodeEventLog::default()
                    },
                };
                (name, pending)
            })
            .collect();
        NodeEventLogReader { topics }
    }

    /// Whether the bag has no events topic (then nothing needs to be read).
    pub fn is_empty(&self) -> bool {
        self.topics.is_empty()
    }

    /// The events topics.
    pub fn topics(&self) -> impl Iterator<Item = &str> {
        self.topics.keys().map(String::as_str)
    }

    /// Whether `topic` is one of the events topics.
    pub fn wants(&self, topic: &str) -> bool {
        self.topics.contains_key(topic)
    }

    /// Adds one message of `topic` (ignored when it is not an events topic): its batch, or one more
    /// undecodable message.
    pub fn add(&mut self, topic: &str, data: &[u8]) {
        let Some(p) = self.topics.get_mut(topic) else {
            return;
        };
        let decoded = match &p.decoder {
            Ok(d) => d.decode(data).map_err(|e| format!("first: {e}")),
            Err(reason) => Err(reason.clone()),
        };
        match decoded {
            Ok(b) => {
                p.log.batches += 1;
                p.log.warnings.extend(b.warnings);
                let epoch = b.epoch;
                p.log
                    .events
                    .extend(b.events.into_iter().enumerate().map(|(k, event)| LoggedEvent {
                        epoch,
                        index: b.first_index.saturating_add(k as u64),
                        event,
                    }));
            }
            Err(reason) => {
                p.log.undecodable += 1;
                p.log.undecodable_reason.get_or_insert(reason);
            }
        }
    }

    /// Each node's log, by module name (the node's name without the leading slash), events in log order.
    pub fn finish(self) -> BTreeMap<String, NodeEventLog> {
        let mut out: BTreeMap<String, NodeEventLog> = BTreeMap::new();
        for Pending { module, log, .. } in self.topics.into_values() {
            match out.entry(module) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(log);
                }
                // Two topics of one node (`/lockstep/events/filter` and a remapped copy): one log.
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    let merged = o.get_mut();
                    merged.events.extend(log.events);
                    merged.warnings.extend(log.warnings);
                    merged.batches += log.batches;
                    merged.undecodable += log.undecodable;
                    if merged.undecodable_reason.is_none() {
                        merged.undecodable_reason = log.undecodable_reason;
                    }
                }
            }
        }
        for log in out.values_mut() {
            // Stable: of two events with one index, the one read first stays.
            log.events.sort_by_key(|e| (e.epoch, e.index));
            let before = log.events.len();
            log.events.dedup_by_key(|e| (e.epoch, e.index));
            log.duplicates += (before - log.events.len()) as u64;
        }
        out
    }
}

/// Every event of every events topic of `reader`, decoded, by module name (the node's name without the
/// leading slash), in log order. Only those topics are read, and nothing when the bag has none. Fails only
/// when the bag cannot be read; a batch that does not decode is skipped and counted in its log.
pub fn node_event_logs(reader: &BagReader) -> crate::Result<BTreeMap<String, NodeEventLog>> {
    let mut logs = NodeEventLogReader::new(reader.topics());
    if logs.is_empty() {
        return Ok(BTreeMap::new());
    }
    let topics: Vec<String> = logs.topics().map(str::to_owned).collect();
    for message in reader.messages_with(ReadOptions::topics(topics)) {
        let m = message?;
        logs.add(&m.topic, &m.data);
    }
    Ok(logs.finish())
}
