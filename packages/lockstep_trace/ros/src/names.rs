//! Topic, channel and module names shared by publishers, subscriptions and the step protocol.

use crate::error::Result;

/// Suffix of the sidecar topic that carries a channel's headers.
pub const HEADER_TOPIC_SUFFIX: &str = "/lockstep_header";

/// Prefix of the latched per-module topology topics.
pub const TOPOLOGY_TOPIC_PREFIX: &str = "/lockstep/topology/";

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
/// node's step service is then `/<module name>/lockstep/step` ([`crate::step::step_service_name`]) and its topology
/// is latched on `/lockstep/topology/<module name>` ([`crate::topology_topic`]).
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
