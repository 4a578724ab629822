//! `lockstep trace --service-introspection` / `--client-introspection`: every data service (or client) of the
//! traced node publishes its calls on `<service>/_service_event`, as if the node's own code had called
//! `configure_introspection`, so a recorder's `--services` records the calls of nodes that never turn it on
//! (rclcpp and rclpy nodes leave it off unless their code says otherwise). The parameter and type-description
//! services every node has are left as they are.

use std::sync::OnceLock;

use lockstep_intercept::introspection::{Introspection, CLIENT_VAR, SERVICE_VAR};
use lockstep_intercept::names::is_infrastructure_service;
use r2r_rcl::*;

use crate::{say_once, OK};

/// The state asked for the process's services (`client: false`) or clients, read once.
fn wanted(client: bool) -> Introspection {
    static WANTED: OnceLock<(Introspection, Introspection)> = OnceLock::new();
    let (services, clients) = *WANTED.get_or_init(|| {
        let read = |var: &str| {
            let value = std::env::var(var).unwrap_or_default();
            match value.is_empty() {
                true => Introspection::Disabled,
                false => Introspection::parse(var, &value).unwrap_or_else(|why| {
                    say_once(var, &format!("{why}; service introspection stays off"));
                    Introspection::Disabled
                }),
            }
        };
        (read(SERVICE_VAR), read(CLIENT_VAR))
    });
    match client {
        true => clients,
        false => services,
    }
}

/// The clock the events are stamped with (the system time), made once and kept for the process.
fn clock() -> Option<*mut rcl_clock_t> {
    static CLOCK: OnceLock<usize> = OnceLock::new();
    let address = *CLOCK.get_or_init(|| {
        // SAFETY: rcl_clock_init fills a zeroed clock; the allocator is rcl's default; the clock is leaked on
        // purpose (every introspection publisher of the process stamps with it).
        unsafe {
            let clock: *mut rcl_clock_t = Box::into_raw(Box::new(std::mem::zeroed()));
            let mut allocator = rcutils_get_default_allocator();
            match rcl_clock_init(rcl_clock_type_t::RCL_SYSTEM_TIME, clock, &mut allocator) == OK {
                true => clock as usize,
                false => 0,
            }
        }
    });
    (address != 0).then_some(address as *mut rcl_clock_t)
}

fn rcl_state(state: Introspection) -> rcl_service_introspection_state_t {
    use rcl_service_introspection_state_t::*;
    match state {
        Introspection::Disabled => RCL_SERVICE_INTROSPECTION_OFF,
        Introspection::Metadata => RCL_SERVICE_INTROSPECTION_METADATA,
        Introspection::Contents => RCL_SERVICE_INTROSPECTION_CONTENTS,
    }
}

/// Turn on the introspection asked for on a service (`service`) or client (`client`) just made on `node`.
///
/// # Safety
/// Exactly one of `service` / `client` is non-null and was just initialised on `node` with `type_support`.
pub(crate) unsafe fn configure(
    service: *mut rcl_service_t,
    client: *mut rcl_client_t,
    node: *const rcl_node_t,
    type_support: *const rosidl_service_type_support_t,
    name: &str,
) {
    let state = wanted(!client.is_null());
    if state == Introspection::Disabled || is_infrastructure_service(name) {
        return;
    }
    let Some(clock) = clock() else {
        say_once(
            "introspection clock",
            "no clock for service events: service introspection stays off",
        );
        return;
    };
    let node = node.cast_mut();
    // SAFETY: as the caller says; the clock lives for the process.
    let ret = unsafe {
        let options = rcl_publisher_get_default_options();
        match service.is_null() {
            false => rcl_service_configure_service_introspection(
                service,
                node,
                clock,
                type_support,
                options,
                rcl_state(state),
            ),
            true => rcl_client_configure_service_introspection(
                client,
                node,
                clock,
                type_support,
                options,
                rcl_state(state),
            ),
        }
    };
    if ret != OK {
        // SAFETY: rcl keeps its error text per thread; cleared so the node's next call starts clean.
        unsafe { rcutils_reset_error() };
        say_once(
            name,
            &format!("{name}: service introspection could not be turned on (rcl error {ret})"),
        );
    }
}
