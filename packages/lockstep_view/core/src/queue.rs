//! What waits to be sent to one client: protocol messages (control) first, then message data. Data is
//! bounded: when a client does not read fast enough its oldest messages are dropped and counted, so a slow
//! client never holds up the robot's nodes or the other clients. Control messages are not dropped (a client
//! that misses an advertisement would misread what follows); a client that lets them pile up past their
//! bound is disconnected instead.

use std::collections::VecDeque;

/// One WebSocket message to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// A JSON message.
    Text(String),
    /// A binary frame (message data, time).
    Binary(Vec<u8>),
}

/// The control queue outgrew its bound: the client must be disconnected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the client let {0} protocol messages pile up unread")]
pub struct Overflow(pub usize);

/// One client's outgoing queue (sans I/O: the server's writer task drains it).
#[derive(Debug)]
pub struct ClientQueue {
    control: VecDeque<Outgoing>,
    data: VecDeque<Vec<u8>>,
    data_capacity: usize,
    control_capacity: usize,
    dropped: u64,
    sent: u64,
}

impl ClientQueue {
    /// A queue keeping at most `data_capacity` data frames (>= 1) and `control_capacity` control messages.
    pub fn new(data_capacity: usize, control_capacity: usize) -> Self {
        ClientQueue {
            control: VecDeque::new(),
            data: VecDeque::new(),
            data_capacity: data_capacity.max(1),
            control_capacity: control_capacity.max(1),
            dropped: 0,
            sent: 0,
        }
    }

    /// Queues a data frame, dropping the oldest one when full; returns whether one was dropped.
    pub fn push_data(&mut self, frame: Vec<u8>) -> bool {
        let full = self.data.len() >= self.data_capacity;
        if full {
            self.data.pop_front();
            self.dropped += 1;
        }
        self.data.push_back(frame);
        full
    }

    /// Queues a control message; `Err` when the control queue is over its bound.
    pub fn push_control(&mut self, message: Outgoing) -> Result<(), Overflow> {
        if self.control.len() >= self.control_capacity {
            return Err(Overflow(self.control.len()));
        }
        self.control.push_back(message);
        Ok(())
    }

    /// The next message to send: control before data.
    pub fn pop(&mut self) -> Option<Outgoing> {
        let next = match self.control.pop_front() {
            Some(m) => Some(m),
            None => self.data.pop_front().map(Outgoing::Binary),
        };
        if next.is_some() {
            self.sent += 1;
        }
        next
    }

    /// Data frames dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Messages handed to the writer so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Messages waiting.
    pub fn len(&self) -> usize {
        self.control.len() + self.data.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_the_oldest_data_and_counts_it() {
        let mut q = ClientQueue::new(2, 8);
        assert!(!q.push_data(vec![1]));
        assert!(!q.push_data(vec![2]));
        assert!(q.push_data(vec![3]));
        q.push_control(Outgoing::Text("adv".into())).unwrap();
        assert_eq!(q.dropped(), 1);
        assert_eq!(q.pop(), Some(Outgoing::Text("adv".into())), "control first");
        assert_eq!(q.pop(), Some(Outgoing::Binary(vec![2])));
        assert_eq!(q.pop(), Some(Outgoing::Binary(vec![3])));
        assert_eq!(q.pop(), None);
        assert_eq!(q.sent(), 3);
    }

    #[test]
    fn control_messages_are_never_dropped_but_bounded() {
        let mut q = ClientQueue::new(1, 2);
        q.push_control(Outgoing::Text("a".into())).unwrap();
        q.push_control(Outgoing::Text("b".into())).unwrap();
        assert_eq!(q.push_control(Outgoing::Text("c".into())), Err(Overflow(2)));
        assert_eq!(q.len(), 2);
    }
}
