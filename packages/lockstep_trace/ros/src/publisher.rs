//! Publishing traced data and the module's topology.

use lockstep_ros::RosContext as _;
use lockstep_trace::{Component, Token, TraceHeader, Tracer};
use r2r::lockstep_interfaces::msg::{DependencyHeader, ModuleTopology};
use r2r::{QosProfile, WrappedTypesupport};

use crate::convert::{component_to_msg, header_to_msg};
use crate::error::{Error, Result};
use crate::names::{header_topic, resolve_channel, topology_topic};

/// Depth of the header sidecar: reliable, and deep enough that a recorder catching up on a burst of data
/// still gets every header.
const HEADER_QOS_DEPTH: usize = 100;

/// A publisher of `T` on one topic plus its dependency headers on `<topic>/lockstep_header`.
pub struct TracedPublisher<T: WrappedTypesupport> {
    data: r2r::Publisher<T>,
    headers: r2r::Publisher<DependencyHeader>,
    channel: String,
}

impl<T: WrappedTypesupport + 'static> TracedPublisher<T> {
    /// Create both publishers on `node`. `qos` is the data topic's; headers are always reliable.
    pub fn new(node: &mut r2r::Node, topic: &str, qos: QosProfile) -> Result<Self> {
        let namespace = node.namespace().ros_context("reading the node namespace")?;
        let channel = resolve_channel(&namespace, topic);
        let data = node
            .create_publisher::<T>(topic, qos)
            .with_ros_context(|| format!("creating the publisher of {topic}"))?;
        let sidecar = header_topic(topic);
        let headers = node
            .create_publisher::<DependencyHeader>(&sidecar, lockstep_ros::qos::reliable(HEADER_QOS_DEPTH))
            .with_ros_context(|| format!("creating the header publisher {sidecar}"))?;
        Ok(Self {
            data,
            headers,
            channel,
        })
    }

    /// The fully qualified channel name written into headers.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// How many subscriptions both the data topic and its header topic have matched (the smaller count):
    /// the readers this publisher's next message reaches, data and header alike.
    pub fn matched_subscriptions(&self) -> Result<usize> {
        let data = self
            .data
            .get_inter_process_subscription_count()
            .with_ros_context(|| format!("counting the subscriptions of {}", self.channel))?;
        let headers = self
            .headers
            .get_inter_process_subscription_count()
            .with_ros_context(|| format!("counting the header subscriptions of {}", self.channel))?;
        Ok(data.min(headers))
    }

    /// Publish `msg` computed from `inputs` since `token`, and its header; returns the header.
    pub fn publish(
        &self,
        tracer: &mut Tracer,
        token: Token,
        msg: &T,
        inputs: &[&TraceHeader],
    ) -> Result<TraceHeader> {
        self.publish_traced(msg, |payload| {
            Ok(tracer.finish(token, &self.channel, payload, inputs))
        })
    }

    /// Publish `msg` computed from the tracer's latest input of each of `input_channels`, and its header.
    pub fn publish_latest(
        &self,
        tracer: &mut Tracer,
        token: Token,
        msg: &T,
        input_channels: &[&str],
    ) -> Result<TraceHeader> {
        self.publish_traced(msg, |payload| {
            tracer
                .finish_latest(token, &self.channel, payload, input_channels)
                .map_err(|source| Error::Trace {
                    channel: self.channel.clone(),
                    source,
                })
        })
    }

    /// Publish `msg` as the output of a lock-step `grant` (see [`crate::step`]): its header is the grant's
    /// frame of this publisher's channel (recorded channel, sequence number, epoch, start stamp, process time
    /// and inputs) with the digest of `msg`. Returns the header and the canonical CDR published, for
    /// [`crate::StepServer::answer`] (or [`crate::StepServer::answer_outputs`] when the computation
    /// publishes on several channels). A grant naming several outputs but none on this channel is refused.
    pub fn publish_step(&self, grant: &crate::step::Grant, msg: &T) -> Result<(TraceHeader, Vec<u8>)> {
        let payload = crate::canonical::canonical_cdr(msg)?;
        let header = grant
            .output_header(&self.channel, &payload)
            .ok_or_else(|| Error::NotGranted {
                channel: self.channel.clone(),
                frame: format!("{} #{}", grant.frame.channel_name, grant.frame.sequence_num),
                named: grant.channels(),
            })?;
        self.publish_with_header(msg, &header)?;
        Ok((header, payload))
    }

    /// Publish `msg` and a header made elsewhere (replay re-emitting a recorded header). The data goes
    /// first: a receiver holds data a little while for its header, not the other way round.
    pub fn publish_with_header(&self, msg: &T, header: &TraceHeader) -> Result<()> {
        self.data
            .publish(msg)
            .with_ros_context(|| format!("publishing on {}", self.channel))?;
        self.headers
            .publish(&header_to_msg(header))
            .with_ros_context(|| format!("publishing the header of {}", self.channel))?;
        Ok(())
    }

    /// Publish `msg` with the header `finish` makes from its canonical CDR bytes (see
    /// [`crate::canonical_cdr`]), which the header's digest is computed from.
    fn publish_traced(
        &self,
        msg: &T,
        finish: impl FnOnce(&[u8]) -> Result<TraceHeader>,
    ) -> Result<TraceHeader> {
        let header = finish(&crate::canonical::canonical_cdr(msg)?)?;
        self.publish_with_header(msg, &header)?;
        Ok(header)
    }
}

/// Publish `component` (one module's wiring) latched on [`topology_topic`]. Keep the returned publisher alive:
/// late subscribers (a recorder started later) get the message from it.
pub fn publish_topology(
    node: &mut r2r::Node,
    component: &Component,
) -> Result<r2r::Publisher<ModuleTopology>> {
    let topic = topology_topic(&component.module_name);
    let publisher = node
        .create_publisher::<ModuleTopology>(&topic, lockstep_ros::qos::latched())
        .with_ros_context(|| format!("creating the topology publisher {topic}"))?;
    let msg = ModuleTopology {
        components: vec![component_to_msg(component)],
    };
    publisher
        .publish(&msg)
        .with_ros_context(|| format!("publishing the topology on {topic}"))?;
    Ok(publisher)
}
