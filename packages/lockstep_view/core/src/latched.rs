//! Latched (transient-local) channels: the last messages of such a channel are kept, and a client that
//! subscribes later gets them first, as a late-joining ROS subscription gets a transient-local publisher's
//! history. The node keeps one reader per topic, which took them long ago; without this a second Foxglove
//! client would never see a map that is published once.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::protocol;
use crate::server::{Server, State};

/// The kept messages of one latched channel.
#[derive(Debug, Default)]
pub(crate) struct Latched {
    depth: usize,
    last: VecDeque<(u64, Arc<[u8]>)>,
}

impl Server {
    /// Keep the last `depth` messages of the channel for clients that subscribe later (0: keep none).
    pub fn set_latched(&self, channel_id: u32, depth: usize) {
        let mut st = self.shared.state();
        if depth == 0 {
            st.latched.remove(&channel_id);
            return;
        }
        let kept = st.latched.entry(channel_id).or_default();
        kept.depth = depth;
        while kept.last.len() > depth {
            kept.last.pop_front();
        }
    }
}

impl State {
    /// Remembers a message of a latched channel.
    pub(crate) fn keep_latched(&mut self, channel_id: u32, timestamp_ns: u64, payload: &[u8]) {
        if let Some(kept) = self.latched.get_mut(&channel_id) {
            if kept.last.len() == kept.depth {
                kept.last.pop_front();
            }
            kept.last.push_back((timestamp_ns, Arc::from(payload)));
        }
    }

    /// Sends a client that just subscribed (`subscription` to `channel_id`) what the channel has kept.
    pub(crate) fn replay_latched(&self, client_id: u64, subscription: u32, channel_id: u32) {
        let (Some(kept), Some(client)) = (self.latched.get(&channel_id), self.clients.get(&client_id)) else {
            return;
        };
        for (stamp, payload) in &kept.last {
            client
                .io
                .data(protocol::message_data(subscription, *stamp, payload));
        }
    }
}
