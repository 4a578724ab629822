//! Publishing serialized CDR of a type named at run time.

use std::sync::Arc;

use r2r_rcl as rcl;

use crate::rcl_node::{c_string, check};
use crate::typesupport::MessageTypeSupport;

use super::error::GenericError;
use super::shared::Shared;

/// Publishes serialized CDR of one type on one topic.
pub struct GenericPublisher {
    handle: *mut rcl::rcl_publisher_t,
    topic: String,
    shared: Arc<Shared>,
}

// rcl_publish_serialized_message may be called from any thread.
unsafe impl Send for GenericPublisher {}
unsafe impl Sync for GenericPublisher {}

impl GenericPublisher {
    /// A publisher on `topic` (absolute name) with the type support `support`, on the node of `shared`.
    pub(super) fn new(
        shared: &Arc<Shared>,
        topic: &str,
        support: &MessageTypeSupport,
        qos: r2r::QosProfile,
    ) -> Result<Self, GenericError> {
        let c_topic = c_string(topic)?;
        // SAFETY: as for subscriptions; the publisher keeps the node alive through `shared`.
        let handle = unsafe {
            let handle = Box::into_raw(Box::new(rcl::rcl_get_zero_initialized_publisher()));
            let mut options = rcl::rcl_publisher_get_default_options();
            options.qos = qos.into();
            let made = rcl::rcl_publisher_init(
                handle,
                shared.node.node(),
                support.handle(),
                c_topic.as_ptr(),
                &options,
            );
            if let Err(e) = check("rcl_publisher_init", made) {
                drop(Box::from_raw(handle));
                return Err(GenericError::Rcl {
                    what: "publishing on",
                    topic: topic.to_owned(),
                    source: e,
                });
            }
            handle
        };
        Ok(Self {
            handle,
            topic: topic.to_owned(),
            shared: shared.clone(),
        })
    }

    /// Publish one message given as its serialized CDR bytes (with the 4-byte encapsulation header).
    pub fn publish(&self, cdr: &[u8]) -> Result<(), GenericError> {
        // rmw only reads the message; the buffer is borrowed for the call.
        let message = rcl::rcl_serialized_message_t {
            buffer: cdr.as_ptr().cast_mut(),
            buffer_length: cdr.len(),
            buffer_capacity: cdr.len(),
            // SAFETY: returns a plain struct of function pointers.
            allocator: unsafe { rcl::rcutils_get_default_allocator() },
        };
        // SAFETY: the publisher is valid until drop; `message` points to `cdr`, alive through the call.
        let sent =
            unsafe { rcl::rcl_publish_serialized_message(self.handle, &message, std::ptr::null_mut()) };
        check("rcl_publish_serialized_message", sent).map_err(|source| GenericError::Rcl {
            what: "publishing on",
            topic: self.topic.clone(),
            source,
        })
    }

    /// Wait until every matched reliable subscription acknowledged what was published, at most `timeout`;
    /// `false` on timeout (best-effort subscriptions acknowledge nothing and are not waited for).
    pub fn wait_for_all_acked(&self, timeout: std::time::Duration) -> bool {
        let nanos = i64::try_from(timeout.as_nanos()).unwrap_or(i64::MAX);
        // SAFETY: valid publisher; the call only blocks on the middleware.
        let waited = unsafe { rcl::rcl_publisher_wait_for_all_acked(self.handle, nanos) };
        if waited == rcl::RCL_RET_OK as rcl::rcl_ret_t {
            return true;
        }
        // Leave no error state behind for the next rcl call of this thread.
        // SAFETY: resetting rcutils' thread-local error state is always allowed.
        unsafe { rcl::rcutils_reset_error() };
        false
    }

    /// Subscriptions matched right now.
    pub fn subscription_count(&self) -> usize {
        let mut count = 0usize;
        // SAFETY: valid publisher; rcl writes the count.
        let got = unsafe { rcl::rcl_publisher_get_subscription_count(self.handle, &mut count) };
        if got == rcl::RCL_RET_OK as rcl::rcl_ret_t {
            count
        } else {
            0
        }
    }
}

impl Drop for GenericPublisher {
    fn drop(&mut self) {
        // SAFETY: initialised in `GenericNode::publisher`, finalised once, while the node is alive (`shared`).
        unsafe {
            rcl::rcl_publisher_fini(self.handle, self.shared.node.node());
            drop(Box::from_raw(self.handle));
        }
    }
}
