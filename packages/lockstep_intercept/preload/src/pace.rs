//! Replay mode (`LOCKSTEP_INTERCEPT=replay`): the node runs only what the lock-step replay grants.
//!
//! The replay sends one event at a time on `<node>/lockstep/grant` (`EventGrant`: take this message, fire
//! this timer) and waits for the answer on `<node>/lockstep/done`. The node's data subscriptions and timers
//! never look ready to its executor by themselves: `rcl_wait` waits on everything else (guard conditions,
//! parameter services, /clock, services and clients), looks for a grant every [`POLL`], and when one names an
//! entity of the wait set it returns with only that entity ready, with every ROS clock of the process set to
//! the event's recorded time. The take from that subscription gets the granted message (deserialized by
//! rmw into the node's own message); a take from any other data subscription finds nothing. What the
//! callback publishes is kept (serialized) and still published; when the thread calls `rcl_wait` again the
//! callback is over, and the answer carries what it published.
//!
//! Messages that reach the node's subscriptions over DDS meanwhile stay in the middleware's queues, bounded
//! by each subscription's depth, and are never taken: the replay delivers every input itself.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lockstep_intercept::cdr;
use lockstep_intercept::events::EventKind;
use lockstep_intercept::names::is_infrastructure_topic;
use lockstep_intercept::pacer::Output;
use lockstep_intercept::tracker::Handle;
use r2r_rcl::*;

use crate::key::key;
use crate::state::{lock, State};
use crate::waitset::Snapshot;
use crate::{digest, thread_id, OK};

/// How often a waiting thread looks for a grant.
const POLL: Duration = Duration::from_millis(1);

const TAKE_FAILED: rcl_ret_t = RCL_RET_SUBSCRIPTION_TAKE_FAILED as rcl_ret_t;
const TIMEOUT: rcl_ret_t = RCL_RET_TIMEOUT as rcl_ret_t;

/// rcl's storage of a ROS clock's override (`rcl_ros_clock_storage_t` in rcl's time.c): what `clock->data`
/// points at for an `RCL_ROS_TIME` clock.
#[repr(C)]
struct RosClockStorage {
    current_time: AtomicU64,
    active: bool,
}

/// Every ROS clock of the process reads `ns` from now on (the override rcl uses for simulated time; set
/// directly, so no time-jump callback runs: the interceptor decides which timer is ready).
fn set_ros_time(state: &State, ns: i64) {
    for clock in &state.ros_clocks {
        let storage = clock.0.data as *mut RosClockStorage;
        if storage.is_null() {
            continue;
        }
        // SAFETY: an RCL_ROS_TIME clock's data is its storage, alive until rcl_clock_fini (whose hook removes
        // the clock from the list first); rcl reads it the same way.
        unsafe {
            (*storage).current_time.store(ns.max(0) as u64, Ordering::SeqCst);
            std::ptr::addr_of_mut!((*storage).active).write_volatile(true);
        }
    }
}

/// Take the next grant, if none is under way, and resolve what it names.
fn poll_grants(state: &mut State) {
    if !state.pacer.is_idle() {
        return;
    }
    let nodes: Vec<Handle> = state.own.keys().copied().collect();
    for node in nodes {
        let Some(bytes) = state
            .own
            .get_mut(&node)
            .and_then(|o| o.grants.as_mut())
            .and_then(|g| g.take())
        else {
            continue;
        };
        let grant = match cdr::decode_grant(&bytes) {
            Ok(g) => g,
            Err(e) => {
                crate::say(&format!("a grant of the replay cannot be read: {e}"));
                continue;
            }
        };
        let target = grant.target().ok().and_then(|t| state.tracker.find(node, t));
        if let Some(refusal) = state.pacer.offer(node, grant, target) {
            state.send_done(&refusal);
        }
        return;
    }
}

/// `rcl_wait` in replay mode. `real` is rcl's.
///
/// # Safety
/// The caller's wait set and timeout, as rcl_wait takes them.
pub unsafe fn wait(
    ws: *mut rcl_wait_set_t,
    timeout: i64,
    real: unsafe extern "C" fn(*mut rcl_wait_set_t, i64) -> rcl_ret_t,
) -> rcl_ret_t {
    let thread = thread_id();
    // SAFETY: the caller's wait set, valid or null (rcl_wait's contract).
    let Some(saved) = (unsafe { Snapshot::take(ws) }) else {
        // SAFETY: forwarded: rcl reports what is wrong with it.
        return unsafe { real(ws, timeout) };
    };
    {
        let mut state = lock();
        if let Some(done) = state.pacer.finish(thread) {
            state.send_done(&done);
        }
        state.open_grants();
        if !saved.keys().any(|h| state.tracker.is_paced(h)) {
            drop(state);
            // SAFETY: forwarded unchanged.
            return unsafe { real(ws, timeout) };
        }
    }
    let deadline = u64::try_from(timeout)
        .ok()
        .map(|ns| Instant::now() + Duration::from_nanos(ns));
    loop {
        let paced: Vec<Handle> = {
            let mut state = lock();
            poll_grants(&mut state);
            if let Some((target, ros_time_ns)) = state.pacer.deliver(thread, |h| saved.contains(h)) {
                set_ros_time(&state, ros_time_ns);
                drop(state);
                // SAFETY: the caller's wait set, refilled with what it held.
                return unsafe { saved.report(ws, |_, h| h == Some(target)) };
            }
            saved.keys().filter(|&h| state.tracker.is_paced(h)).collect()
        };
        // SAFETY: the caller's wait set, refilled without the paced entities.
        if let Err(ret) = unsafe { saved.refill(ws, |h| !paced.contains(&h)) } {
            return ret;
        }
        let slice = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()).min(POLL),
            None => POLL,
        };
        let slice_ns = i64::try_from(slice.as_nanos()).unwrap_or(i64::MAX);
        // SAFETY: the caller's wait set, its paced entries left out.
        let ret = unsafe { real(ws, slice_ns) };
        if ret == OK {
            // Something the replay does not pace is ready: report it where the caller put it.
            // SAFETY: the wait set the real wait just filled.
            let ready = unsafe { Snapshot::ready(ws) };
            // SAFETY: the caller's wait set, refilled with what it held.
            return unsafe { saved.report(ws, |address, _| ready.contains(&address)) };
        }
        if ret != TIMEOUT {
            return ret;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            // SAFETY: as above; nothing is ready.
            let _ = unsafe { saved.report(ws, |_, _| false) };
            return TIMEOUT;
        }
    }
}

/// `rcl_take` in replay mode from subscription `sub`: the granted message, deserialized into `message` by
/// rmw with the subscription's type support; nothing for any other paced subscription. `None`: not paced,
/// forward the call.
///
/// # Safety
/// The caller's arguments to rcl_take.
pub unsafe fn take(
    sub: *const rcl_subscription_t,
    message: *mut c_void,
    info: *mut rmw_message_info_t,
) -> Option<rcl_ret_t> {
    let mut state = lock();
    let handle = key(sub);
    if !state.tracker.is_paced(handle) {
        return None;
    }
    let ts = state.type_supports.get(&handle).copied().unwrap_or(0) as *const rosidl_message_type_support_t;
    let Some((grant, data)) = state.pacer.take(handle) else {
        return Some(TAKE_FAILED);
    };
    let stamp = grant.ros_time_ns;
    let sequence = grant.sequence_number;
    drop(state);
    // SAFETY: the caller's message of the subscription's type.
    if !unsafe { deserialize(&data, ts, message) } {
        return Some(TAKE_FAILED);
    }
    // SAFETY: the caller's message info, if any.
    if let Some(info) = unsafe { info.as_mut() } {
        // SAFETY: a zeroed info has no precondition.
        *info = unsafe { rmw_get_zero_initialized_message_info() };
        info.source_timestamp = stamp;
        info.received_timestamp = stamp;
        info.publication_sequence_number = u64::try_from(sequence).unwrap_or(0);
        info.reception_sequence_number = u64::try_from(sequence).unwrap_or(0);
    }
    Some(OK)
}

/// `rcl_take_serialized_message` in replay mode: the granted bytes, copied into the caller's buffer.
///
/// # Safety
/// The caller's arguments to rcl_take_serialized_message.
pub unsafe fn take_serialized(
    sub: *const rcl_subscription_t,
    message: *mut rcl_serialized_message_t,
) -> Option<rcl_ret_t> {
    let mut state = lock();
    let handle = key(sub);
    if !state.tracker.is_paced(handle) {
        return None;
    }
    let Some((_, data)) = state.pacer.take(handle) else {
        return Some(TAKE_FAILED);
    };
    // SAFETY: the caller's initialised serialized message; rcutils grows it.
    unsafe {
        let message = message.as_mut()?;
        if message.buffer_capacity < data.len()
            && rcutils_uint8_array_resize(message, data.len()) != RCL_RET_OK as i32
        {
            rcutils_reset_error();
            return Some(TAKE_FAILED);
        }
        std::ptr::copy_nonoverlapping(data.as_ptr(), message.buffer, data.len());
        message.buffer_length = data.len();
    }
    Some(OK)
}

/// Whether a paced timer is ready: only the granted one (`None`: not paced, ask rcl).
pub fn timer_ready(timer: Handle) -> Option<bool> {
    let state = lock();
    state
        .tracker
        .is_paced(timer)
        .then(|| state.pacer.is_running(timer))
}

/// After `publisher` published: keep the output if it belongs to the granted callback.
pub fn published(
    publisher: Handle,
    serialize: impl FnOnce(*const rosidl_message_type_support_t) -> Option<Vec<u8>>,
) {
    let mut state = lock();
    let thread = thread_id();
    if !state.pacer.captures(thread) {
        return;
    }
    let Some((_, topic)) = state.tracker.publisher(publisher) else {
        return;
    };
    if is_infrastructure_topic(topic) {
        return;
    }
    let name = topic.to_owned();
    let ts =
        state.type_supports.get(&publisher).copied().unwrap_or(0) as *const rosidl_message_type_support_t;
    let Some(data) = serialize(ts) else {
        crate::say_once(
            &name,
            &format!("a message published on {name} could not be serialized"),
        );
        return;
    };
    state.pacer.capture(
        thread,
        Output {
            kind: EventKind::Publish,
            name,
            data,
        },
    );
}

/// The bytes of the message at `message` (type support `ts`), padding zeroed.
pub fn serialize(message: *const c_void, ts: *const rosidl_message_type_support_t) -> Option<Vec<u8>> {
    digest::serialized(message, ts)
}

/// A ROS clock is read: during the granted callback, every ROS clock is set to the time the same read
/// returned when recorded.
pub fn clock_read() {
    let mut state = lock();
    if let Some(ns) = state.pacer.clock_read(thread_id()) {
        set_ros_time(&state, ns);
    }
}

/// The granted request or response for a take from service or client `handle`, deserialized into
/// `message` with type support `ts`; `None`: not paced (forward the call); `Some(None)`: nothing granted
/// (the take finds nothing); `Some(Some(sequence))`: taken, with the grant's sequence number.
///
/// # Safety
/// `message` is the caller's message of type `ts`.
pub unsafe fn take_call(handle: Handle, message: *mut c_void, request: bool) -> Option<Option<i64>> {
    let mut state = lock();
    if !state.tracker.is_paced(handle) {
        return None;
    }
    let ts = state
        .service_types
        .get(&handle)
        .map(|&(req, resp)| if request { req } else { resp })
        .unwrap_or(0) as *const rosidl_message_type_support_t;
    let Some((grant, data)) = state.pacer.take(handle) else {
        return Some(None);
    };
    let mut sequence = grant.sequence_number;
    if !request {
        // A response goes to the oldest request the client sent in this replay (rclpy and rclcpp pair them
        // by sequence number).
        if let Some(seq) = state.requests.get_mut(&handle).and_then(|q| q.pop_front()) {
            sequence = seq;
        }
    }
    drop(state);
    // SAFETY: the caller's message of type `ts`.
    Some(unsafe { deserialize(&data, ts, message) }.then_some(sequence))
}

/// Deserialize `data` into `message` of type support `ts`.
///
/// # Safety
/// `message` is an initialised message of type `ts`.
unsafe fn deserialize(data: &[u8], ts: *const rosidl_message_type_support_t, message: *mut c_void) -> bool {
    let serialized = rcl_serialized_message_t {
        buffer: data.as_ptr() as *mut u8,
        buffer_length: data.len(),
        buffer_capacity: data.len(),
        // SAFETY: the default allocator is always valid; rmw only reads a message it deserializes.
        allocator: unsafe { rcutils_get_default_allocator() },
    };
    // SAFETY: see the function's contract.
    if ts.is_null() || unsafe { rmw_deserialize(&serialized, ts, message) } != OK {
        // SAFETY: resetting rcl's thread-local error state has no precondition.
        unsafe { rcutils_reset_error() };
        crate::say("a granted message does not deserialize as the node's type");
        return false;
    }
    true
}

/// What a granted callback sent on service or client `handle`: a response (`request` false) or a request,
/// kept for the answer. A client's request also waits for its response (`sequence`).
pub fn sent_call(handle: Handle, message: *const c_void, request: bool, sequence: Option<i64>) {
    let mut state = lock();
    let Some((_, name, infrastructure)) = state.tracker.endpoint(handle) else {
        return;
    };
    if infrastructure {
        return;
    }
    let name = name.to_owned();
    if let Some(seq) = sequence {
        state.requests.entry(handle).or_default().push_back(seq);
    }
    let thread = thread_id();
    if !state.pacer.captures(thread) {
        return;
    }
    let ts = state
        .service_types
        .get(&handle)
        .map(|&(req, resp)| if request { req } else { resp })
        .unwrap_or(0) as *const rosidl_message_type_support_t;
    let Some(data) = serialize(message, ts) else {
        return;
    };
    let kind = if request {
        EventKind::RequestSent
    } else {
        EventKind::ResponseSent
    };
    state.pacer.capture(thread, Output { kind, name, data });
}
