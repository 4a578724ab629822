//! What each connected client has been sent and has missed (the node logs growing drop counts).

use std::net::SocketAddr;

use crate::server::Server;

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

impl Server {
    /// Per connected client, in connection order.
    pub fn client_stats(&self) -> Vec<ClientStats> {
        (self.shared.state().clients.values())
            .map(|c| {
                let q = c.io.queue();
                ClientStats {
                    address: c.address,
                    subscriptions: c.subscriptions.len(),
                    sent: q.sent(),
                    dropped: q.dropped(),
                    queued: q.len(),
                }
            })
            .collect()
    }
}
