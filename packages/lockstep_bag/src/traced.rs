//! The nodes traced by interception (`lockstep trace`): what the rcl interceptor's event batches in a bag
//! (`lockstep_interfaces/msg/NodeEvents` on `/lockstep/events/<node>`) say about each node: its events by
//! kind, the events lost between batches or logged before the recording started, and its warnings.
//!
//! The batches are decoded with the message definition the bag stores (no ROS needed) and only those topics
//! are read, one chunk at a time: a bag of any size is summed up in bounded memory. [`node_event_logs`]
//! decodes every event in full, in log order, with the same decoder (what a lock-step replay of an
//! unmodified node reproduces).

use crate::{BagReader, BagTopic, ReadOptions};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{self, Write};

mod logs;

use logs::is_events_topic;
pub use logs::{
    events_topic_module, kind, node_event_logs, EventBatch, EventsDecoder, LoggedEvent, NodeEvent,
    NodeEventLog, NodeEventLogReader, EVENTS_TOPIC_PREFIX, NODE_EVENTS_TYPE,
};

/// The event kinds (`NodeEvent.kind` 0 to 7, TAKE to CLOCK) as `bag info` names them.
pub const EVENT_KINDS: [&str; 8] = [
    "taken",
    "published",
    "timers",
    "requests taken",
    "responses sent",
    "requests sent",
    "responses taken",
    "clock reads",
];

/// What the batches of one node's events topic say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TracedNode {
    /// The fully qualified node name (`/robot1/filter`), from the topic (the topic's own name when it does
    /// not start with [`EVENTS_TOPIC_PREFIX`]).
    pub node: String,
    /// The events topic.
    pub topic: String,
    /// Batches decoded.
    pub batches: u64,
    /// Events by kind, in the order of [`EVENT_KINDS`].
    pub events: [u64; 8],
    /// Events of a kind not in [`EVENT_KINDS`] (an interceptor newer than this reader).
    pub other_kinds: u64,
    /// Events lost while recording: gaps in `first_index` between consecutive batches (and the start of the
    /// log of a process that began after the first one seen).
    pub lost: u64,
    /// The gaps those lost events fell into.
    pub gaps: u64,
    /// Events the node logged before its first recorded batch (that batch's `first_index`): before the
    /// recording started, or before the recorder subscribed.
    pub before_recording: u64,
    /// Times a new interceptor epoch appeared after the first (the node's process started again).
    pub restarts: u64,
    /// Batches that start before the end of one already seen (repeated or out of order).
    pub out_of_order_batches: u64,
    /// The union of the batches' warnings, sorted.
    pub warnings: BTreeSet<String>,
    /// Messages on the topic that do not decode as NodeEvents.
    pub undecodable: u64,
    /// Why: the first decoding error, or why the whole topic cannot be decoded.
    pub undecodable_reason: Option<String>,
}

impl TracedNode {
    /// All events of the node's recorded batches.
    pub fn total_events(&self) -> u64 {
        self.events.iter().sum::<u64>() + self.other_kinds
    }
}

/// The traced nodes of a bag, sorted by node name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TracedNodes {
    /// One entry per events topic, sorted by node name.
    pub nodes: Vec<TracedNode>,
    /// Reading stopped at this error (a damaged file): the counts are those of the batches read before it.
    pub read_error: Option<String>,
}

/// One batch as the summary counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Batch {
    epoch: u64,
    first_index: u64,
    kinds: Vec<u64>,
    warnings: Vec<String>,
}

/// One events topic while its batches are read.
struct Tally {
    node: TracedNode,
    decoder: Option<EventsDecoder>,
    /// Per interceptor epoch, the index after the last event seen.
    next_index: HashMap<u64, u64>,
}

/// Reads the event batches of every events topic of `reader` (nothing is read when there is none).
pub fn traced_nodes(reader: &BagReader) -> TracedNodes {
    let mut tallies: BTreeMap<String, Tally> = reader
        .topics()
        .iter()
        .filter(|t| is_events_topic(t))
        .map(|t| (t.metadata.name.clone(), Tally::new(t)))
        .collect();
    let wanted: Vec<String> = (tallies.iter())
        .filter(|(_, t)| t.decoder.is_some())
        .map(|(name, _)| name.clone())
        .collect();
    let mut read_error = None;
    if !wanted.is_empty() {
        for message in reader.messages_with(ReadOptions::topics(wanted)) {
            match message {
                Ok(m) => {
                    if let Some(tally) = tallies.get_mut(&*m.topic) {
                        tally.read(&m.data);
                    }
                }
                Err(e) => {
                    read_error = Some(crate::error_chain(&e));
                    break;
                }
            }
        }
    }
    let mut nodes: Vec<TracedNode> = tallies.into_values().map(|t| t.node).collect();
    nodes.sort_by(|a, b| (&a.node, &a.topic).cmp(&(&b.node, &b.topic)));
    TracedNodes { nodes, read_error }
}

impl Tally {
    /// A topic's tally, with the decoder its stored definition gives; without one, every message of the
    /// topic counts as undecodable and none is read.
    fn new(topic: &BagTopic) -> Self {
        let name = &topic.metadata.name;
        let mut node = TracedNode {
            node: name
                .strip_prefix(EVENTS_TOPIC_PREFIX)
                .map_or_else(|| name.clone(), |n| format!("/{n}")),
            topic: name.clone(),
            ..TracedNode::default()
        };
        let decoder = match EventsDecoder::for_topic(topic) {
            Ok(d) => Some(d),
            Err(reason) => {
                node.undecodable = topic.message_count;
                node.undecodable_reason = Some(reason);
                None
            }
        };
        Tally {
            node,
            decoder,
            next_index: HashMap::new(),
        }
    }

    /// Decodes one message and adds its batch, or counts it as undecodable.
    fn read(&mut self, data: &[u8]) {
        let Some(decoder) = &self.decoder else {
            return;
        };
        match decoder.decode(data) {
            Ok(b) => self.add(Batch {
                epoch: b.epoch,
                first_index: b.first_index,
                kinds: b.events.iter().map(|e| u64::from(e.kind)).collect(),
                warnings: b.warnings,
            }),
            Err(e) => {
                self.node.undecodable += 1;
                self.node
                    .undecodable_reason
                    .get_or_insert_with(|| format!("first: {e}"));
            }
        }
    }

    /// Adds a batch: its events by kind, its warnings, and the events missing before it.
    fn add(&mut self, b: Batch) {
        let node = &mut self.node;
        node.batches += 1;
        for kind in &b.kinds {
            match usize::try_from(*kind).ok().and_then(|k| node.events.get_mut(k)) {
                Some(count) => *count += 1,
                None => node.other_kinds += 1,
            }
        }
        node.warnings.extend(b.warnings);
        let end = b.first_index.saturating_add(b.kinds.len() as u64);
        let first_log = self.next_index.is_empty();
        match self.next_index.get_mut(&b.epoch) {
            Some(next) => {
                if b.first_index >= *next {
                    let gap = b.first_index - *next;
                    node.lost += gap;
                    node.gaps += u64::from(gap > 0);
                } else {
                    node.out_of_order_batches += 1;
                }
                *next = (*next).max(end);
            }
            None => {
                if first_log {
                    node.before_recording = b.first_index;
                } else {
                    // A process started while recording: its log from index 0 should all be here.
                    node.restarts += 1;
                    node.lost += b.first_index;
                    node.gaps += u64::from(b.first_index > 0);
                }
                self.next_index.insert(b.epoch, end);
            }
        }
    }
}

/// `1 event`, `2 events`.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl TracedNodes {
    /// The `bag info` section, indented two spaces: nothing when the bag has no events topic.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.nodes.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "  Nodes traced by interception (lockstep trace): {}",
            self.nodes.len()
        )?;
        for node in &self.nodes {
            write_node(node, out)?;
        }
        if let Some(e) = &self.read_error {
            writeln!(
                out,
                "    reading stopped early, the counts above are partial: {e}"
            )?;
        }
        Ok(())
    }
}

/// One node of the section: its totals, events by kind, losses, warnings, and any odd batch.
fn write_node(node: &TracedNode, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "    {} (topic {}): {} in {}",
        node.node,
        node.topic,
        count(node.total_events(), "event", "events"),
        count(node.batches, "batch", "batches")
    )?;
    let kinds: Vec<String> = (EVENT_KINDS.iter().zip(node.events))
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    writeln!(out, "      {}", kinds.join(", "))?;
    if node.other_kinds > 0 {
        writeln!(out, "      of an unknown kind: {}", node.other_kinds)?;
    }
    match node.lost {
        0 => writeln!(out, "      lost: none")?,
        n => writeln!(
            out,
            "      lost: {} ({} between batches)",
            count(n, "event", "events"),
            count(node.gaps, "gap", "gaps")
        )?,
    }
    match node.before_recording {
        0 => writeln!(out, "      before the recording: none")?,
        n => writeln!(
            out,
            "      before the recording: {} (the first batch recorded starts at index {n})",
            count(n, "event", "events")
        )?,
    }
    if node.restarts > 0 {
        writeln!(
            out,
            "      process restarts (new interceptor epoch): {}",
            node.restarts
        )?;
    }
    if node.out_of_order_batches > 0 {
        let n = count(node.out_of_order_batches, "batch", "batches");
        writeln!(out, "      repeated or out of order: {n}")?;
    }
    if node.undecodable > 0 {
        writeln!(
            out,
            "      undecodable: {} on {} ({})",
            count(node.undecodable, "message", "messages"),
            node.topic,
            node.undecodable_reason.as_deref().unwrap_or("?")
        )?;
    }
    if node.warnings.is_empty() {
        writeln!(out, "      warnings: none")?;
    } else {
        writeln!(out, "      warnings:")?;
        for w in &node.warnings {
            writeln!(out, "        {}", one_line(w))?;
        }
    }
    Ok(())
}

/// `s` on one line: control characters (a newline inside a warning) written as escapes.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(epoch: u64, first_index: u64, kinds: &[u64]) -> Batch {
        Batch {
            epoch,
            first_index,
            kinds: kinds.to_vec(),
            warnings: Vec::new(),
        }
    }

    fn tally() -> Tally {
        Tally {
            node: TracedNode::default(),
            decoder: None,
            next_index: HashMap::new(),
        }
    }

    #[test]
    fn gaps_restarts_and_repeats_are_told_apart() {
        let mut t = tally();
        t.add(batch(7, 5, &[0, 1])); // 5 events before the recording
        t.add(batch(7, 7, &[2])); // no gap
        t.add(batch(7, 10, &[3, 4, 7, 9])); // 2 lost; kind 9 unknown
        t.add(batch(7, 11, &[5])); // repeats index 11
        t.add(batch(8, 2, &[6])); // a new process: its first 2 events lost while recording
        t.add(batch(8, 3, &[])); // an empty batch right after
        let n = &t.node;
        assert_eq!(n.events, [1, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(n.other_kinds, 1);
        assert_eq!((n.before_recording, n.lost, n.gaps), (5, 4, 2));
        assert_eq!((n.restarts, n.out_of_order_batches, n.batches), (1, 1, 6));
        assert_eq!(n.total_events(), 9);
    }

    #[test]
    fn counts_read_well() {
        assert_eq!(count(1, "batch", "batches"), "1 batch");
        assert_eq!(count(0, "gap", "gaps"), "0 gaps");
    }
}
