//! One subscribed channel's received data paired with its headers, without ROS: the queue
//! `lockstep_trace_ros::TracedSubscription` keeps between the data topic, the header sidecar and the clock.
//!
//! Data is yielded in arrival order: a message whose header has not arrived yet holds back those after it
//! until its header arrives or its wait runs out, so "latest" keeps meaning latest even when a header is late.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::matcher::HeaderMatcher;
use crate::model::TraceHeader;
use crate::tracer::now_ns;

/// How long a message from a traced publisher waits for its header by default. Headers normally follow
/// their data within a millisecond; this only bounds the wait when a header is lost.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_millis(200);

/// Who publishes the subscribed topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// A traced module: wait up to `header_timeout` for each message's header, then yield it without one.
    Traced {
        /// Longest wait for a header.
        header_timeout: Duration,
    },
    /// An untraced publisher (sensor driver, simulator, rclpy): every message gets a synthesized header
    /// ([`TraceHeader::external`]) numbered by arrival from 0, so a module can still name what it used.
    External,
}

impl Default for Upstream {
    fn default() -> Self {
        Upstream::Traced {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
        }
    }
}

/// One received message.
#[derive(Debug, Clone)]
pub struct Traced<T> {
    /// The message.
    pub msg: T,
    /// Its header; `None` if a traced publisher's header did not arrive in time.
    pub header: Option<TraceHeader>,
    /// Digest of the message's canonical CDR bytes.
    pub digest: u64,
}

#[derive(Debug)]
struct Waiting<T> {
    id: u64,
    digest: u64,
    msg: T,
    header: Option<TraceHeader>,
    deadline: Instant,
}

/// The messages of one channel not yet yielded, each waiting for its header.
#[derive(Debug)]
pub struct Pairing<T> {
    channel: String,
    upstream: Upstream,
    matcher: HeaderMatcher<u64>,
    queue: VecDeque<Waiting<T>>,
    next_id: u64,
    /// Messages received so far: the sequence number of synthesized external headers.
    received: u32,
}

impl<T> Pairing<T> {
    /// An empty queue for `channel` (fully qualified: what its headers name).
    pub fn new(channel: &str, upstream: Upstream) -> Self {
        Self {
            channel: channel.to_owned(),
            upstream,
            matcher: HeaderMatcher::default(),
            queue: VecDeque::new(),
            next_id: 0,
            received: 0,
        }
    }

    /// When the oldest message stops waiting for its header.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.queue.front().map(|w| w.deadline)
    }

    /// Queue `msg`, whose canonical CDR digests to `digest`, received at `now`: from an external upstream
    /// with a synthesized header, else with its header if it came first.
    pub fn push_data(&mut self, msg: T, digest: u64, now: Instant) {
        let id = self.next_id;
        self.next_id += 1;
        let (header, deadline) = match self.upstream {
            Upstream::External => {
                let header = TraceHeader::external(&self.channel, self.received, now_ns(), digest);
                (Some(header), now)
            }
            Upstream::Traced { header_timeout } => {
                let header = self
                    .matcher
                    .push_data(&self.channel, digest, id)
                    .map(|(_, header)| header);
                (header, now + header_timeout)
            }
        };
        self.received = self.received.wrapping_add(1);
        self.queue.push_back(Waiting {
            id,
            digest,
            msg,
            header,
            deadline,
        });
    }

    /// Give a received header to the queued message it belongs to (or keep it for data still to come).
    pub fn push_header(&mut self, header: TraceHeader) {
        if let Some((id, header)) = self.matcher.push_header_on(&self.channel, header) {
            if let Some(waiting) = self.queue.iter_mut().find(|w| w.id == id) {
                waiting.header = Some(header);
            }
        }
    }

    /// The oldest message, once it has its header or its wait ran out by `now`.
    pub fn pop_ready(&mut self, now: Instant) -> Option<Traced<T>> {
        let front = self.queue.front()?;
        if front.header.is_none() && now < front.deadline {
            return None;
        }
        let waiting = self.queue.pop_front()?;
        if waiting.header.is_none() {
            // Its header is lost: stop holding a place for it in the matcher.
            let id = waiting.id;
            self.matcher
                .give_up_data(&self.channel, waiting.digest, |&x| x == id);
        }
        Some(Traced {
            msg: waiting.msg,
            header: waiting.header,
            digest: waiting.digest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(digest: u64) -> TraceHeader {
        let mut header = TraceHeader::external("/c", 1, 0, digest);
        header.module_name = "m1".into();
        header
    }

    #[test]
    fn data_waits_for_its_header_and_keeps_arrival_order() {
        let mut pairing = Pairing::new("/c", Upstream::default());
        let now = Instant::now();
        pairing.push_data("first", 1, now);
        pairing.push_data("second", 2, now);
        pairing.push_header(header(2));
        assert!(pairing.pop_ready(now).is_none(), "the first still waits");
        pairing.push_header(header(1));
        let first = pairing.pop_ready(now).expect("first paired");
        assert_eq!(
            (first.msg, first.header.map(|h| h.payload_digest)),
            ("first", Some(1))
        );
        assert_eq!(pairing.pop_ready(now).map(|t| t.msg), Some("second"));
        assert!(pairing.next_deadline().is_none());
    }

    #[test]
    fn a_lost_header_lets_the_message_go_without_one_at_its_deadline() {
        let mut pairing = Pairing::new("/c", Upstream::default());
        let now = Instant::now();
        pairing.push_data("alone", 5, now);
        assert_eq!(pairing.next_deadline(), Some(now + DEFAULT_HEADER_TIMEOUT));
        assert!(pairing.pop_ready(now).is_none());
        let late = pairing.pop_ready(now + DEFAULT_HEADER_TIMEOUT).expect("given up");
        assert_eq!((late.msg, late.header.is_none(), late.digest), ("alone", true, 5));
    }

    #[test]
    fn external_data_gets_headers_numbered_by_arrival() {
        let mut pairing = Pairing::new("/scan", Upstream::External);
        let now = Instant::now();
        pairing.push_data((), 9, now);
        pairing.push_data((), 9, now);
        let numbers: Vec<u32> = std::iter::from_fn(|| pairing.pop_ready(now))
            .filter_map(|t| t.header.map(|h| h.sequence_num))
            .collect();
        assert_eq!(numbers, vec![0, 1]);
    }
}
