//! Hooks on services and clients: requests taken and responses sent by a server, requests sent and
//! responses taken by a client, each logged with its sequence number, the client's GID where rmw gives it,
//! and the payload digest.

use std::ffi::c_void;
use std::os::raw::c_char;

use lockstep_intercept::events::EventKind;
use lockstep_intercept::tracker::{Handle, ServiceCall};
use r2r_rcl::*;

use crate::introspect;
use crate::key::key;
use crate::real::real;
use crate::state::lock;
use crate::{digest, name_of, pace, thread_id, Entered, OK};

const SERVICE_TAKE_FAILED: rcl_ret_t = RCL_RET_SERVICE_TAKE_FAILED as rcl_ret_t;
const CLIENT_TAKE_FAILED: rcl_ret_t = RCL_RET_CLIENT_TAKE_FAILED as rcl_ret_t;

/// Replay mode: a take from service or client `handle` answered with the granted request or response;
/// `None`: not paced (forward the call), else what to return and the grant's sequence number for the
/// caller's header (none when nothing was granted: `failed`).
///
/// # Safety
/// `message` is the caller's message of the endpoint's request (`request`) or response type.
unsafe fn paced_take(
    handle: Handle,
    message: *mut c_void,
    request: bool,
    failed: rcl_ret_t,
) -> Option<(rcl_ret_t, Option<i64>)> {
    // SAFETY: see above.
    match unsafe { pace::take_call(handle, message, request) }? {
        None => Some((failed, None)),
        Some(seq) => Some((OK, Some(seq))),
    }
}

/// Log a service event; `request` picks the request's type support (else the response's).
fn event(
    kind: EventKind,
    endpoint: Handle,
    message: *const c_void,
    request: bool,
    gid: Vec<u8>,
    sequence: i64,
) {
    let mut state = lock();
    let ts = state
        .service_types
        .get(&endpoint)
        .map(|&(req, resp)| if request { req } else { resp })
        .unwrap_or(0) as *const rosidl_message_type_support_t;
    let digest = digest::of_message(message, ts).unwrap_or(0);
    if let Some(bytes) = digest::serialized(message, ts) {
        state.publish_call(endpoint, request, ts, &bytes);
    }
    let now = state.now();
    let call = ServiceCall {
        gid,
        sequence_number: sequence,
        digest,
    };
    state
        .tracker
        .on_service_event(kind, endpoint, thread_id(), now, call);
    state.service(false);
}

fn types_of(ts: *const rosidl_service_type_support_t) -> (usize, usize) {
    // SAFETY: the caller's service type support, valid for the life of the process (rosidl statics).
    unsafe { ts.as_ref() }.map_or((0, 0), |t| {
        (t.request_typesupport as usize, t.response_typesupport as usize)
    })
}

#[no_mangle]
pub unsafe extern "C" fn rcl_service_init(
    service: *mut rcl_service_t,
    node: *const rcl_node_t,
    type_support: *const rosidl_service_type_support_t,
    name: *const c_char,
    options: *const rcl_service_options_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_service_init: unsafe extern "C" fn(*mut rcl_service_t, *const rcl_node_t, *const rosidl_service_type_support_t, *const c_char, *const rcl_service_options_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(service, node, type_support, name, options) };
    if ret == OK && entered.active() {
        // SAFETY: the service was just initialised.
        if let Some(name) = name_of(unsafe { rcl_service_get_service_name(service) }) {
            let mut state = lock();
            state.tracker.add_service(key(service), key(node), &name);
            state.service_types.insert(key(service), types_of(type_support));
            drop(state);
            // SAFETY: the service was just initialised on `node`.
            unsafe { introspect::configure(service, std::ptr::null_mut(), node, type_support, &name) };
        }
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_client_init(
    client: *mut rcl_client_t,
    node: *const rcl_node_t,
    type_support: *const rosidl_service_type_support_t,
    name: *const c_char,
    options: *const rcl_client_options_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_client_init: unsafe extern "C" fn(*mut rcl_client_t, *const rcl_node_t, *const rosidl_service_type_support_t, *const c_char, *const rcl_client_options_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(client, node, type_support, name, options) };
    if ret == OK && entered.active() {
        // SAFETY: the client was just initialised.
        if let Some(name) = name_of(unsafe { rcl_client_get_service_name(client) }) {
            let mut state = lock();
            state.tracker.add_client(key(client), key(node), &name);
            state.service_types.insert(key(client), types_of(type_support));
            drop(state);
            // SAFETY: the client was just initialised on `node`.
            unsafe { introspect::configure(std::ptr::null_mut(), client, node, type_support, &name) };
        }
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_service_fini(service: *mut rcl_service_t, node: *mut rcl_node_t) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.active() {
        let mut state = lock();
        state.tracker.remove(key(service));
        state.service_types.remove(&key(service));
    }
    let f = real!(rcl_service_fini: unsafe extern "C" fn(*mut rcl_service_t, *mut rcl_node_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    unsafe { f(service, node) }
}

#[no_mangle]
pub unsafe extern "C" fn rcl_client_fini(client: *mut rcl_client_t, node: *mut rcl_node_t) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.active() {
        let mut state = lock();
        state.tracker.remove(key(client));
        state.service_types.remove(&key(client));
    }
    let f = real!(rcl_client_fini: unsafe extern "C" fn(*mut rcl_client_t, *mut rcl_node_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    unsafe { f(client, node) }
}

#[no_mangle]
pub unsafe extern "C" fn rcl_take_request_with_info(
    service: *const rcl_service_t,
    header: *mut rmw_service_info_t,
    request: *mut c_void,
) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.paces() {
        // SAFETY: the caller's request of the service's type, and its header (or null).
        let taken = unsafe { paced_take(key(service), request, true, SERVICE_TAKE_FAILED) };
        if let Some((ret, seq)) = taken {
            // SAFETY: as above.
            if let (Some(seq), Some(h)) = (seq, unsafe { header.as_mut() }) {
                h.request_id.sequence_number = seq;
            }
            return ret;
        }
    }
    let f = real!(rcl_take_request_with_info: unsafe extern "C" fn(*const rcl_service_t, *mut rmw_service_info_t, *mut c_void) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(service, header, request) };
    if ret == OK && entered.records() {
        // SAFETY: filled by the successful take.
        let (gid, seq) = unsafe { header.as_ref() }
            .map(|h| (h.request_id.writer_guid.to_vec(), h.request_id.sequence_number))
            .unwrap_or_default();
        event(EventKind::RequestTaken, key(service), request, true, gid, seq);
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_take_request(
    service: *const rcl_service_t,
    header: *mut rmw_request_id_t,
    request: *mut c_void,
) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.paces() {
        // SAFETY: the caller's request of the service's type, and its header (or null).
        let taken = unsafe { paced_take(key(service), request, true, SERVICE_TAKE_FAILED) };
        if let Some((ret, seq)) = taken {
            // SAFETY: as above.
            if let (Some(seq), Some(h)) = (seq, unsafe { header.as_mut() }) {
                h.sequence_number = seq;
            }
            return ret;
        }
    }
    let f = real!(rcl_take_request: unsafe extern "C" fn(*const rcl_service_t, *mut rmw_request_id_t, *mut c_void) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(service, header, request) };
    if ret == OK && entered.records() {
        // SAFETY: filled by the successful take.
        let (gid, seq) = unsafe { header.as_ref() }
            .map(|h| (h.writer_guid.to_vec(), h.sequence_number))
            .unwrap_or_default();
        event(EventKind::RequestTaken, key(service), request, true, gid, seq);
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_send_response(
    service: *const rcl_service_t,
    header: *mut rmw_request_id_t,
    response: *mut c_void,
) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.paces() && lock().tracker.is_paced(key(service)) {
        // The request came from the replay, not from a client: the response goes into the answer only.
        pace::sent_call(key(service), response, false, None);
        return OK;
    }
    let f = real!(rcl_send_response: unsafe extern "C" fn(*const rcl_service_t, *mut rmw_request_id_t, *mut c_void) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(service, header, response) };
    if ret == OK && entered.records() {
        // SAFETY: the caller's request id.
        let (gid, seq) = unsafe { header.as_ref() }
            .map(|h| (h.writer_guid.to_vec(), h.sequence_number))
            .unwrap_or_default();
        event(EventKind::ResponseSent, key(service), response, false, gid, seq);
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_send_request(
    client: *const rcl_client_t,
    request: *const c_void,
    sequence: *mut i64,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_send_request: unsafe extern "C" fn(*const rcl_client_t, *const c_void, *mut i64) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(client, request, sequence) };
    if ret == OK && entered.paces() {
        // SAFETY: set by the successful call.
        let seq = unsafe { sequence.as_ref() }.copied();
        pace::sent_call(key(client), request, true, seq);
    }
    if ret == OK && entered.records() {
        // SAFETY: set by the successful call.
        let seq = unsafe { sequence.as_ref() }.copied().unwrap_or(-1);
        event(
            EventKind::RequestSent,
            key(client),
            request,
            true,
            Vec::new(),
            seq,
        );
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_take_response_with_info(
    client: *const rcl_client_t,
    header: *mut rmw_service_info_t,
    response: *mut c_void,
) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.paces() {
        // SAFETY: the caller's response of the client's type, and its header (or null).
        let taken = unsafe { paced_take(key(client), response, false, CLIENT_TAKE_FAILED) };
        if let Some((ret, seq)) = taken {
            // SAFETY: as above.
            if let (Some(seq), Some(h)) = (seq, unsafe { header.as_mut() }) {
                h.request_id.sequence_number = seq;
            }
            return ret;
        }
    }
    let f = real!(rcl_take_response_with_info: unsafe extern "C" fn(*const rcl_client_t, *mut rmw_service_info_t, *mut c_void) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(client, header, response) };
    if ret == OK && entered.records() {
        // SAFETY: filled by the successful take.
        let seq = unsafe { header.as_ref() }.map_or(-1, |h| h.request_id.sequence_number);
        event(
            EventKind::ResponseTaken,
            key(client),
            response,
            false,
            Vec::new(),
            seq,
        );
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_take_response(
    client: *const rcl_client_t,
    header: *mut rmw_request_id_t,
    response: *mut c_void,
) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.paces() {
        // SAFETY: the caller's response of the client's type, and its header (or null).
        let taken = unsafe { paced_take(key(client), response, false, CLIENT_TAKE_FAILED) };
        if let Some((ret, seq)) = taken {
            // SAFETY: as above.
            if let (Some(seq), Some(h)) = (seq, unsafe { header.as_mut() }) {
                h.sequence_number = seq;
            }
            return ret;
        }
    }
    let f = real!(rcl_take_response: unsafe extern "C" fn(*const rcl_client_t, *mut rmw_request_id_t, *mut c_void) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(client, header, response) };
    if ret == OK && entered.records() {
        // SAFETY: filled by the successful take.
        let seq = unsafe { header.as_ref() }.map_or(-1, |h| h.sequence_number);
        event(
            EventKind::ResponseTaken,
            key(client),
            response,
            false,
            Vec::new(),
            seq,
        );
    }
    ret
}
