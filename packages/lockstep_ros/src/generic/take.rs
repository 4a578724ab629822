//! The take thread: waits on every subscription of a generic node and hands what it takes to their sinks.

use std::sync::atomic::Ordering;
use std::time::Duration;

use r2r_rcl as rcl;

use crate::rcl_node::check;

use super::shared::{Shared, Subscription};

/// How long the take thread waits before looking at its stop flag and subscription list again.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// Wait on every subscription; on a wake-up take all that waits on the ready ones.
pub(super) fn take_loop(shared: &Shared) {
    // SAFETY: the wait set is zero-initialised, sized before each use and finalised at the end; the
    // subscriptions added stay valid while the lock is held (they are only freed in `Drop` for Shared).
    unsafe {
        let mut wait_set = rcl::rcl_get_zero_initialized_wait_set();
        let made = rcl::rcl_wait_set_init(
            &mut wait_set,
            0,
            1,
            0,
            0,
            0,
            0,
            shared.node.context(),
            rcl::rcutils_get_default_allocator(),
        );
        if check("rcl_wait_set_init", made).is_err() {
            return;
        }
        let mut buffer = rcl::rcutils_get_zero_initialized_uint8_array();
        rcl::rcutils_uint8_array_init(&mut buffer, 0, &rcl::rcutils_get_default_allocator());
        while !shared.stop.load(Ordering::SeqCst) {
            // Not waiting: the last wait set's handles are no longer in use.
            shared.finalise_retired();
            let Ok(subscriptions) = shared.subscriptions.lock() else {
                break;
            };
            rcl::rcl_wait_set_clear(&mut wait_set);
            rcl::rcl_wait_set_resize(&mut wait_set, subscriptions.len(), 1, 0, 0, 0, 0);
            rcl::rcl_wait_set_add_guard_condition(&mut wait_set, shared.guard, std::ptr::null_mut());
            for s in subscriptions.iter() {
                rcl::rcl_wait_set_add_subscription(&mut wait_set, s.handle, std::ptr::null_mut());
            }
            drop(subscriptions);
            let waited = rcl::rcl_wait(&mut wait_set, WAIT_SLICE.as_nanos() as i64);
            if waited != rcl::RCL_RET_OK as rcl::rcl_ret_t {
                continue; // timeout (or nothing ready): look at the flag and the list again
            }
            let Ok(mut subscriptions) = shared.subscriptions.lock() else {
                break;
            };
            let ready: &[*const rcl::rcl_subscription_t] = if wait_set.subscriptions.is_null() {
                &[] // no subscriptions yet: rcl leaves the array unallocated
            } else {
                std::slice::from_raw_parts(wait_set.subscriptions, wait_set.size_of_subscriptions)
            };
            // By handle, not position: the list may have changed while waiting (an unsubscribed handle is
            // not taken from again; it is finalised on the next turn).
            let mut ready: Vec<usize> = (ready.iter())
                .filter(|p| !p.is_null())
                .map(|p| *p as usize)
                .collect();
            ready.sort_unstable();
            for s in subscriptions.iter_mut() {
                if ready.binary_search(&(s.handle as usize)).is_ok() {
                    take_all(s, &mut buffer);
                }
            }
        }
        rcl::rcutils_uint8_array_fini(&mut buffer);
        rcl::rcl_wait_set_fini(&mut wait_set);
    }
}

/// Take every message waiting on `s` and hand each to its sink.
fn take_all(s: &mut Subscription, buffer: &mut rcl::rcl_serialized_message_t) {
    loop {
        // SAFETY: returns a plain zeroed struct.
        let mut info = unsafe { rcl::rmw_get_zero_initialized_message_info() };
        // SAFETY: `s.handle` is a valid subscription and `buffer` an initialised byte array rmw may grow.
        let taken =
            unsafe { rcl::rcl_take_serialized_message(s.handle, buffer, &mut info, std::ptr::null_mut()) };
        if taken != rcl::RCL_RET_OK as rcl::rcl_ret_t {
            return; // RCL_RET_SUBSCRIPTION_TAKE_FAILED: nothing more waits
        }
        // SAFETY: after a successful take, `buffer` holds `buffer_length` initialised bytes.
        let bytes = unsafe { std::slice::from_raw_parts(buffer.buffer, buffer.buffer_length) }.to_vec();
        (s.sink)(bytes);
    }
}
