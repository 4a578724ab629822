//! Who publishes and who subscribes to a topic, from the ROS graph.
//!
//! r2r 0.9.7 offers `get_publishers_info_by_topic` but no subscriptions counterpart, and keeps its rcl node
//! handle private. [`GraphProbe`] is a small rcl node of our own (its own rcl context, through `r2r_rcl`),
//! used only to ask the graph `rcl_get_{publishers,subscriptions}_info_by_topic`. An endpoint whose node
//! name has not reached the probe yet (rmw reports `_NODE_NAME_UNKNOWN_` until the node's graph message
//! arrives) is left out; ask again later. Its name starts with `_`, which hides it
//! from `ros2 node list`; it creates no publishers or subscriptions, so it changes no one's graph view.

use std::ffi::CStr;
use std::os::raw::c_char;
use std::sync::Arc;

use r2r_rcl as rcl;

pub use crate::rcl_node::full_node_name;
use crate::rcl_node::{c_string, check, RclError, RclNode};

/// One endpoint (publisher or subscription) of a topic, as the graph reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    /// Fully qualified name of the node owning the endpoint, e.g. `/robot/planner`.
    pub node: String,
    /// Message type, e.g. `std_msgs/msg/String`.
    pub type_name: String,
    /// The type's description hash as rosbag2 stores it (`RIHS01_<64 hex digits>`), empty when the
    /// middleware reports none.
    pub type_hash: String,
}

/// What can go wrong asking the graph.
pub type GraphError = RclError;

/// A private rcl context and node for graph queries (its own, or a [`crate::generic::GenericNode`]'s).
pub struct GraphProbe {
    node: Arc<RclNode>,
}

impl GraphProbe {
    /// Start the probe's context (same `ROS_DOMAIN_ID` and middleware as the process's nodes) and node
    /// `_<name>_graph_<pid>`.
    pub fn new(name: &str) -> Result<Self, GraphError> {
        let node = RclNode::new(&format!("_{name}_graph_{}", std::process::id()), "/")?;
        Ok(Self { node: Arc::new(node) })
    }

    /// A probe asking through an existing node (see [`crate::generic::GenericNode::graph_probe`]).
    pub(crate) fn on(node: Arc<RclNode>) -> Self {
        Self { node }
    }

    /// The subscriptions of `topic` (a fully qualified name), sorted by node name.
    pub fn subscriptions(&self, topic: &str) -> Result<Vec<Endpoint>, GraphError> {
        self.endpoints(topic, Kind::Subscriptions)
    }

    /// The publishers of `topic` (a fully qualified name), sorted by node name.
    pub fn publishers(&self, topic: &str) -> Result<Vec<Endpoint>, GraphError> {
        self.endpoints(topic, Kind::Publishers)
    }

    /// The type description hash (`RIHS01_<hex>`) the publishers of `topic` report, those whose node
    /// name has not arrived yet included (the hash comes with the endpoint): the smallest one if they
    /// differ, `None` while no publisher reports one.
    pub fn publisher_type_hash(&self, topic: &str) -> Result<Option<String>, GraphError> {
        let hashes = self.query(topic, Kind::Publishers, |e| {
            // SAFETY: `e` is an element of the array rcl filled, read while the array is valid.
            unsafe { endpoint(e.node_namespace, e.node_name, e.topic_type, &e.topic_type_hash) }.type_hash
        })?;
        Ok(hashes.into_iter().filter(|h| !h.is_empty()).min())
    }

    /// Every service of the graph with its types (`rcl_get_service_names_and_types`), sorted by name.
    pub fn services(&self) -> Result<Vec<(String, Vec<String>)>, GraphError> {
        let text = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: rcutils string arrays hold NUL-terminated strings while the array lives.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        // SAFETY: `found` is zero-initialised as rcl requires, filled by rcl, read while valid and finalised
        // before it goes out of scope.
        let mut services = unsafe {
            let mut allocator = rcl::rcutils_get_default_allocator();
            let mut found = rcl::rmw_get_zero_initialized_names_and_types();
            let got = rcl::rcl_get_service_names_and_types(self.node.node(), &mut allocator, &mut found);
            let mut services = Vec::new();
            if got == rcl::RCL_RET_OK as rcl::rcl_ret_t && !found.names.data.is_null() {
                let names = std::slice::from_raw_parts(found.names.data, found.names.size);
                for (i, name) in names.iter().enumerate() {
                    let types = if found.types.is_null() {
                        Vec::new()
                    } else {
                        let t = &*found.types.add(i);
                        if t.data.is_null() {
                            Vec::new()
                        } else {
                            std::slice::from_raw_parts(t.data, t.size)
                                .iter()
                                .map(|p| text(*p))
                                .collect()
                        }
                    };
                    services.push((text(*name), types));
                }
            }
            rcl::rcl_names_and_types_fini(&mut found);
            check("rcl_get_service_names_and_types", got)?;
            services
        };
        services.sort();
        Ok(services)
    }

    fn endpoints(&self, topic: &str, kind: Kind) -> Result<Vec<Endpoint>, GraphError> {
        let mut endpoints: Vec<Endpoint> = self
            .query(topic, kind, |e| {
                // SAFETY: `e` is an element of the array rcl filled, read while the array is valid.
                let known = !e.node_name.is_null() && unsafe { CStr::from_ptr(e.node_name) } != UNKNOWN_NODE;
                // SAFETY: as above.
                known.then(|| unsafe {
                    endpoint(e.node_namespace, e.node_name, e.topic_type, &e.topic_type_hash)
                })
            })?
            .into_iter()
            .flatten()
            .collect();
        endpoints.sort();
        Ok(endpoints)
    }

    /// `rcl_get_{publishers,subscriptions}_info_by_topic` of `topic`, each endpoint mapped by `each`.
    fn query<T>(
        &self,
        topic: &str,
        kind: Kind,
        each: impl Fn(&rcl::rmw_topic_endpoint_info_t) -> T,
    ) -> Result<Vec<T>, GraphError> {
        let (call, query) = match kind {
            Kind::Publishers => (
                "rcl_get_publishers_info_by_topic",
                rcl::rcl_get_publishers_info_by_topic as Query,
            ),
            Kind::Subscriptions => (
                "rcl_get_subscriptions_info_by_topic",
                rcl::rcl_get_subscriptions_info_by_topic as Query,
            ),
        };
        let c_topic = c_string(topic)?;
        // SAFETY: `info` is zero-initialised as rcl requires, filled by rcl with `allocator`, read while valid
        // and finalised with the same allocator before it goes out of scope.
        let endpoints = unsafe {
            let mut allocator = rcl::rcutils_get_default_allocator();
            let mut info = rcl::rmw_get_zero_initialized_topic_endpoint_info_array();
            let got = query(
                self.node.node(),
                &mut allocator,
                c_topic.as_ptr(),
                false,
                &mut info,
            );
            let endpoints = if got == rcl::RCL_RET_OK as rcl::rcl_ret_t && !info.info_array.is_null() {
                std::slice::from_raw_parts(info.info_array, info.size)
                    .iter()
                    .map(&each)
                    .collect()
            } else {
                Vec::new()
            };
            rcl::rmw_topic_endpoint_info_array_fini(&mut info, &mut allocator);
            check(call, got)?;
            endpoints
        };
        Ok(endpoints)
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Publishers,
    Subscriptions,
}

/// `rcl_get_publishers_info_by_topic` and `rcl_get_subscriptions_info_by_topic` share this signature.
type Query = unsafe extern "C" fn(
    *const rcl::rcl_node_t,
    *mut rcl::rcutils_allocator_t,
    *const c_char,
    bool,
    *mut rcl::rcl_topic_endpoint_info_array_t,
) -> rcl::rcl_ret_t;

/// What rmw reports as the node name of an endpoint whose node it has not heard of yet.
const UNKNOWN_NODE: &CStr = c"_NODE_NAME_UNKNOWN_";

/// Build an [`Endpoint`] from rmw's C strings (any of which may be null) and type hash.
unsafe fn endpoint(
    namespace: *const c_char,
    name: *const c_char,
    type_name: *const c_char,
    type_hash: &rcl::rosidl_type_hash_t,
) -> Endpoint {
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: rmw hands out NUL-terminated strings that live as long as the info array.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    Endpoint {
        node: full_node_name(&text(namespace), &text(name)),
        type_name: text(type_name),
        type_hash: rihs_text(type_hash.version, &type_hash.value),
    }
}

/// A type description hash as rosbag2 writes it in metadata.yaml (`RIHS01_` and the hash in lowercase
/// hex, as `rosidl_stringify_type_hash` does); empty for version 0 (no hash known).
pub fn rihs_text(version: u8, value: &[u8]) -> String {
    if version == 0 {
        return String::new();
    }
    let mut text = format!("RIHS{version:02}_");
    for byte in value {
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{full_node_name, rihs_text};

    #[test]
    fn type_hashes_read_as_rosbag2_writes_them() {
        let value: Vec<u8> = (0..32).collect();
        assert_eq!(
            rihs_text(1, &value),
            "RIHS01_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
        );
        assert_eq!(rihs_text(0, &value), "");
    }

    #[test]
    fn node_names_are_fully_qualified() {
        assert_eq!(full_node_name("/", "talker"), "/talker");
        assert_eq!(full_node_name("/robot", "talker"), "/robot/talker");
        assert_eq!(full_node_name("/robot/", "talker"), "/robot/talker");
    }
}
