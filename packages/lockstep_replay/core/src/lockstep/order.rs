//! The order frames are replayed in: a logical clock that survives clock skew between hosts.
//!
//! Recorded start stamps come from each module's own clock. With modules on two hosts whose clocks differ, a
//! consumer's frame can carry an earlier stamp than the frame that produced its input, and ordering by stamp
//! alone would step the consumer before its input exists. So the order is a topological order of the frames'
//! own dependencies: a frame comes after the frames that produced its inputs (as its header names them) and
//! after the previous output of its module on the same channel (a module's state moves forward in its own
//! sequence). Among frames whose dependencies are all done, the earliest recorded start comes first, then the
//! module's rank in the module topology, then channel, epoch and sequence number: a total order, so one
//! recording always replays the same way.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use super::frame::Frame;

type Key = (i64, usize, String, u64, u32);

/// Sorts `frames` into replay order; `rank(module)` is the module's topological rank (unknown modules last).
/// Dependencies that would form a circle (possible only in a corrupt recording) are broken in stamp order.
pub fn replay_order(frames: &mut Vec<Frame>, rank: &dyn Fn(&str) -> usize) {
    let key = |f: &Frame| -> Key {
        let h = &f.header;
        (
            h.start_time_ns,
            rank(&h.module_name),
            h.channel_name.clone(),
            h.epoch,
            h.sequence_num,
        )
    };
    let (successors, waiting) = dependencies(frames);
    let keys: Vec<Key> = frames.iter().map(key).collect();
    let order = topological_order(&keys, &successors, waiting);
    let mut slots: Vec<Option<Frame>> = std::mem::take(frames).into_iter().map(Some).collect();
    *frames = order.into_iter().filter_map(|i| slots[i].take()).collect();
}

/// The dependency edges between frames: each frame's successors, and how many predecessors each waits for.
/// A frame depends on the frames its header names as inputs (and, for an unmodified node, on the outputs its
/// callbacks took before it), and on the previous output of its own (module, channel, epoch).
fn dependencies(frames: &[Frame]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let n = frames.len();
    let index: BTreeMap<(&str, u64, u32), usize> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| {
            (
                (
                    f.header.channel_name.as_str(),
                    f.header.epoch,
                    f.header.sequence_num,
                ),
                i,
            )
        })
        .collect();
    let mut successors: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut waiting = vec![0usize; n];
    let mut edge = |from: usize, to: usize| {
        if from != to {
            successors[from].push(to);
            waiting[to] += 1;
        }
    };
    for (i, f) in frames.iter().enumerate() {
        for input in &f.header.inputs {
            if let Some(&p) = index.get(&(input.channel_name.as_str(), input.epoch, input.sequence_num)) {
                edge(p, i);
            }
        }
        // An unmodified node's output also comes after what its callbacks took before it.
        for (channel, epoch, seq) in f.events.iter().flatten().filter_map(|e| e.producer.as_ref()) {
            if let Some(&p) = index.get(&(channel.as_str(), *epoch, *seq)) {
                edge(p, i);
            }
        }
    }
    // Each (module, channel, epoch)'s outputs in sequence order.
    type Chain = Vec<(u32, usize)>;
    let mut chains: BTreeMap<(&str, &str, u64), Chain> = BTreeMap::new();
    for (i, f) in frames.iter().enumerate() {
        let h = &f.header;
        chains
            .entry((&h.module_name, &h.channel_name, h.epoch))
            .or_default()
            .push((h.sequence_num, i));
    }
    for chain in chains.values_mut() {
        chain.sort_unstable();
        for pair in chain.windows(2) {
            edge(pair[0].1, pair[1].1);
        }
    }
    (successors, waiting)
}

/// The frames' indices in dependency order, the smallest key first among those ready; where a circle
/// leaves nothing ready, the earliest frame not yet placed (in key order) goes next.
fn topological_order(keys: &[Key], successors: &[Vec<usize>], mut waiting: Vec<usize>) -> Vec<usize> {
    let n = keys.len();
    let mut ready: BinaryHeap<Reverse<(&Key, usize)>> = (0..n)
        .filter(|&i| waiting[i] == 0)
        .map(|i| Reverse((&keys[i], i)))
        .collect();
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut by_key: Vec<usize> = (0..n).collect();
    by_key.sort_by(|&a, &b| keys[a].cmp(&keys[b]).then(a.cmp(&b)));
    let mut next_by_key = 0;
    while order.len() < n {
        let i = match ready.pop() {
            Some(Reverse((_, i))) => i,
            None => {
                while done[by_key[next_by_key]] {
                    next_by_key += 1;
                }
                by_key[next_by_key]
            }
        };
        if done[i] {
            continue;
        }
        done[i] = true;
        order.push(i);
        for &s in &successors[i] {
            waiting[s] = waiting[s].saturating_sub(1);
            if waiting[s] == 0 && !done[s] {
                ready.push(Reverse((&keys[s], s)));
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use lockstep_trace::{InputRecord, TraceHeader};

    use super::super::callback::NodeCallback;
    use super::*;

    fn frame(module: &str, channel: &str, seq: u32, start: i64, inputs: &[(&str, u32)]) -> Frame {
        Frame {
            header: TraceHeader {
                module_name: module.into(),
                channel_name: channel.into(),
                sequence_num: seq,
                epoch: 1,
                start_time_ns: start,
                inputs: inputs
                    .iter()
                    .map(|&(c, s)| InputRecord {
                        channel_name: c.into(),
                        sequence_num: s,
                        epoch: 1,
                        ..InputRecord::default()
                    })
                    .collect(),
                ..TraceHeader::default()
            },
            header_log_time_ns: 0,
            events: None,
        }
    }

    fn names(frames: &[Frame]) -> Vec<String> {
        frames
            .iter()
            .map(|f| format!("{}#{}", f.header.channel_name, f.header.sequence_num))
            .collect()
    }

    #[test]
    fn stamps_order_independent_frames() {
        let mut frames = vec![frame("b", "/b", 0, 20, &[]), frame("a", "/a", 0, 10, &[])];
        replay_order(&mut frames, &|_| 0);
        assert_eq!(names(&frames), ["/a#0", "/b#0"]);
    }

    #[test]
    fn a_consumer_stamped_before_its_producer_comes_after_it() {
        // The producer's host clock runs 500 ms ahead of the consumer's.
        let mut frames = vec![
            frame("up", "/up", 0, 500_000_000, &[]),
            frame("down", "/down", 0, 10_000_000, &[("/up", 0)]),
            frame("up", "/up", 1, 600_000_000, &[]),
            frame("down", "/down", 1, 110_000_000, &[("/up", 1)]),
        ];
        replay_order(&mut frames, &|m| usize::from(m == "down"));
        assert_eq!(names(&frames), ["/up#0", "/down#0", "/up#1", "/down#1"]);
    }

    #[test]
    fn a_module_keeps_its_own_sequence_order() {
        // Stamps went backwards on one host (a clock step): the module's sequence still decides.
        let mut frames = vec![frame("m", "/m", 1, 5, &[]), frame("m", "/m", 0, 9, &[])];
        replay_order(&mut frames, &|_| 0);
        assert_eq!(names(&frames), ["/m#0", "/m#1"]);
    }

    #[test]
    fn an_unmodified_node_output_comes_after_what_its_callbacks_took_silently() {
        // `aux` stamps on a clock 500 ms ahead; the node took /aux #0 silently before publishing /f #0, which
        // its header does not name.
        let mut node = frame("node", "/f", 0, 20, &[("/in", 0)]);
        node.events = Some(vec![NodeCallback {
            kind: super::super::callback::kind::TAKE,
            name: "/aux".into(),
            ros_time_ns: 10,
            sequence_number: 1,
            payload_digest: 7,
            clock_reads_ns: Vec::new(),
            producer: Some(("/aux".into(), 1, 0)),
            index: 0,
        }]);
        let mut frames = vec![node, frame("aux", "/aux", 0, 500_000_000, &[])];
        replay_order(&mut frames, &|_| 0);
        assert_eq!(names(&frames), ["/aux#0", "/f#0"]);
    }

    #[test]
    fn a_circle_from_a_corrupt_recording_is_broken_in_stamp_order() {
        let mut frames = vec![
            frame("a", "/a", 0, 2, &[("/b", 0)]),
            frame("b", "/b", 0, 1, &[("/a", 0)]),
            frame("c", "/c", 0, 3, &[]),
        ];
        replay_order(&mut frames, &|_| 0);
        assert_eq!(frames.len(), 3);
        assert_eq!(names(&frames), ["/c#0", "/b#0", "/a#0"]);
    }
}
