//! A client of a service whose type is named at run time, that sends the requests recorded in service
//! introspection events (`<pkg>/srv/<Service>_Event`, and an action's `_SendGoal_Event` and the like), as
//! rosbag2's player does with `--publish-service-requests`.
//!
//! rcl sends a request from its C struct, so the recorded event is turned back into its struct with the
//! event type's introspection support (its size and init/fini functions) and `rmw_deserialize`; the request
//! is the event's `request` field, a sequence of at most one. Responses are taken (and dropped) as they come;
//! [`GenericClient::wait_for_responses`] waits until every request sent was answered, so that a process that
//! ends after its last request does not end before the request left.

use std::alloc::Layout;
use std::ffi::c_void;
use std::sync::Arc;

use r2r_rcl as rcl;

use crate::rcl_node::{c_string, check};
use crate::typesupport::more::{MessageLayout, ServiceTypeSupport};
use crate::typesupport::MessageTypeSupport;

use super::error::GenericError;
use super::shared::Shared;

/// The C layout of a rosidl sequence field (`rosidl_runtime_c__<Type>__Sequence`).
#[repr(C)]
struct Sequence {
    data: *mut c_void,
    size: usize,
    capacity: usize,
}

/// A client of one service, sending requests taken from its recorded introspection events.
pub struct GenericClient {
    handle: *mut rcl::rcl_client_t,
    service: String,
    event_support: MessageTypeSupport,
    event_layout: MessageLayout,
    response_layout: MessageLayout,
    /// Requests sent and not answered yet.
    pending: u64,
    shared: Arc<Shared>,
}

// rcl_send_request may be called from any thread, one call at a time (callers hold it behind `&mut`).
unsafe impl Send for GenericClient {}

impl GenericClient {
    /// A client of `service` (absolute name) with service support `support`; `event_support` and
    /// `event_layout` are those of the service's event type.
    pub(super) fn new(
        shared: &Arc<Shared>,
        service: &str,
        support: &ServiceTypeSupport,
        event_support: MessageTypeSupport,
        event_layout: MessageLayout,
        response_layout: MessageLayout,
    ) -> Result<Self, GenericError> {
        let c_service = c_string(service)?;
        // SAFETY: a zero-initialised client initialised on the node of `shared`, which it keeps alive.
        let handle = unsafe {
            let handle = Box::into_raw(Box::new(rcl::rcl_get_zero_initialized_client()));
            let options = rcl::rcl_client_get_default_options();
            let made = rcl::rcl_client_init(
                handle,
                shared.node.node(),
                support.handle(),
                c_service.as_ptr(),
                &options,
            );
            if let Err(e) = check("rcl_client_init", made) {
                drop(Box::from_raw(handle));
                return Err(GenericError::Rcl {
                    what: "creating a client of",
                    topic: service.to_owned(),
                    source: e,
                });
            }
            handle
        };
        Ok(Self {
            handle,
            service: service.to_owned(),
            event_support,
            event_layout,
            response_layout,
            pending: 0,
            shared: shared.clone(),
        })
    }

    /// Whether a server of the service is matched now.
    pub fn server_ready(&self) -> bool {
        let mut ready = false;
        // SAFETY: valid client and node; rcl writes the flag.
        let asked =
            unsafe { rcl::rcl_service_server_is_available(self.shared.node.node(), self.handle, &mut ready) };
        asked == rcl::RCL_RET_OK as rcl::rcl_ret_t && ready
    }

    /// Send the request of the recorded event `event_cdr` (serialized, with its encapsulation header).
    /// `Ok(false)`: the event holds no request (a response event, or introspection of metadata only).
    pub fn send_event_request(&mut self, event_cdr: &[u8]) -> Result<bool, GenericError> {
        let event = OwnedMessage::deserialize(self.event_layout, self.event_support, event_cdr)
            .map_err(|source| self.error("reading a recorded event of", source))?;
        let Some(offset) = self.event_layout.offset_of("request") else {
            return Ok(false);
        };
        // SAFETY: the event struct has a `request` sequence field at that offset.
        let request = unsafe { &*(event.ptr.add(offset) as *const Sequence) };
        if request.size == 0 || request.data.is_null() {
            return Ok(false);
        }
        let mut sequence = 0i64;
        // SAFETY: valid client; `request.data` is a request struct of the client's service type, alive with
        // `event`; rcl serializes it during the call.
        let sent = unsafe { rcl::rcl_send_request(self.handle, request.data, &mut sequence) };
        check("rcl_send_request", sent).map_err(|source| self.error("sending a request to", source))?;
        self.pending += 1;
        self.take_responses();
        Ok(true)
    }

    /// Take (and drop) every response that arrived.
    fn take_responses(&mut self) {
        loop {
            let Ok(response) = OwnedMessage::empty(self.response_layout) else {
                return;
            };
            // SAFETY: rmw_request_id_t is plain data rcl fills in.
            let mut header: rcl::rmw_request_id_t = unsafe { std::mem::zeroed() };
            // SAFETY: valid client; `response` is an initialised struct of the service's response type.
            let took = unsafe { rcl::rcl_take_response(self.handle, &mut header, response.ptr.cast()) };
            if took != rcl::RCL_RET_OK as rcl::rcl_ret_t {
                // Nothing waiting (or a failed take): leave no error state for the next rcl call.
                // SAFETY: resetting rcutils' thread-local error state is always allowed.
                unsafe { rcl::rcutils_reset_error() };
                return;
            }
            self.pending = self.pending.saturating_sub(1);
        }
    }

    /// Wait until every request sent was answered, at most `timeout`; the number still unanswered.
    pub fn wait_for_responses(&mut self, timeout: std::time::Duration) -> u64 {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            self.take_responses();
            if self.pending == 0 || std::time::Instant::now() >= deadline {
                return self.pending;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    fn error(&self, what: &'static str, source: crate::rcl_node::RclError) -> GenericError {
        GenericError::Rcl {
            what,
            topic: self.service.clone(),
            source,
        }
    }
}

impl Drop for GenericClient {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`, finalised once, while the node is alive (`shared`).
        unsafe {
            rcl::rcl_client_fini(self.handle, self.shared.node.node());
            drop(Box::from_raw(self.handle));
        }
    }
}

/// A message's C struct made from serialized CDR, finalised and freed on drop.
struct OwnedMessage {
    ptr: *mut u8,
    layout: Layout,
    message: MessageLayout,
}

impl OwnedMessage {
    fn deserialize(
        message: MessageLayout,
        support: MessageTypeSupport,
        cdr: &[u8],
    ) -> Result<Self, crate::rcl_node::RclError> {
        let owned = Self::empty(message)?;
        let serialized = rcl::rcl_serialized_message_t {
            buffer: cdr.as_ptr().cast_mut(),
            buffer_length: cdr.len(),
            buffer_capacity: cdr.len(),
            // SAFETY: returns a plain struct of function pointers.
            allocator: unsafe { rcl::rcutils_get_default_allocator() },
        };
        // SAFETY: rmw only reads `serialized` and fills the initialised struct of the same type.
        let done = unsafe { rcl::rmw_deserialize(&serialized, support.handle(), owned.ptr.cast()) };
        check("rmw_deserialize", done)?;
        Ok(owned)
    }

    /// A new struct of the type, initialised by its own init function.
    fn empty(message: MessageLayout) -> Result<Self, crate::rcl_node::RclError> {
        let members = message.members();
        let layout = Layout::from_size_align(members.size_of_.max(1), 16).map_err(|e| {
            crate::rcl_node::RclError::Rcl {
                call: "allocating a message",
                code: -1,
                message: e.to_string(),
            }
        })?;
        // SAFETY: a fresh zeroed allocation of the struct's size, initialised by its own init function.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        if let Some(init) = members.init_function {
            // SAFETY: `ptr` holds `size_of_` zeroed bytes, aligned beyond any field's alignment.
            unsafe {
                init(
                    ptr.cast(),
                    rcl::rosidl_runtime_c__message_initialization::ROSIDL_RUNTIME_C_MSG_INIT_ALL,
                )
            };
        }
        Ok(Self { ptr, layout, message })
    }
}

impl Drop for OwnedMessage {
    fn drop(&mut self) {
        // SAFETY: initialised in `deserialize`; finalised and freed once.
        unsafe {
            if let Some(fini) = self.message.members().fini_function {
                fini(self.ptr.cast());
            }
            std::alloc::dealloc(self.ptr, self.layout);
        }
    }
}
