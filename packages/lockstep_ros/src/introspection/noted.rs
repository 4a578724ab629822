//! The services and clients the process made, and the introspection state in force for each kind.

use std::ffi::{c_char, CStr};
use std::sync::{Mutex, MutexGuard, OnceLock};

use r2r_rcl::*;

use lockstep_intercept::introspection::Introspection;

/// rcl's word for `state`.
fn rcl_state(state: Introspection) -> rcl_service_introspection_state_t {
    use rcl_service_introspection_state_t::*;
    match state {
        Introspection::Disabled => RCL_SERVICE_INTROSPECTION_OFF,
        Introspection::Metadata => RCL_SERVICE_INTROSPECTION_METADATA,
        Introspection::Contents => RCL_SERVICE_INTROSPECTION_CONTENTS,
    }
}

/// One service or client: rcl's handle (its implementation pointer, stable while it lives), its node and type.
#[derive(Clone)]
struct Endpoint {
    handle: usize,
    node: usize,
    type_support: usize,
    name: String,
    configure: Configure,
}

#[derive(Default)]
struct Noted {
    services: Vec<Endpoint>,
    clients: Vec<Endpoint>,
    service_state: Introspection,
    client_state: Introspection,
    /// The clock stamping the events (the system time), made once and kept for the process.
    clock: usize,
}

fn noted() -> MutexGuard<'static, Noted> {
    static NOTED: OnceLock<Mutex<Noted>> = OnceLock::new();
    let lock = NOTED.get_or_init(Mutex::default).lock();
    lock.unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The state in force for the node's services (`client: false`) or clients.
pub fn state(client: bool) -> Introspection {
    let noted = noted();
    match client {
        true => noted.client_state,
        false => noted.service_state,
    }
}

/// Set the introspection of every service (`client: false`) or client of the process, those made from now on
/// included. Err names the endpoints rcl could not configure (the state is in force for the others).
pub fn set_state(client: bool, state: Introspection) -> Result<(), String> {
    let mut noted = noted();
    match client {
        true => noted.client_state = state,
        false => noted.service_state = state,
    }
    let endpoints = match client {
        true => noted.clients.clone(),
        false => noted.services.clone(),
    };
    let clock = clock(&mut noted)?;
    let failed: Vec<String> = endpoints
        .iter()
        // SAFETY: each endpoint is noted between its init and its fini, so its handle and node are alive.
        .filter_map(|e| unsafe { configure(e, clock, state) }.err())
        .collect();
    match failed.is_empty() {
        true => Ok(()),
        false => Err(failed.join("; ")),
    }
}

/// The system clock events are stamped with, made on first use.
fn clock(noted: &mut Noted) -> Result<usize, String> {
    if noted.clock == 0 {
        // SAFETY: a zeroed rcl_clock_t is what rcl_clock_init expects to fill; the allocator is rcl's default.
        let mut clock: Box<rcl_clock_t> = Box::new(unsafe { std::mem::zeroed() });
        let mut allocator = unsafe { rcutils_get_default_allocator() };
        let ret =
            unsafe { rcl_clock_init(rcl_clock_type_t::RCL_SYSTEM_TIME, clock.as_mut(), &mut allocator) };
        if ret != RCL_RET_OK as rcl_ret_t {
            return Err(format!(
                "the clock for service events could not be made (rcl error {ret})"
            ));
        }
        // Kept for the life of the process: every introspection publisher stamps with it.
        noted.clock = Box::into_raw(clock) as usize;
    }
    Ok(noted.clock)
}

/// rcl's configuration call for a service (or client) known by its implementation pointer.
type Configure = unsafe fn(
    usize,
    *mut rcl_node_t,
    *mut rcl_clock_t,
    *const rosidl_service_type_support_t,
    rcl_publisher_options_t,
    rcl_service_introspection_state_t,
) -> rcl_ret_t;

/// `$name`: rcl's `$configure` for a live `$endpoint` known by its implementation pointer (a [`Configure`]).
macro_rules! configure_by_handle {
    ($name:ident, $endpoint:ident, $implementation:ident, $configure:ident) => {
        /// # Safety
        /// `handle` is a live endpoint's implementation pointer; the rest as rcl's.
        unsafe fn $name(
            handle: usize,
            node: *mut rcl_node_t,
            clock: *mut rcl_clock_t,
            ts: *const rosidl_service_type_support_t,
            options: rcl_publisher_options_t,
            state: rcl_service_introspection_state_t,
        ) -> rcl_ret_t {
            let mut endpoint = $endpoint {
                impl_: handle as *mut $implementation,
            };
            // SAFETY: as the caller says.
            unsafe { $configure(&mut endpoint, node, clock, ts, options, state) }
        }
    };
}
configure_by_handle!(
    configure_service,
    rcl_service_t,
    rcl_service_impl_t,
    rcl_service_configure_service_introspection
);
configure_by_handle!(
    configure_client,
    rcl_client_t,
    rcl_client_impl_t,
    rcl_client_configure_service_introspection
);

/// Configure one endpoint's introspection.
///
/// # Safety
/// `endpoint` was noted by a successful init and not yet finalised; `clock` is the kept clock.
unsafe fn configure(endpoint: &Endpoint, clock: usize, state: Introspection) -> Result<(), String> {
    // SAFETY: as the caller says.
    let ret = unsafe {
        (endpoint.configure)(
            endpoint.handle,
            endpoint.node as *mut rcl_node_t,
            clock as *mut rcl_clock_t,
            endpoint.type_support as *const rosidl_service_type_support_t,
            rcl_publisher_get_default_options(),
            rcl_state(state),
        )
    };
    match ret == RCL_RET_OK as rcl_ret_t {
        true => Ok(()),
        false => {
            // rcl keeps its error text per thread; cleared so the next call starts clean.
            // SAFETY: no precondition.
            unsafe { rcutils_reset_error() };
            Err(format!("{}: rcl error {ret}", endpoint.name))
        }
    }
}

/// # Safety
/// `name` is null or a NUL-terminated string.
unsafe fn name_of(name: *const c_char) -> Option<String> {
    (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
}

/// Note a new endpoint and configure it to the state in force. Infrastructure services are not noted.
///
/// # Safety
/// `handle` was just initialised on `node` with `type_support`.
pub(super) unsafe fn note(
    client: bool,
    handle: usize,
    name: *const c_char,
    node: usize,
    type_support: usize,
) {
    let name = unsafe { name_of(name) }.unwrap_or_default();
    if lockstep_intercept::names::is_infrastructure_service(&name) {
        return;
    }
    let endpoint = Endpoint {
        handle,
        node,
        type_support,
        name,
        configure: match client {
            true => configure_client,
            false => configure_service,
        },
    };
    let mut noted = noted();
    let state = match client {
        true => noted.client_state,
        false => noted.service_state,
    };
    if state != Introspection::Disabled {
        if let Ok(clock) = clock(&mut noted) {
            // A failure leaves the endpoint without events, as rcl's default; the node goes on.
            // SAFETY: the caller's endpoint, just made.
            let _ = unsafe { configure(&endpoint, clock, state) };
        }
    }
    match client {
        true => noted.clients.push(endpoint),
        false => noted.services.push(endpoint),
    }
}

pub(super) fn forget(client: bool, handle: usize) {
    let mut noted = noted();
    let list = match client {
        true => &mut noted.clients,
        false => &mut noted.services,
    };
    list.retain(|e| e.handle != handle);
}
