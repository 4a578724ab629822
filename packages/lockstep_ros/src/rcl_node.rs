//! An rcl context and node of our own, for what r2r 0.9.7 does not expose: graph queries about subscriptions
//! ([`crate::graph`]) and entities of types not compiled in ([`crate::generic`]). r2r keeps its own context
//! and node handles private, so these live in a second context of the process (same `ROS_DOMAIN_ID` and
//! middleware, its own DDS participant).

use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::sync::{Mutex, MutexGuard};

use r2r_rcl as rcl;

use crate::python_link;

/// An rcl call that failed, with rcl's own message.
#[derive(Debug, thiserror::Error)]
pub enum RclError {
    #[error("{call} failed (rcl return code {code}): {message}")]
    Rcl {
        call: &'static str,
        code: i32,
        message: String,
    },
    #[error("name `{0}` contains a NUL byte")]
    Nul(String),
}

/// `Err` with rcutils' error text (then reset) unless `code` is `RCL_RET_OK`.
pub(crate) fn check(call: &'static str, code: rcl::rcl_ret_t) -> Result<(), RclError> {
    if code == rcl::RCL_RET_OK as rcl::rcl_ret_t {
        return Ok(());
    }
    // SAFETY: rcutils keeps a thread-local error string; reading then resetting it is always allowed.
    let message = unsafe {
        let error = rcl::rcutils_get_error_string();
        let text = CStr::from_ptr(&error.str_ as *const c_char)
            .to_string_lossy()
            .into_owned();
        rcl::rcutils_reset_error();
        text
    };
    Err(RclError::Rcl { call, code, message })
}

pub(crate) fn c_string(text: &str) -> Result<CString, RclError> {
    CString::new(text).map_err(|_| RclError::Nul(text.to_owned()))
}

/// A private rcl context with one node in it. Both are heap-allocated and never move (rcl keeps pointers to
/// them); they are finalised, node first, on drop.
pub(crate) struct RclNode {
    context: *mut rcl::rcl_context_t,
    node: *mut rcl::rcl_node_t,
}

// rcl allows its node to be used from several threads for creating entities, publishing and graph queries.
unsafe impl Send for RclNode {}
unsafe impl Sync for RclNode {}

impl RclNode {
    /// Start a context (no command-line arguments: remappings of the process do not apply) and the node
    /// `name` in `namespace` (`/` or e.g. `/robot`).
    pub(crate) fn new(name: &str, namespace: &str) -> Result<Self, RclError> {
        python_link::keep();
        let c_name = c_string(name)?;
        let c_namespace = c_string(namespace)?;
        // SAFETY: the zero-initialised structures are what rcl's init functions expect; every pointer passed
        // lives through the call; context and node are leaked boxes, freed in `Drop` (or below on failure).
        unsafe {
            let context = Box::into_raw(Box::new(rcl::rcl_get_zero_initialized_context()));
            let mut options = rcl::rcl_get_zero_initialized_init_options();
            let init = check(
                "rcl_init_options_init",
                rcl::rcl_init_options_init(&mut options, rcl::rcutils_get_default_allocator()),
            )
            .and_then(|()| {
                // No arguments: rcl wants a null argv with argc 0.
                let init = rcl::rcl_init(0, std::ptr::null(), &options, context);
                rcl::rcl_init_options_fini(&mut options);
                check("rcl_init", init)
            });
            if let Err(e) = init {
                drop(Box::from_raw(context));
                return Err(e);
            }
            let node = Box::into_raw(Box::new(rcl::rcl_get_zero_initialized_node()));
            let node_options = rcl::rcl_node_get_default_options();
            let made = rcl::rcl_node_init(
                node,
                c_name.as_ptr(),
                c_namespace.as_ptr(),
                context,
                &node_options,
            );
            if let Err(e) = check("rcl_node_init", made) {
                rcl::rcl_shutdown(context);
                rcl::rcl_context_fini(context);
                drop(Box::from_raw(context));
                drop(Box::from_raw(node));
                return Err(e);
            }
            Ok(Self { context, node })
        }
    }

    pub(crate) fn node(&self) -> *mut rcl::rcl_node_t {
        self.node
    }

    /// Fully qualified name, e.g. `/robot/planner`.
    pub(crate) fn full_name(&self) -> String {
        // SAFETY: the node is valid; rcl returns NUL-terminated strings owned by the node (or null).
        let text = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        let (namespace, name) = unsafe {
            (
                text(rcl::rcl_node_get_namespace(self.node)),
                text(rcl::rcl_node_get_name(self.node)),
            )
        };
        full_node_name(&namespace, &name)
    }

    pub(crate) fn context(&self) -> *mut rcl::rcl_context_t {
        self.context
    }
}

/// `/ns` + `node` -> `/ns/node`; `/` + `node` -> `/node`.
pub fn full_node_name(namespace: &str, name: &str) -> String {
    format!("{}/{name}", namespace.trim_end_matches('/'))
}

/// Held while a DDS participant of this process is torn down. Fast DDS delivers discovery data between the
/// participants of one process directly (intra-process): a participant removing its endpoints calls into
/// the listener of another, so two participants torn down at once on two threads can each wait for the
/// other for ever. CI saw exactly that: the recorder's r2r node finalised on the main thread while its
/// generic node's last reference went on the bag-writer thread. Every teardown takes this lock first.
static TEARDOWN: Mutex<()> = Mutex::new(());

/// Serialise a participant teardown with every other one in the process (see [`TEARDOWN`]).
pub(crate) fn teardown_guard() -> MutexGuard<'static, ()> {
    TEARDOWN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Drop for RclNode {
    fn drop(&mut self) {
        let _serial = teardown_guard();
        // SAFETY: both were initialised in `new` and are finalised and freed once, node before context.
        unsafe {
            rcl::rcl_node_fini(self.node);
            rcl::rcl_shutdown(self.context);
            rcl::rcl_context_fini(self.context);
            drop(Box::from_raw(self.node));
            drop(Box::from_raw(self.context));
        }
    }
}
