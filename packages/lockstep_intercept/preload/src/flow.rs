//! Hooks on the data flow: publishing, taking, timers firing and waiting. Each forwards the call and
//! returns its result unchanged; on success it tells the tracker and sends what is due.

use std::ffi::c_void;

use lockstep_intercept::tracker::{Handle, Received};
use r2r_rcl::*;

use crate::key::key;
use crate::real::real;
use crate::state::{lock, State};
use crate::{digest, pace, thread_id, Entered, OK};

pub use crate::state::SERVICE_PERIOD;

/// After a message was published on `publisher` with payload digest `digest`.
fn published(publisher: Handle, digest: Option<u64>, what: &str) {
    let mut state = lock();
    let Some((node, topic)) = state.tracker.publisher(publisher) else {
        return;
    };
    if digest.is_none() {
        let topic = topic.to_owned();
        warn_undigested(&mut state, node, &topic, what);
    }
    let now = state.now();
    if let Some(output) = state
        .tracker
        .on_publish(publisher, thread_id(), now, digest.unwrap_or(0))
    {
        state.push_output(output, now.mono);
    }
    state.service(false);
}

fn warn_undigested(state: &mut State, node: Handle, topic: &str, what: &str) {
    if let Some((_, log)) = state.tracker.log_of(node) {
        log.warn(format!(
            "{what} on {topic} could not be digested: their headers carry digest 0 and pair with no data"
        ));
    }
}

fn type_support(state: &State, handle: Handle) -> *const rosidl_message_type_support_t {
    state.type_supports.get(&handle).copied().unwrap_or(0) as *const rosidl_message_type_support_t
}

#[no_mangle]
pub unsafe extern "C" fn rcl_publish(
    publisher: *const rcl_publisher_t,
    message: *const c_void,
    allocation: *mut rmw_publisher_allocation_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_publish: unsafe extern "C" fn(*const rcl_publisher_t, *const c_void, *mut rmw_publisher_allocation_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(publisher, message, allocation) };
    if ret == OK && entered.records() {
        let ts = type_support(&lock(), key(publisher));
        if !ts.is_null() {
            published(key(publisher), digest::of_message(message, ts), "messages");
        }
    }
    if ret == OK && entered.paces() {
        pace::published(key(publisher), |ts| pace::serialize(message, ts));
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_publish_serialized_message(
    publisher: *const rcl_publisher_t,
    message: *const rcl_serialized_message_t,
    allocation: *mut rmw_publisher_allocation_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_publish_serialized_message: unsafe extern "C" fn(*const rcl_publisher_t, *const rcl_serialized_message_t, *mut rmw_publisher_allocation_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(publisher, message, allocation) };
    if ret == OK && entered.records() {
        published(key(publisher), digest::of_bytes(message), "serialized messages");
    }
    if ret == OK && entered.paces() {
        // SAFETY: a serialized message handed to rcl holds `buffer_length` bytes at `buffer`.
        pace::published(key(publisher), |_| unsafe {
            let m = message.as_ref()?;
            (!m.buffer.is_null()).then(|| std::slice::from_raw_parts(m.buffer, m.buffer_length).to_vec())
        });
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_publish_loaned_message(
    publisher: *const rcl_publisher_t,
    message: *mut c_void,
    allocation: *mut rmw_publisher_allocation_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    // The loan goes back to the middleware with the call: digest (or keep) before.
    if entered.paces() {
        pace::published(key(publisher), |ts| pace::serialize(message, ts));
    }
    let digest = if entered.records() {
        let ts = type_support(&lock(), key(publisher));
        digest::of_message(message, ts)
    } else {
        None
    };
    let f = real!(rcl_publish_loaned_message: unsafe extern "C" fn(*const rcl_publisher_t, *mut c_void, *mut rmw_publisher_allocation_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(publisher, message, allocation) };
    if ret == OK && entered.records() {
        published(key(publisher), digest, "loaned messages");
    }
    ret
}

/// After a message was taken from `subscription`.
fn taken(subscription: Handle, digest: Option<u64>, info: *const rmw_message_info_t) {
    let mut state = lock();
    let Some((node, topic)) = state.tracker.subscription(subscription) else {
        return;
    };
    let topic = topic.to_owned();
    if digest.is_none() {
        warn_undigested(&mut state, node, &topic, "messages taken");
    }
    // SAFETY: the caller's message info, filled by the successful take.
    let (gid, sequence) = unsafe { info.as_ref() }
        .map(|i| {
            (
                i.publisher_gid.data.to_vec(),
                i.publication_sequence_number as i64,
            )
        })
        .unwrap_or_default();
    let received = Received {
        digest: digest.unwrap_or(0),
        publisher_gid: gid,
        publication_sequence_number: sequence,
        traced_upstream: state.traced_upstream(node, &topic),
    };
    let now = state.now();
    state.tracker.on_take(subscription, thread_id(), now, received);
    state.service(false);
}

#[no_mangle]
pub unsafe extern "C" fn rcl_take(
    subscription: *const rcl_subscription_t,
    message: *mut c_void,
    info: *mut rmw_message_info_t,
    allocation: *mut rmw_subscription_allocation_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.paces() {
        // SAFETY: the caller's arguments.
        if let Some(ret) = unsafe { pace::take(subscription, message, info) } {
            return ret;
        }
    }
    let f = real!(rcl_take: unsafe extern "C" fn(*const rcl_subscription_t, *mut c_void, *mut rmw_message_info_t, *mut rmw_subscription_allocation_t) -> rcl_ret_t);
    // The caller may pass no message info; the interceptor needs one.
    // SAFETY: a zeroed info is what rmw fills.
    let mut own_info = unsafe { rmw_get_zero_initialized_message_info() };
    let info_ptr = if info.is_null() && entered.records() {
        &mut own_info as *mut _
    } else {
        info
    };
    // SAFETY: forwarded, with an info of ours only where the caller passed none.
    let ret = unsafe { f(subscription, message, info_ptr, allocation) };
    if ret == OK && entered.records() {
        let ts = type_support(&lock(), key(subscription));
        if !ts.is_null() {
            taken(key(subscription), digest::of_message(message, ts), info_ptr);
        }
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_take_serialized_message(
    subscription: *const rcl_subscription_t,
    message: *mut rcl_serialized_message_t,
    info: *mut rmw_message_info_t,
    allocation: *mut rmw_subscription_allocation_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.paces() {
        // SAFETY: the caller's arguments.
        if let Some(ret) = unsafe { pace::take_serialized(subscription, message) } {
            return ret;
        }
    }
    let f = real!(rcl_take_serialized_message: unsafe extern "C" fn(*const rcl_subscription_t, *mut rcl_serialized_message_t, *mut rmw_message_info_t, *mut rmw_subscription_allocation_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(subscription, message, info, allocation) };
    if ret == OK && entered.records() && lock().tracker.subscription(key(subscription)).is_some() {
        taken(key(subscription), digest::of_bytes(message), info);
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_take_loaned_message(
    subscription: *const rcl_subscription_t,
    message: *mut *mut c_void,
    info: *mut rmw_message_info_t,
    allocation: *mut rmw_subscription_allocation_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.paces() && lock().tracker.is_paced(key(subscription)) {
        // A replayed node's inputs come from the replay, never as loans: its executor takes them by copy.
        return RCL_RET_SUBSCRIPTION_TAKE_FAILED as rcl_ret_t;
    }
    let f = real!(rcl_take_loaned_message: unsafe extern "C" fn(*const rcl_subscription_t, *mut *mut c_void, *mut rmw_message_info_t, *mut rmw_subscription_allocation_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(subscription, message, info, allocation) };
    if ret == OK && entered.records() && !message.is_null() {
        let ts = type_support(&lock(), key(subscription));
        // SAFETY: a successful take stored the loaned message's address.
        let loaned = unsafe { *message };
        taken(key(subscription), digest::of_message(loaned, ts), info);
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_take_sequence(
    subscription: *const rcl_subscription_t,
    count: usize,
    messages: *mut rmw_message_sequence_t,
    infos: *mut rmw_message_info_sequence_t,
    allocation: *mut rmw_subscription_allocation_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.paces() && lock().tracker.is_paced(key(subscription)) {
        // A replayed node gets its inputs one at a time, by rcl_take.
        return RCL_RET_SUBSCRIPTION_TAKE_FAILED as rcl_ret_t;
    }
    let f = real!(rcl_take_sequence: unsafe extern "C" fn(*const rcl_subscription_t, usize, *mut rmw_message_sequence_t, *mut rmw_message_info_sequence_t, *mut rmw_subscription_allocation_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(subscription, count, messages, infos, allocation) };
    if ret == OK && entered.records() {
        let ts = type_support(&lock(), key(subscription));
        // SAFETY: a successful take filled `size` messages and as many infos.
        if let (Some(messages), Some(infos)) = unsafe { (messages.as_ref(), infos.as_ref()) } {
            for i in 0..messages.size.min(infos.size) {
                let (message, info) = unsafe { (*messages.data.add(i), infos.data.add(i)) };
                taken(key(subscription), digest::of_message(message, ts), info);
            }
        }
    }
    ret
}

fn timer_fired(timer: *mut rcl_timer_t) {
    let mut state = lock();
    let now = state.now();
    state.tracker.on_timer(key(timer), thread_id(), now);
}

#[no_mangle]
pub unsafe extern "C" fn rcl_timer_call(timer: *mut rcl_timer_t) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_timer_call: unsafe extern "C" fn(*mut rcl_timer_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(timer) };
    if ret == OK && entered.records() {
        timer_fired(timer);
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_timer_call_with_info(
    timer: *mut rcl_timer_t,
    info: *mut rcl_timer_call_info_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_timer_call_with_info: unsafe extern "C" fn(*mut rcl_timer_t, *mut rcl_timer_call_info_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(timer, info) };
    if ret == OK && entered.records() {
        timer_fired(timer);
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_wait(wait_set: *mut rcl_wait_set_t, timeout: i64) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.paces() {
        let f = real!(rcl_wait: unsafe extern "C" fn(*mut rcl_wait_set_t, i64) -> rcl_ret_t);
        // SAFETY: the caller's wait set and timeout.
        return unsafe { pace::wait(wait_set, timeout, f) };
    }
    let mut timeout = timeout;
    if entered.records() {
        let mut state = lock();
        state.tracker.on_wait(thread_id());
        state.service(false);
        // While something waits to be sent, wake up in time to send it (the node sees a wait that timed out,
        // as with any timeout; its callbacks see nothing).
        if state.has_work() {
            let period = i64::try_from(SERVICE_PERIOD.as_nanos()).unwrap_or(i64::MAX);
            if timeout < 0 || timeout > period {
                timeout = period;
            }
        }
    }
    let f = real!(rcl_wait: unsafe extern "C" fn(*mut rcl_wait_set_t, i64) -> rcl_ret_t);
    // SAFETY: forwarded, the timeout shortened at most.
    unsafe { f(wait_set, timeout) }
}

#[no_mangle]
pub unsafe extern "C" fn rcl_timer_is_ready(timer: *const rcl_timer_t, is_ready: *mut bool) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.paces() && !is_ready.is_null() {
        if let Some(ready) = pace::timer_ready(key(timer)) {
            // SAFETY: the caller's out pointer, checked non-null.
            unsafe { *is_ready = ready };
            return OK;
        }
    }
    let f = real!(rcl_timer_is_ready: unsafe extern "C" fn(*const rcl_timer_t, *mut bool) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    unsafe { f(timer, is_ready) }
}
