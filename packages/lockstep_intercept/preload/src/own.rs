//! The interceptor's own publishers and subscriptions, made on the traced node with the real rcl functions:
//! dependency headers, the latched wiring, the event log, and subscriptions to the headers of the node's
//! inputs. Messages go as serialized CDR (`lockstep_intercept::cdr`), so only the type support handles of
//! lockstep_interfaces are needed, loaded at run time.

use std::ffi::CString;
use std::sync::OnceLock;

use r2r_rcl::*;

use crate::real::real;

/// Messages of lockstep_interfaces the interceptor publishes or reads.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Header,
    Topology,
    Events,
    Grant,
    Done,
}

impl Kind {
    fn symbol(self) -> &'static str {
        match self {
            Kind::Header => "DependencyHeader",
            Kind::Topology => "ModuleTopology",
            Kind::Events => "NodeEvents",
            Kind::Grant => "EventGrant",
            Kind::Done => "EventDone",
        }
    }
}

struct TypeSupports {
    _library: libloading::Library,
    handles: [usize; 5],
}

/// The type support of `kind`, or `None` (said once) when lockstep_interfaces cannot be loaded.
fn type_support(kind: Kind) -> Option<*const rosidl_message_type_support_t> {
    static LOADED: OnceLock<Option<TypeSupports>> = OnceLock::new();
    let loaded = LOADED.get_or_init(|| match load_type_supports() {
        Ok(t) => Some(t),
        Err(e) => {
            crate::say(&format!(
                "cannot publish headers: {e} (source the workspace's setup, or scripts/env.sh)"
            ));
            None
        }
    });
    loaded
        .as_ref()
        .map(|t| t.handles[kind as usize] as *const rosidl_message_type_support_t)
}

fn load_type_supports() -> Result<TypeSupports, String> {
    const LIB: &str = "liblockstep_interfaces__rosidl_typesupport_c.so";
    let mut candidates = vec![LIB.to_owned()];
    if let Ok(prefixes) = std::env::var("AMENT_PREFIX_PATH") {
        candidates.extend(prefixes.split(':').map(|p| format!("{p}/lib/{LIB}")));
    }
    // SAFETY: loading a rosidl type support library runs no code with preconditions of ours.
    let library = candidates
        .iter()
        .find_map(|c| unsafe { libloading::Library::new(c) }.ok())
        .ok_or_else(|| format!("{LIB} not found on LD_LIBRARY_PATH or AMENT_PREFIX_PATH"))?;
    let mut handles = [0usize; 5];
    for kind in [
        Kind::Header,
        Kind::Topology,
        Kind::Events,
        Kind::Grant,
        Kind::Done,
    ] {
        let name = format!(
            "rosidl_typesupport_c__get_message_type_support_handle__lockstep_interfaces__msg__{}\0",
            kind.symbol()
        );
        // SAFETY: the symbol is rosidl's getter, a C function without arguments returning the handle.
        let handle = unsafe {
            let getter = library
                .get::<unsafe extern "C" fn() -> *const rosidl_message_type_support_t>(name.as_bytes())
                .map_err(|e| format!("{LIB}: {e}"))?;
            getter()
        };
        if handle.is_null() {
            return Err(format!("{LIB}: no type support for {}", kind.symbol()));
        }
        handles[kind as usize] = handle as usize;
    }
    Ok(TypeSupports {
        _library: library,
        handles,
    })
}

/// The QoS of what the interceptor publishes: reliable; latched (transient local, depth 1) for the wiring.
fn qos(mut qos: rmw_qos_profile_t, depth: usize, latched: bool) -> rmw_qos_profile_t {
    qos.history = rmw_qos_history_policy_e::RMW_QOS_POLICY_HISTORY_KEEP_LAST;
    qos.depth = depth;
    qos.reliability = rmw_qos_reliability_policy_e::RMW_QOS_POLICY_RELIABILITY_RELIABLE;
    if latched {
        qos.durability = rmw_qos_durability_policy_e::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
    }
    qos
}

/// A publisher of the interceptor's on a traced node.
pub struct OwnPublisher {
    handle: Box<rcl_publisher_t>,
}

// SAFETY: rcl publishers may be used from any thread; the interceptor's state serialises their use.
unsafe impl Send for OwnPublisher {}

impl OwnPublisher {
    /// A publisher of `kind` on `topic`, made on `node`.
    pub fn new(
        node: *const rcl_node_t,
        kind: Kind,
        topic: &str,
        depth: usize,
        latched: bool,
    ) -> Option<Self> {
        Self::of_type(node, type_support(kind)?, topic, depth, latched)
    }

    /// A publisher of the type `ts` on `topic`, made on `node`.
    pub fn of_type(
        node: *const rcl_node_t,
        ts: *const rosidl_message_type_support_t,
        topic: &str,
        depth: usize,
        latched: bool,
    ) -> Option<Self> {
        let topic_c = CString::new(topic).ok()?;
        // SAFETY: zero-initialised publisher, valid node (the hook's caller just created or uses it), valid type
        // support and options; on failure the publisher is left zero-initialised and dropped unused.
        unsafe {
            let mut handle = Box::new(rcl_get_zero_initialized_publisher());
            let mut options = rcl_publisher_get_default_options();
            options.qos = qos(options.qos, depth, latched);
            let init = real!(rcl_publisher_init: unsafe extern "C" fn(*mut rcl_publisher_t, *const rcl_node_t, *const rosidl_message_type_support_t, *const std::os::raw::c_char, *const rcl_publisher_options_t) -> rcl_ret_t);
            let ret = init(&mut *handle, node, ts, topic_c.as_ptr(), &options);
            if ret != RCL_RET_OK as rcl_ret_t {
                rcutils_reset_error();
                crate::say_once(
                    topic,
                    &format!("cannot create the publisher of {topic} (rcl error {ret})"),
                );
                return None;
            }
            Some(Self { handle })
        }
    }

    /// Publish serialized CDR.
    pub fn publish(&self, cdr: &[u8]) {
        let message = rcl_serialized_message_t {
            buffer: cdr.as_ptr() as *mut u8,
            buffer_length: cdr.len(),
            buffer_capacity: cdr.len(),
            // SAFETY: the default allocator is always valid; rcl does not free a message it publishes.
            allocator: unsafe { rcutils_get_default_allocator() },
        };
        let publish = real!(rcl_publish_serialized_message: unsafe extern "C" fn(*const rcl_publisher_t, *const rcl_serialized_message_t, *mut rmw_publisher_allocation_t) -> rcl_ret_t);
        // SAFETY: a valid publisher and a message whose buffer outlives the call.
        let ret = unsafe { publish(&*self.handle, &message, std::ptr::null_mut()) };
        if ret != RCL_RET_OK as rcl_ret_t {
            // SAFETY: resetting rcl's thread-local error state has no precondition.
            unsafe { rcutils_reset_error() };
        }
    }

    /// Finalize on `node` (before the node goes), once subscribers acknowledged what was published (a
    /// writer destroyed at once drops the last batch of events it just sent), waiting 1 s at most.
    pub fn fini(mut self, node: *mut rcl_node_t) {
        // SAFETY: a valid publisher; the wait only reads its state.
        if unsafe { rcl_publisher_wait_for_all_acked(&*self.handle, 1_000_000_000) }
            != RCL_RET_OK as rcl_ret_t
        {
            // SAFETY: resetting rcl's thread-local error state has no precondition.
            unsafe { rcutils_reset_error() };
        }
        let fini = real!(rcl_publisher_fini: unsafe extern "C" fn(*mut rcl_publisher_t, *mut rcl_node_t) -> rcl_ret_t);
        // SAFETY: the publisher was initialised on this node and is finalized once.
        if unsafe { fini(&mut *self.handle, node) } != RCL_RET_OK as rcl_ret_t {
            // SAFETY: as above.
            unsafe { rcutils_reset_error() };
        }
    }
}

/// A subscription of the interceptor's on a traced node: to the headers of one input topic, or to the grants
/// of a replay.
pub struct OwnSubscription {
    handle: Box<rcl_subscription_t>,
    buffer: rcutils_uint8_array_t,
}

// SAFETY: as OwnPublisher.
unsafe impl Send for OwnSubscription {}

impl OwnSubscription {
    pub fn new(node: *const rcl_node_t, kind: Kind, topic: &str) -> Option<Self> {
        let ts = type_support(kind)?;
        let topic_c = CString::new(topic).ok()?;
        // SAFETY: as OwnPublisher::new; the buffer is initialised by rcutils and finalized in fini.
        unsafe {
            let mut handle = Box::new(rcl_get_zero_initialized_subscription());
            let mut options = rcl_subscription_get_default_options();
            options.qos = qos(options.qos, 1000, false);
            let init = real!(rcl_subscription_init: unsafe extern "C" fn(*mut rcl_subscription_t, *const rcl_node_t, *const rosidl_message_type_support_t, *const std::os::raw::c_char, *const rcl_subscription_options_t) -> rcl_ret_t);
            if init(&mut *handle, node, ts, topic_c.as_ptr(), &options) != RCL_RET_OK as rcl_ret_t {
                rcutils_reset_error();
                crate::say_once(topic, &format!("cannot subscribe to {topic} (rcl error)"));
                return None;
            }
            let mut buffer = rcutils_get_zero_initialized_uint8_array();
            let allocator = rcutils_get_default_allocator();
            if rcutils_uint8_array_init(&mut buffer, 1024, &allocator) != RCL_RET_OK as i32 {
                return None;
            }
            Some(Self { handle, buffer })
        }
    }

    /// Whether a publisher is matched (for headers: the upstream is traced).
    pub fn has_publishers(&self) -> bool {
        let mut count = 0usize;
        // SAFETY: a valid subscription and an out pointer.
        let ret = unsafe { rcl_subscription_get_publisher_count(&*self.handle, &mut count) };
        ret == RCL_RET_OK as rcl_ret_t && count > 0
    }

    /// The next message waiting (serialized), without blocking.
    pub fn take(&mut self) -> Option<Vec<u8>> {
        let take = real!(rcl_take_serialized_message: unsafe extern "C" fn(*const rcl_subscription_t, *mut rcl_serialized_message_t, *mut rmw_message_info_t, *mut rmw_subscription_allocation_t) -> rcl_ret_t);
        // SAFETY: a valid subscription, an initialised buffer rmw may grow, a zeroed message info.
        unsafe {
            let mut info = rmw_get_zero_initialized_message_info();
            if take(&*self.handle, &mut self.buffer, &mut info, std::ptr::null_mut())
                != RCL_RET_OK as rcl_ret_t
            {
                rcutils_reset_error();
                return None;
            }
            Some(std::slice::from_raw_parts(self.buffer.buffer, self.buffer.buffer_length).to_vec())
        }
    }

    pub fn fini(mut self, node: *mut rcl_node_t) {
        let fini = real!(rcl_subscription_fini: unsafe extern "C" fn(*mut rcl_subscription_t, *mut rcl_node_t) -> rcl_ret_t);
        // SAFETY: initialised on this node, finalized once; the buffer was initialised by rcutils.
        unsafe {
            if fini(&mut *self.handle, node) != RCL_RET_OK as rcl_ret_t {
                rcutils_reset_error();
            }
            rcutils_uint8_array_fini(&mut self.buffer);
        }
    }
}
