//! The plain-Rust model of dependency headers and module topology, independent of ROS and protobuf types.

use std::collections::{BTreeMap, BTreeSet};

/// Module name used for an input that came from outside any traced module (a sensor driver, a simulator,
/// rclpy): its header is synthesized by the receiver, so nobody is known to have produced it. Topology
/// learning treats channels written only by this "module" as external inputs (collected data).
pub const EXTERNAL_MODULE: &str = "";

/// A second-level dependency (protobuf `end2endsource`): which output of which module an input was
/// computed from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SourceRef {
    /// Module that produced it ([`EXTERNAL_MODULE`] if untraced).
    pub module_name: String,
    /// Channel (fully qualified topic) it was written to.
    pub channel_name: String,
    /// Its sequence number on that channel.
    pub sequence_num: u32,
    /// Its producer's epoch ([`TraceHeader::epoch`]; 0 if untraced).
    pub epoch: u64,
    /// Its payload digest ([`TraceHeader::payload_digest`]).
    pub payload_digest: u64,
}

/// A first-level dependency (protobuf `end2endheader`): the header of one input a module consumed, with
/// that input's own inputs as [`SourceRef`]s.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct InputRecord {
    /// Module that produced the input.
    pub module_name: String,
    /// Channel the input was read from.
    pub channel_name: String,
    /// The input's sequence number on that channel (for an untraced publisher: the receiving module's
    /// arrival count, which is why `payload_digest` is the exact identity).
    pub sequence_num: u32,
    /// Its producer's epoch ([`TraceHeader::epoch`]; 0 if untraced).
    pub epoch: u64,
    /// Its payload digest: with the channel, finds the recorded message whoever produced it.
    pub payload_digest: u64,
    /// When its producer started computing it, nanoseconds since the Unix epoch (ROS time).
    pub start_time_ns: i64,
    /// How long its producer took to compute it, nanoseconds.
    pub process_time_ns: u32,
    /// The inputs the input was computed from (second level of the backtrace).
    pub sources: Vec<SourceRef>,
}

impl InputRecord {
    /// This input seen as a second-level source: which output of which module it was.
    pub fn as_source(&self) -> SourceRef {
        SourceRef {
            module_name: self.module_name.clone(),
            channel_name: self.channel_name.clone(),
            sequence_num: self.sequence_num,
            epoch: self.epoch,
            payload_digest: self.payload_digest,
        }
    }
}

/// The dependency header of one output message (protobuf `header`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TraceHeader {
    /// Module that produced the message.
    pub module_name: String,
    /// Channel (fully qualified topic) the message was published on.
    pub channel_name: String,
    /// Per-channel output number, from 0.
    pub sequence_num: u32,
    /// The producing process's epoch ([`crate::Tracer::epoch`]): (module, channel, epoch, sequence) is unique
    /// across restarts. 0 for an untraced publisher.
    pub epoch: u64,
    /// When the module started computing the message, nanoseconds since the Unix epoch (ROS time).
    pub start_time_ns: i64,
    /// How long the computation took, nanoseconds (saturates at `u32::MAX`, about 4.29 s, as the schema's
    /// `uint32 process_time` must).
    pub process_time_ns: u32,
    /// [`crate::digest`] of the message's canonical CDR bytes (padding zeroed), to pair header and data.
    pub payload_digest: u64,
    /// The headers of the inputs used (first level), each with its own inputs (second level).
    pub inputs: Vec<InputRecord>,
}

impl TraceHeader {
    /// This header seen as a second-level source of someone else's output.
    pub fn as_source(&self) -> SourceRef {
        SourceRef {
            module_name: self.module_name.clone(),
            channel_name: self.channel_name.clone(),
            sequence_num: self.sequence_num,
            epoch: self.epoch,
            payload_digest: self.payload_digest,
        }
    }

    /// This header seen as a first-level input of someone else's output: its own inputs become the sources,
    /// which is where the backtrace stops (two levels, as in the schema).
    pub fn as_input(&self) -> InputRecord {
        InputRecord {
            module_name: self.module_name.clone(),
            channel_name: self.channel_name.clone(),
            sequence_num: self.sequence_num,
            epoch: self.epoch,
            payload_digest: self.payload_digest,
            start_time_ns: self.start_time_ns,
            process_time_ns: self.process_time_ns,
            sources: self.inputs.iter().map(InputRecord::as_source).collect(),
        }
    }

    /// The header a receiver synthesizes for a message from an untraced publisher: module
    /// [`EXTERNAL_MODULE`], the receiver's own count of messages on that channel as sequence number.
    pub fn external(channel_name: &str, sequence_num: u32, received_ns: i64, payload_digest: u64) -> Self {
        Self {
            module_name: EXTERNAL_MODULE.to_owned(),
            channel_name: channel_name.to_owned(),
            sequence_num,
            epoch: 0,
            start_time_ns: received_ns,
            process_time_ns: 0,
            payload_digest,
            inputs: Vec::new(),
        }
    }

    /// Whether this header was synthesized for an untraced publisher.
    pub fn is_external(&self) -> bool {
        self.module_name == EXTERNAL_MODULE
    }

    /// The input read from `channel`, if this output used one.
    pub fn input(&self, channel: &str) -> Option<&InputRecord> {
        self.inputs.iter().find(|input| input.channel_name == channel)
    }
}

/// One module's wiring (protobuf `compontconfig`), channels sorted and unique.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Component {
    /// The module (node) name.
    pub module_name: String,
    /// Channels it reads.
    pub reader_channels: BTreeSet<String>,
    /// Channels it writes.
    pub writer_channels: BTreeSet<String>,
}

impl Component {
    /// A component from channel lists in any order.
    pub fn new<R, W>(module_name: &str, readers: R, writers: W) -> Self
    where
        R: IntoIterator,
        R::Item: Into<String>,
        W: IntoIterator,
        W::Item: Into<String>,
    {
        Self {
            module_name: module_name.to_owned(),
            reader_channels: readers.into_iter().map(Into::into).collect(),
            writer_channels: writers.into_iter().map(Into::into).collect(),
        }
    }
}

/// The wiring of a whole module set, sorted by module name; built by [`crate::TopologyBuilder`], which
/// guarantees it is acyclic.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Topology {
    /// One entry per module, sorted by module name.
    pub components: Vec<Component>,
}

impl Topology {
    /// The component of `module`, if known.
    pub fn component(&self, module: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.module_name == module)
    }

    /// Modules in an order where every module comes after the modules whose outputs it reads (the order
    /// lock-step replay runs them in); ties broken by name so the order is deterministic.
    pub fn module_order(&self) -> Vec<String> {
        module_order(self)
    }

    /// Channels no module of this topology writes: the external inputs (sensors, odometry, ...), sorted.
    pub fn external_channels(&self) -> Vec<String> {
        let written: BTreeSet<&String> = self.components.iter().flat_map(|c| &c.writer_channels).collect();
        let read: BTreeSet<&String> = self.components.iter().flat_map(|c| &c.reader_channels).collect();
        read.into_iter()
            .filter(|c| !written.contains(c))
            .cloned()
            .collect()
    }
}

/// Module-to-module edges: (writer, reader) -> the smallest channel linking them.
pub(crate) fn module_edges(topology: &Topology) -> BTreeMap<(String, String), String> {
    let mut writers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for component in &topology.components {
        for channel in &component.writer_channels {
            writers.entry(channel).or_default().push(&component.module_name);
        }
    }
    let mut edges = BTreeMap::new();
    for reader in &topology.components {
        for channel in &reader.reader_channels {
            for writer in writers.get(channel.as_str()).into_iter().flatten() {
                edges
                    .entry(((*writer).to_owned(), reader.module_name.clone()))
                    .or_insert_with(|| channel.clone());
            }
        }
    }
    edges
}

/// Kahn's algorithm with a sorted ready set; modules left on a cycle (never for a built topology) go last,
/// sorted.
fn module_order(topology: &Topology) -> Vec<String> {
    let edges = module_edges(topology);
    let mut indegree: BTreeMap<&str, usize> = topology
        .components
        .iter()
        .map(|c| (c.module_name.as_str(), 0))
        .collect();
    for (from, to) in edges.keys() {
        if from != to {
            if let Some(d) = indegree.get_mut(to.as_str()) {
                *d += 1;
            }
        }
    }
    let mut ready: BTreeSet<&str> = indegree
        .iter()
        .filter(|(_, &d)| d == 0)
        .map(|(&m, _)| m)
        .collect();
    let mut order = Vec::new();
    while let Some(module) = ready.pop_first() {
        order.push(module.to_owned());
        for (from, to) in edges.keys() {
            if from == module && from != to {
                if let Some(d) = indegree.get_mut(to.as_str()) {
                    *d -= 1;
                    if *d == 0 {
                        ready.insert(to.as_str());
                    }
                }
            }
        }
    }
    for component in &topology.components {
        if !order.contains(&component.module_name) {
            order.push(component.module_name.clone());
        }
    }
    order
}
