//! A node's event log: what it took, published, fired and served, in order, sent in batches.

use std::collections::BTreeSet;

/// What happened (the `kind` constants of `lockstep_interfaces/msg/NodeEvent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventKind {
    /// A message taken from a subscription.
    Take = 0,
    /// A message published.
    Publish = 1,
    /// A timer's callback called.
    Timer = 2,
    /// A service request taken by a server.
    RequestTaken = 3,
    /// A service response sent by a server.
    ResponseSent = 4,
    /// A service request sent by a client.
    RequestSent = 5,
    /// A service response taken by a client.
    ResponseTaken = 6,
    /// A ROS time a callback read from a clock (the time in the event's stamp).
    Clock = 7,
}

impl EventKind {
    /// Every kind, in the order of their codes.
    pub const ALL: [EventKind; 8] = [
        EventKind::Take,
        EventKind::Publish,
        EventKind::Timer,
        EventKind::RequestTaken,
        EventKind::ResponseSent,
        EventKind::RequestSent,
        EventKind::ResponseTaken,
        EventKind::Clock,
    ];

    /// The message's code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// One event (`lockstep_interfaces/msg/NodeEvent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    /// The node's ROS time, nanoseconds.
    pub ros_time_ns: i64,
    /// The Linux thread id.
    pub thread: u32,
    /// The topic or service, fully qualified; empty for a timer.
    pub name: String,
    /// Infrastructure (never a data input).
    pub infrastructure: bool,
    /// The publisher's (take) or client's (request taken) GID; empty otherwise.
    pub gid: Vec<u8>,
    /// See `NodeEvent.sequence_number`.
    pub sequence_number: i64,
    /// The payload's digest, 0 when unknown.
    pub payload_digest: u64,
}

/// A batch of one node's events (`lockstep_interfaces/msg/NodeEvents`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub node_name: String,
    pub epoch: u64,
    /// The index of the first event in the node's log.
    pub first_index: u64,
    pub events: Vec<Event>,
    /// Every limit detected so far for the node, sorted.
    pub warnings: Vec<String>,
}

/// How many events one batch holds at most (a batch is one DDS message).
pub const MAX_BATCH_EVENTS: usize = 512;
/// How many events a node keeps while they cannot be sent; older ones are dropped (a gap in the indexes).
pub const MAX_QUEUED_EVENTS: usize = 65_536;

/// One node's log: events not yet sent, the index of the next one, and the warnings detected.
#[derive(Debug, Default)]
pub struct EventLog {
    queued: std::collections::VecDeque<Event>,
    /// Index of the first queued event.
    first_index: u64,
    warnings: BTreeSet<String>,
    /// Warnings not yet said on stderr.
    unsaid: Vec<String>,
}

impl EventLog {
    /// Append an event (the oldest queued one is dropped when too many wait).
    pub fn push(&mut self, event: Event) {
        if self.queued.len() >= MAX_QUEUED_EVENTS {
            self.queued.pop_front();
            self.first_index += 1;
        }
        self.queued.push_back(event);
    }

    /// Note a limit detected for this node (said once).
    pub fn warn(&mut self, warning: String) {
        if self.warnings.insert(warning.clone()) {
            self.unsaid.push(warning);
        }
    }

    /// Warnings detected since the last call.
    pub fn take_unsaid(&mut self) -> Vec<String> {
        std::mem::take(&mut self.unsaid)
    }

    /// Every warning so far, sorted.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.iter().cloned().collect()
    }

    /// Events waiting to be sent.
    pub fn queued(&self) -> usize {
        self.queued.len()
    }

    /// The next batch to send (at most [`MAX_BATCH_EVENTS`] events), `None` when nothing waits.
    pub fn next_batch(&mut self, node_name: &str, epoch: u64) -> Option<Batch> {
        if self.queued.is_empty() {
            return None;
        }
        let count = self.queued.len().min(MAX_BATCH_EVENTS);
        let first_index = self.first_index;
        self.first_index += count as u64;
        Some(Batch {
            node_name: node_name.to_owned(),
            epoch,
            first_index,
            events: self.queued.drain(..count).collect(),
            warnings: self.warnings(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: i64) -> Event {
        Event {
            kind: EventKind::Take,
            ros_time_ns: n,
            thread: 1,
            name: "/a".into(),
            infrastructure: false,
            gid: vec![],
            sequence_number: n,
            payload_digest: 0,
        }
    }

    #[test]
    fn batches_are_numbered_without_gaps_and_carry_the_warnings() {
        let mut log = EventLog::default();
        for n in 0..(MAX_BATCH_EVENTS as i64 + 3) {
            log.push(event(n));
        }
        log.warn("w".into());
        log.warn("w".into());
        assert_eq!(log.take_unsaid(), vec!["w".to_owned()]);
        let first = log.next_batch("n", 7).expect("a batch");
        assert_eq!((first.first_index, first.events.len()), (0, MAX_BATCH_EVENTS));
        let second = log.next_batch("n", 7).expect("the rest");
        assert_eq!(
            (second.first_index, second.events.len()),
            (MAX_BATCH_EVENTS as u64, 3)
        );
        assert_eq!(second.warnings, vec!["w".to_owned()]);
        assert!(log.next_batch("n", 7).is_none());
    }

    #[test]
    fn an_overfull_log_drops_its_oldest_events_and_says_so_by_index() {
        let mut log = EventLog::default();
        for n in 0..(MAX_QUEUED_EVENTS as i64 + 2) {
            log.push(event(n));
        }
        let batch = log.next_batch("n", 1).expect("a batch");
        assert_eq!(batch.first_index, 2);
        assert_eq!(batch.events[0].sequence_number, 2);
    }
}
