//! What the interceptor knows rcl entities by: the address of their implementation (`impl`), which rcl
//! allocates at init and keeps until fini. The handle structs themselves are small values a client library
//! may copy or move after init (r2r builds them in a temporary and moves them into its own objects), so
//! their addresses identify nothing.

use lockstep_intercept::tracker::Handle;
use r2r_rcl::*;

/// An rcl entity with an implementation pointer.
pub trait Keyed {
    fn implementation(&self) -> usize;
}

macro_rules! keyed {
    ($($t:ty),*) => {$(
        impl Keyed for $t {
            fn implementation(&self) -> usize {
                self.impl_ as usize
            }
        }
    )*};
}
keyed!(
    rcl_node_t,
    rcl_publisher_t,
    rcl_subscription_t,
    rcl_service_t,
    rcl_client_t,
    rcl_timer_t
);

/// The key of the entity at `entity` (0 for a null pointer or an uninitialised entity).
pub fn key<T: Keyed>(entity: *const T) -> Handle {
    // SAFETY: rcl's caller hands a valid entity (or null) for the duration of the call.
    unsafe { entity.as_ref() }.map_or(0, Keyed::implementation)
}
