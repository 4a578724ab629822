//! Latched (transient-local) channels: the last messages of such a channel are kept, and a client that
//! subscribes later gets them first, as a late-joining ROS subscription gets a transient-local publisher's
//! history. The node keeps one reader per topic, which took them long ago; without this a second Foxglove
//! client would never see a map that is published once.

use std::collections::VecDeque;
use std::sync::Arc;

/// The kept messages of one latched channel.
#[derive(Debug, Default)]
pub(crate) struct Latched {
    depth: usize,
    last: VecDeque<(u64, Arc<[u8]>)>,
}

impl Latched {
    /// Keep the last `depth` messages (at least 1), dropping the oldest beyond it.
    pub(crate) fn set_depth(&mut self, depth: usize) {
        self.depth = depth;
        while self.last.len() > depth {
            self.last.pop_front();
        }
    }

    /// Remembers a message, dropping the oldest when `depth` are kept already.
    pub(crate) fn keep(&mut self, timestamp_ns: u64, payload: &[u8]) {
        if self.last.len() == self.depth {
            self.last.pop_front();
        }
        self.last.push_back((timestamp_ns, Arc::from(payload)));
    }

    /// The kept messages (timestamp, payload), oldest first.
    pub(crate) fn messages(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.last.iter().map(|(stamp, payload)| (*stamp, &payload[..]))
    }
}
