//! The callbacks of a thread: when one starts (a timer fired) and ends (the thread waits again), which node
//! it belongs to, the ROS times it read, and whether a node's callbacks run on several threads.

use crate::events::{Event, EventKind};

use super::{Handle, Now, Tracker, Trigger};

impl Tracker {
    /// A callback of `node` ran on `thread`: a second thread means a multi-threaded executor.
    pub(super) fn callback_on(&mut self, node: Handle, thread: u32) {
        let Some(n) = self.nodes.get_mut(&node) else {
            return;
        };
        n.callback_threads.insert(thread);
        if n.callback_threads.len() == 2 {
            n.log.warn(
                "callbacks ran on several threads (a multi-threaded executor): the input of an output is \
                 guessed per thread and may be wrong when two callbacks run at once"
                    .to_owned(),
            );
        }
    }

    /// The pending timer event of `thread` goes to `node`, or to the process's first node.
    pub(super) fn settle_timer(&mut self, thread: u32, node: Option<Handle>) {
        let Some(t) = self.threads.get_mut(&thread) else {
            return;
        };
        let Some(event) = t.pending_timer.take() else {
            return;
        };
        let reads = std::mem::take(&mut t.pending_clock);
        let Some(node) = node.or_else(|| self.node_order.first().copied()) else {
            return;
        };
        if let Some(t) = self.threads.get_mut(&thread) {
            t.callback_node = Some(node);
        }
        self.callback_on(node, thread);
        self.log(node, event);
        for read in reads {
            self.log(node, read);
        }
    }

    /// The callback running on `thread` read `ros_ns` from a ROS clock: logged for its node (replayed, the
    /// read returns the same time).
    pub fn on_clock_read(&mut self, thread: u32, ros_ns: i64) {
        let Some(t) = self.threads.get_mut(&thread) else {
            return;
        };
        if t.trigger.is_none() {
            return; // not in a callback
        }
        let event = Event {
            kind: EventKind::Clock,
            ros_time_ns: ros_ns,
            thread,
            name: String::new(),
            infrastructure: false,
            gid: Vec::new(),
            sequence_number: 0,
            payload_digest: 0,
        };
        if t.pending_timer.is_some() {
            t.pending_clock.push(event);
        } else if let Some(node) = t.callback_node {
            self.log(node, event);
        }
    }

    /// `rcl_wait` on `thread`: the callback that ran there is over.
    pub fn on_wait(&mut self, thread: u32) {
        self.settle_timer(thread, None);
        if let Some(t) = self.threads.get_mut(&thread) {
            t.trigger = None;
            t.callback_node = None;
        }
    }

    /// A timer's callback is called on `thread`.
    pub fn on_timer(&mut self, timer: Handle, thread: u32, now: Now) {
        self.settle_timer(thread, None);
        let number = self.timers.get(&timer).copied().unwrap_or(-1);
        let t = self.threads.entry(thread).or_default();
        t.pending_timer = Some(Event {
            kind: EventKind::Timer,
            ros_time_ns: now.ros_ns,
            thread,
            name: String::new(),
            infrastructure: false,
            gid: Vec::new(),
            sequence_number: number,
            payload_digest: 0,
        });
        t.trigger = Some(Trigger::Other {
            wall_ns: now.wall_ns,
            mono: now.mono,
        });
        t.callback_node = None;
    }
}
