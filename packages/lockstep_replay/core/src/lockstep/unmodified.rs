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
//!
//! The logs are decoded by `lockstep_bag::traced` with the definition the bag stores, in the same pass over
//! the bag as the data, and only when the bag has events topics.

use std::collections::BTreeMap;

use lockstep_bag::traced::{LoggedEvent, NodeEvent, NodeEventLog};

use super::callback::{kind, NodeCallback};
use super::frame::Frame;

pub use lockstep_bag::traced::EVENTS_TOPIC_PREFIX;

/// One callback as the log shows it: what started it, and the outputs it published (channel, sequence).
struct Callback {
    start: NodeCallback,
    outputs: Vec<(String, u32)>,
}

/// Whether a logged event starts a callback the replay reproduces: a data message taken, a timer fired, a
/// request or a response taken.
fn starts_callback(e: &NodeEvent) -> bool {
    !e.infrastructure
        && matches!(
            e.kind,
            kind::TAKE | kind::TIMER | kind::REQUEST_TAKEN | kind::RESPONSE_TAKEN
        )
}

/// A node's callbacks in log order (`events`: one epoch's log), and the outputs published outside any
/// (by frame id). A callback's outputs are the PUBLISH events on its thread until that thread's next
/// callback; an infrastructure callback (a parameter update, a `/clock` message) ends it, so what is
/// published after that on the thread is not the data callback's.
fn callbacks(events: &[LoggedEvent]) -> (Vec<Callback>, Vec<(String, u64, u32)>) {
    let mut out: Vec<Callback> = Vec::new();
    let mut orphans = Vec::new();
    let mut running: BTreeMap<u32, Option<usize>> = BTreeMap::new();
    for logged in events {
        let e = &logged.event;
        if starts_callback(e) {
            running.insert(e.thread, Some(out.len()));
            out.push(Callback {
                start: NodeCallback {
                    kind: e.kind,
                    name: e.name.clone(),
                    ros_time_ns: e.ros_time_ns,
                    sequence_number: e.sequence_number,
                    payload_digest: e.payload_digest,
                    clock_reads_ns: Vec::new(),
                    producer: None,
                    index: logged.index,
                },
                outputs: Vec::new(),
            });
            continue;
        }
        if e.infrastructure && e.kind != kind::PUBLISH {
            running.insert(e.thread, None); // an infrastructure callback (parameters, /clock) runs there now
            continue;
        }
        let current = running.get(&e.thread).copied().flatten();
        let sequence = u32::try_from(e.sequence_number).unwrap_or(u32::MAX);
        match (e.kind, current) {
            (kind::PUBLISH, _) if e.infrastructure => {}
            (kind::PUBLISH, Some(i)) => out[i].outputs.push((e.name.clone(), sequence)),
            (kind::PUBLISH, None) => orphans.push((e.name.clone(), logged.epoch, sequence)),
            (kind::CLOCK, Some(i)) => out[i].start.clock_reads_ns.push(e.ros_time_ns),
            _ => {}
        }
    }
    (out, orphans)
}

/// Give every frame of a module with an event log the callbacks to reproduce for it (see the module's
/// documentation): the callbacks that published nothing since the previous one that published a recorded
/// output, then the one that published it. Every frame a callback published gets the same list: they are
/// one step, which runs the callbacks once. A frame the log does not show published by a callback gets an
/// empty list (it is skipped, with the reason, when replayed). A take of a recorded module's output names
/// that output as its producer: the latest frame with the message's digest on the channel logged at or
/// before the take, else the first.
pub(super) fn attach(logs: &BTreeMap<String, NodeEventLog>, frames: &mut [Frame]) {
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
    for list in by_digest.values_mut() {
        list.sort_unstable();
    }
    let producer = |name: &str, digest: u64, ros_time_ns: i64| {
        let list = by_digest.get(&(name, digest))?;
        let at = u64::try_from(ros_time_ns).unwrap_or(0);
        let &(_, i) = (list.iter().rev().find(|&&(t, _)| t <= at)).or(list.first())?;
        Some(frames[i].id())
    };
    let mut assigned: Vec<(usize, Vec<NodeCallback>)> = Vec::new();
    for (module, log) in logs {
        for events in log.events.chunk_by(|a, b| a.epoch == b.epoch) {
            let epoch = events[0].epoch;
            let (mut calls, _orphans) = callbacks(events);
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
        if logs.contains_key(&f.header.module_name) {
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

    fn event(kind: u8, thread: u32, name: &str, sequence_number: i64, ros_time_ns: i64) -> LoggedEvent {
        LoggedEvent {
            epoch: 5,
            index: u64::try_from(ros_time_ns).unwrap_or(0),
            event: NodeEvent {
                kind,
                ros_time_ns,
                thread,
                name: name.into(),
                infrastructure: name == "/parameter_events",
                gid: Vec::new(),
                sequence_number,
                payload_digest: 0,
            },
        }
    }

    #[test]
    fn callbacks_group_per_thread_with_their_outputs_and_clock_reads() {
        let log = [
            event(kind::TAKE, 1, "/odom", 7, 10),
            event(kind::TAKE, 1, "/scan", 8, 20),
            event(kind::CLOCK, 1, "", 0, 25),
            event(kind::TIMER, 2, "", 0, 30),
            event(kind::PUBLISH, 1, "/fused", 0, 31),
            event(kind::PUBLISH, 2, "/cmd", 0, 32),
            event(kind::TAKE, 1, "/parameter_events", 0, 40),
            event(kind::PUBLISH, 1, "/fused", 1, 41),
        ];
        let (calls, orphans) = callbacks(&log);
        let starts: Vec<(&str, i64, u64)> = calls
            .iter()
            .map(|c| (c.start.name.as_str(), c.start.ros_time_ns, c.start.index))
            .collect();
        assert_eq!(starts, [("/odom", 10, 10), ("/scan", 20, 20), ("", 30, 30)]);
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
