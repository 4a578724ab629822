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
mod error;
mod names;
mod publisher;
pub mod step;
mod subscription;

pub use canonical::canonical_cdr;
pub use convert::{
    component_from_msg, component_to_msg, header_from_msg, header_to_msg, topology_from_msg, topology_to_msg,
};
pub use error::{Error, Result};
/// The ROS `Time` conversions headers use, from [`lockstep_ros::time`] (re-exported for existing callers).
pub use lockstep_ros::time::{ns_to_time, time_to_ns};
pub use names::topology_topic;
pub use names::{
    header_topic, module_name, node_module_name, resolve_channel, HEADER_TOPIC_SUFFIX, TOPOLOGY_TOPIC_PREFIX,
};
pub use publisher::{publish_topology, TracedPublisher};
pub use step::{Grant, Recent, StepOutputData, StepServer};
pub use subscription::{Traced, TracedSubscription, Upstream, DEFAULT_HEADER_TIMEOUT};

pub use lockstep_trace;
pub use r2r::lockstep_interfaces::msg::{ComponentTopology, DependencyHeader, ModuleTopology};
