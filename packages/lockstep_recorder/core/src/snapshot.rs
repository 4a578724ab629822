//! Snapshot mode (`lockstep bag record --snapshot-mode`, as rosbag2's): received messages are kept in memory,
//! at most `max_bytes` of them, the oldest whole messages leaving first; nothing reaches the disk until the
//! recorder's `~/snapshot` service asks, and then exactly the messages held are written, in the order they
//! were received. A message is never cut: one larger than the whole cache is not kept at all.

use std::collections::VecDeque;
use std::sync::Arc;

/// One message held for the next snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub topic: Arc<str>,
    pub received_ns: u64,
    pub data: Vec<u8>,
}

/// The last `max_bytes` of received messages.
#[derive(Debug)]
pub struct SnapshotBuffer {
    max_bytes: u64,
    bytes: u64,
    held: VecDeque<Held>,
    /// Messages that left the cache (pushed out by newer ones, or larger than it) since the last snapshot.
    pub evicted: u64,
}

impl SnapshotBuffer {
    pub fn new(max_bytes: u64) -> Self {
        Self {
            max_bytes,
            bytes: 0,
            held: VecDeque::new(),
            evicted: 0,
        }
    }

    /// Keep `message`, letting the oldest messages go until it fits.
    pub fn push(&mut self, message: Held) {
        let size = message.data.len() as u64;
        if size > self.max_bytes {
            self.evicted += 1;
            return;
        }
        while self.bytes + size > self.max_bytes {
            match self.held.pop_front() {
                Some(old) => {
                    self.bytes -= old.data.len() as u64;
                    self.evicted += 1;
                }
                None => break,
            }
        }
        self.bytes += size;
        self.held.push_back(message);
    }

    /// Bytes of payload held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Messages held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Everything held, oldest first; the buffer starts empty again.
    pub fn take(&mut self) -> VecDeque<Held> {
        self.bytes = 0;
        self.evicted = 0;
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(i: u64, size: usize) -> Held {
        Held {
            topic: Arc::from("/t"),
            received_ns: i,
            data: vec![i as u8; size],
        }
    }

    #[test]
    fn only_the_last_whole_messages_that_fit_are_kept_in_order() {
        let mut buffer = SnapshotBuffer::new(100);
        for i in 0..50 {
            buffer.push(message(i, 30));
        }
        assert_eq!((buffer.len(), buffer.bytes(), buffer.evicted), (3, 90, 47));
        let held: Vec<u64> = buffer.take().into_iter().map(|m| m.received_ns).collect();
        assert_eq!(held, [47, 48, 49]);
        assert!(buffer.is_empty() && buffer.bytes() == 0 && buffer.evicted == 0);
    }

    #[test]
    fn a_message_larger_than_the_cache_is_not_kept_and_evicts_nothing() {
        let mut buffer = SnapshotBuffer::new(100);
        buffer.push(message(1, 60));
        buffer.push(message(2, 101));
        assert_eq!((buffer.len(), buffer.bytes(), buffer.evicted), (1, 60, 1));
        buffer.push(message(3, 100));
        assert_eq!((buffer.len(), buffer.bytes()), (1, 100));
    }
}
