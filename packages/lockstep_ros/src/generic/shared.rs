//! What a generic node's handle and its take thread share: the rcl node, the subscriptions with their sinks,
//! the guard condition that wakes the thread, and the handles waiting to be finalised.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

use r2r_rcl as rcl;

use crate::rcl_node::RclNode;

/// Where a subscription's messages go: called on the take thread with each message's serialized CDR.
type Sink = Box<dyn FnMut(Vec<u8>) + Send>;

pub(super) struct Subscription {
    pub(super) id: SubscriptionId,
    pub(super) handle: *mut rcl::rcl_subscription_t,
    pub(super) sink: Sink,
}

/// Names one subscription of a [`GenericNode`], for [`GenericNode::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubscriptionId(pub(super) u64);

pub(super) struct Shared {
    pub(super) node: Arc<RclNode>,
    /// Wakes the take thread when a subscription is added or the node stops.
    pub(super) guard: *mut rcl::rcl_guard_condition_t,
    pub(super) subscriptions: Mutex<Vec<Subscription>>,
    /// Unsubscribed handles, finalised by the take thread when it is not waiting on them.
    pub(super) retired: Mutex<Vec<*mut rcl::rcl_subscription_t>>,
    pub(super) next_id: AtomicU64,
    pub(super) stop: AtomicBool,
}

// rcl entities may be used from several threads as done here: created under the mutex, waited on and taken
// from by the take thread only, the guard condition triggered from anywhere.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    /// Finalise unsubscribed handles. Only the take thread between waits, or `Drop`, calls this.
    ///
    /// # Safety
    /// No wait set in use may hold any retired handle.
    pub(super) unsafe fn finalise_retired(&self) {
        if let Ok(mut retired) = self.retired.lock() {
            for handle in retired.drain(..) {
                // SAFETY: each retired handle was initialised on this node, is in no wait set (the caller's
                // promise) and is finalised once (drained).
                unsafe {
                    rcl::rcl_subscription_fini(handle, self.node.node());
                    drop(Box::from_raw(handle));
                }
            }
        }
    }

    pub(super) fn wake(&self) {
        // SAFETY: the guard condition lives as long as `self`; triggering it is thread-safe.
        unsafe {
            rcl::rcl_trigger_guard_condition(self.guard);
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the take thread has stopped (it held a reference until then); every entity is finalised
        // once, before the node (dropped after this) and its context.
        unsafe {
            if let Ok(subscriptions) = self.subscriptions.get_mut() {
                for s in subscriptions.drain(..) {
                    rcl::rcl_subscription_fini(s.handle, self.node.node());
                    drop(Box::from_raw(s.handle));
                }
            }
            self.finalise_retired();
            rcl::rcl_guard_condition_fini(self.guard);
            drop(Box::from_raw(self.guard));
        }
    }
}
