//! The r2r side of [`lockstep_trace`]: any Rust module node emits dependency headers without changing its
//! message types.
//!
//! - [`TracedPublisher`]: publishes a typed message on its topic and its [`DependencyHeader`] on the sidecar
//!   topic `<topic>/lockstep_header`; the header's `payload_digest` is the digest of the message's canonical
//!   CDR bytes ([`canonical_cdr`]: CDR with zeroed alignment padding).
//! - [`TracedSubscription`]: subscribes a topic and its sidecar, and yields each message with its header,
//!   paired by [`lockstep_trace::HeaderMatcher`]. Messages from untraced publishers (sensors, simulators,
//!   rclpy) get a synthesized external header.
//! - [`step`]: the module side of lock-step replay's step protocol ([`StepServer`], [`Grant`], [`Recent`]).
//! - [`publish_topology`]: the module's wiring, latched on `/lockstep/topology/<module>`, so a recorder learns
//!   it before any data flows.
//! - [`node_module_name`]: the module name of a node, its namespace included (`robot1/obstacle_fusion`).
//! - Conversions between the plain model and the ROS messages ([`header_to_msg`], [`header_from_msg`], ...).

mod canonical;
mod convert;
mod publisher;
pub mod step;
mod subscription;

pub use canonical::canonical_cdr;
pub use convert::{
    component_from_msg, component_to_msg, header_from_msg, header_to_msg, topology_from_msg, topology_to_msg,
};
/// The ROS `Time` conversions headers use, from [`lockstep_ros::time`] (re-exported for existing callers).
pub use lockstep_ros::time::{ns_to_time, time_to_ns};
pub use publisher::{publish_topology, topology_topic, TracedPublisher};
pub use step::{Grant, Recent, StepOutputData, StepServer};
pub use subscription::{Traced, TracedSubscription, Upstream, DEFAULT_HEADER_TIMEOUT};

pub use lockstep_trace;
pub use r2r::lockstep_interfaces::msg::{ComponentTopology, DependencyHeader, ModuleTopology};

/// Suffix of the sidecar topic that carries a channel's headers.
pub const HEADER_TOPIC_SUFFIX: &str = "/lockstep_header";

/// Prefix of the latched per-module topology topics.
pub const TOPOLOGY_TOPIC_PREFIX: &str = "/lockstep/topology/";

/// What can go wrong publishing or subscribing traced topics.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An r2r call failed: lockstep_ros's error, whose action names the topic
    /// ([`lockstep_ros::Error::Ros`]).
    #[error(transparent)]
    Ros(#[from] lockstep_ros::Error),
    /// A lock-step grant names no output on the channel a module publishes a step's output on.
    #[error("the step of {frame} names no output on `{channel}` (it names {named})")]
    NotGranted {
        /// The publisher's channel.
        channel: String,
        /// The granted frame (`<channel> #<sequence>`).
        frame: String,
        /// The output channels the grant names.
        named: String,
    },
    /// The tracing library refused (e.g. an input channel never received).
    #[error("tracing on `{channel}`: {source}")]
    Trace {
        /// The output channel.
        channel: String,
        #[source]
        source: lockstep_trace::Error,
    },
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// The fully qualified name of `topic` as seen from a node in `namespace`: absolute names stay, relative ones
/// are put under the namespace. Channel names in headers are fully qualified so that headers from nodes in
/// different namespaces compare. (`~` private names and remapping rules are not applied: r2r does not expose
/// rcl's name resolution; remap absolute names instead.)
pub fn resolve_channel(namespace: &str, topic: &str) -> String {
    if topic.starts_with('/') {
        return topic.to_owned();
    }
    let namespace = namespace.trim_end_matches('/');
    format!("{namespace}/{topic}")
}

/// The module name a node writes into its headers and topology: its fully qualified name without the leading
/// slash. In the root namespace that is the node name (`obstacle_fusion`); under a namespace the namespace
/// comes first (`robot1/obstacle_fusion`), so two nodes of one name in two namespaces are two modules. The
/// node's step service is then `/<module name>/lockstep/step` ([`step::step_service_name`]) and its topology
/// is latched on `/lockstep/topology/<module name>` ([`topology_topic`]).
pub fn module_name(namespace: &str, node_name: &str) -> String {
    let namespace = namespace.trim_matches('/');
    if namespace.is_empty() {
        node_name.to_owned()
    } else {
        format!("{namespace}/{node_name}")
    }
}

/// The module name of `node` (see [`module_name`]), from its namespace and name after remapping
/// (`--ros-args -r __ns:=/robot1`).
pub fn node_module_name(node: &r2r::Node) -> Result<String> {
    use lockstep_ros::RosContext as _;
    let namespace = node.namespace().ros_context("reading the node namespace")?;
    let name = node.name().ros_context("reading the node name")?;
    Ok(module_name(&namespace, &name))
}

/// The sidecar topic carrying the headers of `topic` (same relative/absolute form as `topic`).
pub fn header_topic(topic: &str) -> String {
    format!("{}{HEADER_TOPIC_SUFFIX}", topic.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_resolve_against_the_namespace() {
        assert_eq!(resolve_channel("/", "odom"), "/odom");
        assert_eq!(resolve_channel("", "odom"), "/odom");
        assert_eq!(resolve_channel("/robot1", "odom"), "/robot1/odom");
        assert_eq!(resolve_channel("/robot1/", "odom"), "/robot1/odom");
        assert_eq!(resolve_channel("/robot1", "/odom"), "/odom");
        assert_eq!(header_topic("cmd_vel"), "cmd_vel/lockstep_header");
        assert_eq!(header_topic("/a/b"), "/a/b/lockstep_header");
    }

    #[test]
    fn module_names_carry_the_namespace_without_the_leading_slash() {
        assert_eq!(module_name("/", "obstacle_fusion"), "obstacle_fusion");
        assert_eq!(module_name("", "obstacle_fusion"), "obstacle_fusion");
        assert_eq!(
            module_name("/robot1", "obstacle_fusion"),
            "robot1/obstacle_fusion"
        );
        assert_eq!(
            module_name("/fleet/robot2/", "obstacle_fusion"),
            "fleet/robot2/obstacle_fusion"
        );
        assert_eq!(
            step::step_service_name("robot1/obstacle_fusion"),
            "/robot1/obstacle_fusion/lockstep/step"
        );
        assert_eq!(
            step::step_service_name("obstacle_fusion"),
            "/obstacle_fusion/lockstep/step"
        );
        assert_eq!(
            topology_topic("robot1/obstacle_fusion"),
            "/lockstep/topology/robot1/obstacle_fusion"
        );
    }
}
