//! Unmodified nodes: nodes recorded through the rcl interceptor (`lockstep trace`), whose recording holds,
//! beside their inferred dependency headers, their event log (`lockstep_interfaces/msg/NodeEvents` on
//! `/lockstep/events/<node>`: every message taken, timer fired, request taken, output published, clock read).
//!
//! Such a node cannot be told what to compute: its replay reproduces its own events. Each recorded output
//! was published by one callback (the events on one thread from a take, timer firing or request until that
//! thread's next one); the callbacks between it and the previous callback that published a replayed output
//! published nothing (messages taken into the node's state, timer firings that did nothing) and are
//! reproduced first, in their recorded order. [`attach`] gives every frame of such a node those events
//! (`Frame::events`).

use std::collections::BTreeMap;

use lockstep_intercept::cdr::decode_events;
use lockstep_intercept::events::{Event, EventKind};

use super::callback::{kind, NodeCallback};
use super::frame::Frame;

/// The prefix of the topics the interceptor publishes each node's event log on.
pub const EVENTS_TOPIC_PREFIX: &str = "/lockstep/events/";

/// The event batches of the recording's events topics, by module, as read.
#[derive(Debug, Default)]
pub(super) struct Logs {
    batches: BTreeMap<String, Vec<lockstep_intercept::events::Batch>>,
    /// Per module, the limits the interceptor detected while recording (multi-threaded executor, ...).
    pub warnings: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Batches that could not be read: (topic, reason) of the first, and how many.
    pub undecodable: Option<(String, String, u64)>,
}

impl Logs {
    /// Whether `topic` carries an event log.
    pub fn is_events_topic(topic: &str) -> bool {
        topic.starts_with(EVENTS_TOPIC_PREFIX)
    }

    /// One recorded batch of `topic`.
    pub fn add(&mut self, topic: &str, data: &[u8]) {
        let module = topic.trim_start_matches(EVENTS_TOPIC_PREFIX).to_owned();
        match decode_events(data) {
            Ok(batch) => {
                (self.warnings.entry(module.clone()).or_default()).extend(batch.warnings.iter().cloned());
                self.batches.entry(module).or_default().push(batch);
            }
            Err(e) => {
                let u = self
                    .undecodable
                    .get_or_insert_with(|| (topic.to_owned(), e.to_string(), 0));
                u.2 += 1;
            }
        }
    }

    /// The modules whose log the recording holds.
    pub fn modules(&self) -> impl Iterator<Item = &str> {
        self.batches.keys().map(String::as_str)
    }

    /// Each module's events in log order, per interceptor epoch (a process that started again logs anew):
    /// batches sorted by index, an event logged twice kept once.
    fn events(&self, module: &str) -> BTreeMap<u64, Vec<Event>> {
        let mut by_epoch: BTreeMap<u64, Vec<&lockstep_intercept::events::Batch>> = BTreeMap::new();
        for b in self.batches.get(module).into_iter().flatten() {
            by_epoch.entry(b.epoch).or_default().push(b);
        }
        by_epoch
            .into_iter()
            .map(|(epoch, mut batches)| {
                batches.sort_by_key(|b| b.first_index);
                let mut next = 0u64;
                let mut events = Vec::new();
                for b in batches {
                    for (k, e) in b.events.iter().enumerate() {
                        let index = b.first_index.saturating_add(k as u64);
                        if index >= next || events.is_empty() {
                            events.push(e.clone());
                            next = index + 1;
                        }
                    }
                }
                (epoch, events)
            })
            .collect()
    }
}

/// One callback as the log shows it: what started it, and the outputs it published (channel, sequence).
struct Callback {
    start: NodeCallback,
    outputs: Vec<(String, u32)>,
}

/// Whether a logged event starts a callback the replay reproduces.
fn starts_callback(e: &Event) -> bool {
    !e.infrastructure
        && matches!(
            e.kind,
            EventKind::Take | EventKind::Timer | EventKind::RequestTaken | EventKind::ResponseTaken
        )
}

/// A node's callbacks in log order, and the outputs published outside any (by frame id).
fn callbacks(events: &[Event], epoch: u64) -> (Vec<Callback>, Vec<(String, u64, u32)>) {
    let mut out: Vec<Callback> = Vec::new();
    let mut orphans = Vec::new();
    let mut running: BTreeMap<u32, Option<usize>> = BTreeMap::new();
    for e in events {
        if starts_callback(e) {
            running.insert(e.thread, Some(out.len()));
            out.push(Callback {
                start: NodeCallback {
                    kind: e.kind.code(),
                    name: e.name.clone(),
                    ros_time_ns: e.ros_time_ns,
                    sequence_number: e.sequence_number,
                    payload_digest: e.payload_digest,
                    clock_reads_ns: Vec::new(),
                    producer: None,
                },
                outputs: Vec::new(),
            });
            continue;
        }
        if e.infrastructure && e.kind != EventKind::Publish {
            running.insert(e.thread, None); // an infrastructure callback (parameters, /clock) runs there now
            continue;
        }
        let current = running.get(&e.thread).copied().flatten();
        match (e.kind, current) {
            (EventKind::Publish, _) if e.infrastructure => {}
            (EventKind::Publish, Some(i)) => out[i].outputs.push((
                e.name.clone(),
                u32::try_from(e.sequence_number).unwrap_or(u32::MAX),
            )),
            (EventKind::Publish, None) => orphans.push((
                e.name.clone(),
                epoch,
                u32::try_from(e.sequence_number).unwrap_or(u32::MAX),
            )),
            (EventKind::Clock, Some(i)) => out[i].start.clock_reads_ns.push(e.ros_time_ns),
            _ => {}
        }
    }
    (out, orphans)
}

/// Give every frame of a module with an event log the callbacks to reproduce for it (see the module's
/// documentation); a frame the log does not show published by a callback gets none (it is skipped, with
/// the reason, when replayed).
pub(super) fn attach(logs: &Logs, frames: &mut [Frame]) {
    // Each recorded output's frame, and per (channel, digest) the frames that output it, by header log time.
    let index: BTreeMap<(String, u64, u32), usize> =
        frames.iter().enumerate().map(|(i, f)| (f.id(), i)).collect();
    let mut by_digest: BTreeMap<(&str, u64), Vec<(u64, usize)>> = BTreeMap::new();
    for (i, f) in frames.iter().enumerate() {
        by_digest
            .entry((f.header.channel_name.as_str(), f.header.payload_digest))
            .or_default()
            .push((f.header_log_time_ns, i));
    }
    let producer = |name: &str, digest: u64, ros_time_ns: i64| {
        let list = by_digest.get(&(name, digest))?;
        let at = u64::try_from(ros_time_ns).unwrap_or(0);
        let &(_, i) = (list.iter().rev().find(|&&(t, _)| t <= at)).or(list.first())?;
        Some(frames[i].id())
    };
    let mut assigned: Vec<(usize, Vec<NodeCallback>)> = Vec::new();
    let modules: Vec<String> = logs.modules().map(str::to_owned).collect();
    for module in &modules {
        for (epoch, events) in logs.events(module) {
            let (mut calls, _orphans) = callbacks(&events, epoch);
            for c in &mut calls {
                if c.start.kind == kind::TAKE {
                    c.start.producer = producer(&c.start.name, c.start.payload_digest, c.start.ros_time_ns);
                }
            }
            let mut lead: Vec<NodeCallback> = Vec::new();
            for c in calls {
                let replayed: Vec<usize> = (c.outputs.iter())
                    .filter_map(|(channel, seq)| index.get(&(channel.clone(), epoch, *seq)).copied())
                    .filter(|&i| frames[i].header.module_name == *module)
                    .collect();
                if replayed.is_empty() {
                    lead.push(c.start);
                    continue;
                }
                let mut events = std::mem::take(&mut lead);
                events.push(c.start);
                for i in replayed {
                    assigned.push((i, events.clone()));
                }
            }
        }
    }
    for f in frames.iter_mut() {
        if modules.contains(&f.header.module_name) {
            f.events = Some(Vec::new());
        }
    }
    for (i, events) in assigned {
        frames[i].events = Some(events);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind, thread: u32, name: &str, sequence_number: i64, ros_time_ns: i64) -> Event {
        Event {
            kind,
            ros_time_ns,
            thread,
            name: name.into(),
            infrastructure: name == "/parameter_events",
            gid: Vec::new(),
            sequence_number,
            payload_digest: 0,
        }
    }

    #[test]
    fn callbacks_group_per_thread_with_their_outputs_and_clock_reads() {
        let log = [
            event(EventKind::Take, 1, "/odom", 7, 10),
            event(EventKind::Take, 1, "/scan", 8, 20),
            event(EventKind::Clock, 1, "", 0, 25),
            event(EventKind::Timer, 2, "", 0, 30),
            event(EventKind::Publish, 1, "/fused", 0, 31),
            event(EventKind::Publish, 2, "/cmd", 0, 32),
            event(EventKind::Take, 1, "/parameter_events", 0, 40),
            event(EventKind::Publish, 1, "/fused", 1, 41),
        ];
        let (calls, orphans) = callbacks(&log, 5);
        let starts: Vec<(&str, i64)> = calls
            .iter()
            .map(|c| (c.start.name.as_str(), c.start.ros_time_ns))
            .collect();
        assert_eq!(starts, [("/odom", 10), ("/scan", 20), ("", 30)]);
        assert!(
            calls[0].outputs.is_empty(),
            "a take into the state publishes nothing"
        );
        assert_eq!(calls[1].outputs, [("/fused".to_owned(), 0)]);
        assert_eq!(calls[1].start.clock_reads_ns, [25]);
        assert_eq!(calls[2].outputs, [("/cmd".to_owned(), 0)]);
        assert_eq!(
            orphans,
            [("/fused".to_owned(), 5, 1)],
            "after an infrastructure callback: no data callback"
        );
    }
}
