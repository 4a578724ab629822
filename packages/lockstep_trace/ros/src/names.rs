//! The module name of a running node; the plain naming rules are `lockstep_trace::names`, re-exported here.

use crate::error::Result;

pub use lockstep_trace::names::{
    header_topic, module_name, resolve_channel, step_service_name, topology_topic, HEADER_TOPIC_SUFFIX,
    TOPOLOGY_TOPIC_PREFIX,
};

/// The module name of `node` (see [`module_name`]), from its namespace and name after remapping
/// (`--ros-args -r __ns:=/robot1`).
pub fn node_module_name(node: &r2r::Node) -> Result<String> {
    use lockstep_ros::RosContext as _;
    let namespace = node.namespace().ros_context("reading the node namespace")?;
    let name = node.name().ros_context("reading the node name")?;
    Ok(module_name(&namespace, &name))
}
