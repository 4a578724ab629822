//! The server's shared state: the connected clients with their outgoing queues, the advertised channels and
//! services, and the kept messages of latched channels. The server and its request handlers lock it; it
//! knows nothing of sockets.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::latched::Latched;
use crate::protocol::{self, Channel, Service};
use crate::queue::{ClientQueue, Outgoing};

/// One client's outgoing side: its bounded queue, the wake-up of its writer task, and whether it must be
/// closed (its protocol messages piled up).
pub(crate) struct ClientIo {
    queue: Mutex<ClientQueue>,
    pub(crate) wake: Notify,
    pub(crate) closed: AtomicBool,
}

impl ClientIo {
    /// A client with an empty queue holding up to `data_queue_len` data frames and `control_queue_len`
    /// protocol messages.
    pub(crate) fn new(data_queue_len: usize, control_queue_len: usize) -> Self {
        ClientIo {
            queue: Mutex::new(ClientQueue::new(data_queue_len, control_queue_len)),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
        }
    }

    pub(crate) fn queue(&self) -> MutexGuard<'_, ClientQueue> {
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues a protocol message; a client that lets them pile up is closed.
    pub(crate) fn control(&self, text: String) {
        self.control_frame(Outgoing::Text(text));
    }

    /// Queues a data frame (dropped first when the client is slow).
    pub(crate) fn data(&self, frame: Vec<u8>) {
        self.queue().push_data(frame);
        self.wake.notify_one();
    }

    /// Queues a protocol message (text or binary) that must not be dropped.
    pub(crate) fn control_frame(&self, message: Outgoing) {
        if self.queue().push_control(message).is_err() {
            self.closed.store(true, Ordering::Relaxed);
        }
        self.wake.notify_one();
    }
}

/// One connected client: its address, its outgoing side and its subscriptions.
pub(crate) struct Client {
    pub(crate) address: SocketAddr,
    pub(crate) io: Arc<ClientIo>,
    /// Subscription id -> channel id.
    pub(crate) subscriptions: HashMap<u32, u32>,
    /// Channel id -> subscription id.
    pub(crate) by_channel: HashMap<u32, u32>,
}

/// Everything the server knows, behind one lock: channels, clients, services, latched messages.
#[derive(Default)]
pub(crate) struct State {
    pub(crate) channels: BTreeMap<u32, Channel>,
    /// Channels that disappeared, kept so that one that comes back unchanged gets its old id.
    pub(crate) retired: Vec<Channel>,
    pub(crate) next_channel: u32,
    pub(crate) clients: BTreeMap<u64, Client>,
    pub(crate) next_client: u64,
    pub(crate) services: BTreeMap<u32, Service>,
    pub(crate) next_service: u32,
    pub(crate) latched: BTreeMap<u32, Latched>,
}

impl State {
    /// Queues a protocol message for every client.
    pub(crate) fn broadcast(&self, text: &str) {
        for client in self.clients.values() {
            client.io.control(text.to_owned());
        }
    }

    pub(crate) fn subscribers(&self, channel_id: u32) -> usize {
        (self.clients.values())
            .filter(|c| c.by_channel.contains_key(&channel_id))
            .count()
    }

    /// Keep the last `depth` messages of the channel for clients that subscribe later (0: keep none).
    pub(crate) fn set_latched(&mut self, channel_id: u32, depth: usize) {
        if depth == 0 {
            self.latched.remove(&channel_id);
            return;
        }
        self.latched.entry(channel_id).or_default().set_depth(depth);
    }

    /// Remembers a message of a latched channel.
    pub(crate) fn keep_latched(&mut self, channel_id: u32, timestamp_ns: u64, payload: &[u8]) {
        if let Some(kept) = self.latched.get_mut(&channel_id) {
            kept.keep(timestamp_ns, payload);
        }
    }

    /// Sends a client that just subscribed (`subscription` to `channel_id`) what the channel has kept.
    pub(crate) fn replay_latched(&self, client_id: u64, subscription: u32, channel_id: u32) {
        let (Some(kept), Some(client)) = (self.latched.get(&channel_id), self.clients.get(&client_id)) else {
            return;
        };
        for (stamp, payload) in kept.messages() {
            client
                .io
                .data(protocol::message_data(subscription, stamp, payload));
        }
    }
}
