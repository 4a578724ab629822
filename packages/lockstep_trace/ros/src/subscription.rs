//! Receiving traced data: each message paired with its header.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::{BoxStream, Stream, StreamExt};
use lockstep_ros::RosContext as _;
use lockstep_trace::{digest, now_ns, HeaderMatcher, TraceHeader};
use r2r::lockstep_interfaces::msg::DependencyHeader;
use r2r::{QosProfile, WrappedTypesupport};
use tokio::time::Instant;

use crate::convert::header_from_msg;
use crate::error::Result;
use crate::names::{header_topic, resolve_channel};

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

/// A stream of [`Traced`] messages of one topic, in arrival order of the data.
pub struct TracedSubscription<T> {
    channel: String,
    stream: BoxStream<'static, Traced<T>>,
}

impl<T> std::fmt::Debug for TracedSubscription<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracedSubscription")
            .field("channel", &self.channel)
            .finish()
    }
}

impl<T> TracedSubscription<T>
where
    T: WrappedTypesupport + Send + 'static,
{
    /// Subscribe `topic` and, for a traced upstream, its header sidecar. Each message's digest is computed
    /// from its canonical CDR ([`crate::canonical_cdr`]), not from the bytes received, whose padding is
    /// whatever the sender's buffer held.
    pub fn new(node: &mut r2r::Node, topic: &str, qos: QosProfile, upstream: Upstream) -> Result<Self> {
        let namespace = node.namespace().ros_context("reading the node namespace")?;
        let channel = resolve_channel(&namespace, topic);
        let data = node
            .subscribe::<T>(topic, qos)
            .with_ros_context(|| format!("subscribing {topic}"))?;
        let headers = match upstream {
            Upstream::Traced { .. } => {
                let sidecar = header_topic(topic);
                let stream = node
                    .subscribe::<DependencyHeader>(&sidecar, lockstep_ros::qos::reliable(100))
                    .with_ros_context(|| format!("subscribing {sidecar}"))?;
                Some(stream.boxed())
            }
            Upstream::External => None,
        };
        let state = State {
            channel: channel.clone(),
            upstream,
            data: data.boxed(),
            headers,
            matcher: HeaderMatcher::default(),
            queue: VecDeque::new(),
            next_id: 0,
            received: 0,
        };
        Ok(Self {
            channel,
            stream: futures::stream::unfold(state, |mut state| async move {
                state.next().await.map(|item| (item, state))
            })
            .boxed(),
        })
    }
}

impl<T> TracedSubscription<T> {
    /// The fully qualified channel name (what headers of this topic name).
    pub fn channel(&self) -> &str {
        &self.channel
    }
}

impl<T> Stream for TracedSubscription<T> {
    type Item = Traced<T>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.stream.as_mut().poll_next(cx)
    }
}

struct Waiting<T> {
    id: u64,
    digest: u64,
    msg: T,
    header: Option<TraceHeader>,
    deadline: Instant,
}

struct State<T> {
    channel: String,
    upstream: Upstream,
    data: BoxStream<'static, T>,
    headers: Option<BoxStream<'static, DependencyHeader>>,
    matcher: HeaderMatcher<u64>,
    /// Data not yet yielded, in arrival order: yielding in order keeps "latest" meaning latest even when a
    /// header arrives late.
    queue: VecDeque<Waiting<T>>,
    next_id: u64,
    /// Messages received so far: the sequence number of synthesized external headers.
    received: u32,
}

enum Event<T> {
    Data(Option<T>),
    Header(Option<DependencyHeader>),
    Timeout,
}

impl<T: WrappedTypesupport> State<T> {
    async fn next(&mut self) -> Option<Traced<T>> {
        loop {
            if let Some(item) = self.pop_ready() {
                return Some(item);
            }
            let deadline = self.queue.front().map(|w| w.deadline);
            let event = {
                let data = self.data.next();
                let header = async {
                    match self.headers.as_mut() {
                        Some(headers) => headers.next().await,
                        None => std::future::pending().await,
                    }
                };
                let timeout = async {
                    match deadline {
                        Some(deadline) => tokio::time::sleep_until(deadline).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    msg = data => Event::Data(msg),
                    header = header => Event::Header(header),
                    () = timeout => Event::Timeout,
                }
            };
            match event {
                Event::Data(None) => return None,
                Event::Data(Some(msg)) => self.on_data(msg),
                Event::Header(Some(msg)) => self.on_header(&msg),
                // The node is going away; data may still be drained.
                Event::Header(None) => self.headers = None,
                Event::Timeout => {}
            }
        }
    }

    fn on_data(&mut self, msg: T) {
        let digest = match crate::canonical::canonical_cdr(&msg) {
            Ok(bytes) => digest(&bytes),
            Err(e) => {
                // Out of memory in rmw, in practice: drop the message, keep the subscription.
                eprintln!(
                    "lockstep_trace_ros: cannot digest a message of {}: {e}",
                    self.channel
                );
                return;
            }
        };
        let id = self.next_id;
        self.next_id += 1;
        let now = Instant::now();
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

    fn on_header(&mut self, msg: &DependencyHeader) {
        let header = header_from_msg(msg);
        if let Some((id, header)) = self.matcher.push_header_on(&self.channel, header) {
            if let Some(waiting) = self.queue.iter_mut().find(|w| w.id == id) {
                waiting.header = Some(header);
            }
        }
    }

    fn pop_ready(&mut self) -> Option<Traced<T>> {
        let front = self.queue.front()?;
        if front.header.is_none() && Instant::now() < front.deadline {
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
