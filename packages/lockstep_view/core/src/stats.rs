//! What each connected client has been sent and has missed (the node logs growing drop counts).

use std::net::SocketAddr;

use crate::state::Client;

/// What one connected client has been sent and has missed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientStats {
    /// The client's address.
    pub address: SocketAddr,
    /// Its subscriptions.
    pub subscriptions: usize,
    /// Messages handed to its socket.
    pub sent: u64,
    /// Data frames dropped because it did not read fast enough.
    pub dropped: u64,
    /// Messages waiting.
    pub queued: usize,
}

impl ClientStats {
    /// The counts of one connected client.
    pub(crate) fn of(client: &Client) -> Self {
        let q = client.io.queue();
        ClientStats {
            address: client.address,
            subscriptions: client.subscriptions.len(),
            sent: q.sent(),
            dropped: q.dropped(),
            queued: q.len(),
        }
    }
}
