//! Receiving traced data: each message paired with its header.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::stream::{BoxStream, Stream, StreamExt};
use lockstep_ros::RosContext as _;
use lockstep_trace::{digest, Pairing};
use r2r::lockstep_interfaces::msg::DependencyHeader;
use r2r::{QosProfile, WrappedTypesupport};
use tokio::time::Instant;

use crate::convert::header_from_msg;
use crate::error::Result;
use crate::names::{header_topic, resolve_channel};

/// Who publishes a subscribed topic, and one received message (re-exported from `lockstep_trace`).
pub use lockstep_trace::{Traced, Upstream, DEFAULT_HEADER_TIMEOUT};

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
            data: data.boxed(),
            headers,
            pairing: Pairing::new(&channel, upstream),
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

/// The subscription's streams and the data waiting for its headers ([`Pairing`]).
struct State<T> {
    channel: String,
    data: BoxStream<'static, T>,
    headers: Option<BoxStream<'static, DependencyHeader>>,
    pairing: Pairing<T>,
}

enum Event<T> {
    Data(Option<T>),
    Header(Option<DependencyHeader>),
    Timeout,
}

impl<T: WrappedTypesupport> State<T> {
    async fn next(&mut self) -> Option<Traced<T>> {
        loop {
            if let Some(item) = self.pairing.pop_ready(Instant::now().into_std()) {
                return Some(item);
            }
            let deadline = self.pairing.next_deadline().map(Instant::from_std);
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
                Event::Header(Some(msg)) => self.pairing.push_header(header_from_msg(&msg)),
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
        self.pairing.push_data(msg, digest, Instant::now().into_std());
    }
}
