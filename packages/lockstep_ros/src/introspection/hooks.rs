//! rcl's `rcl_service_init` / `rcl_client_init` and their `_fini` under rcl's own names: r2r's calls land here,
//! each forwards to librcl's function (the next definition, `dlsym(RTLD_NEXT, ...)`) and notes or forgets the
//! endpoint.

use std::ffi::{c_char, CStr};
use std::sync::OnceLock;

use r2r_rcl::*;

use super::noted::{forget, note};

/// librcl's function `name` as an `F` (a function pointer of its C signature), looked up once.
///
/// # Safety
/// `F` is the C signature of rcl's `name`.
unsafe fn real<F: Copy>(cell: &OnceLock<usize>, name: &CStr) -> F {
    // These hooks link librcl into every program with this crate, its test binaries included; the wheels'
    // librcl needs libpython, kept linked from here for them.
    crate::python_link::keep();
    let address = *cell.get_or_init(|| {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name has no other precondition.
        let address = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
        if address.is_null() {
            eprintln!(
                "{} not found in librcl: the node cannot go on",
                name.to_string_lossy()
            );
            std::process::abort();
        }
        address as usize
    });
    // SAFETY: a function's address, as the caller's signature.
    unsafe { std::mem::transmute_copy::<usize, F>(&address) }
}

type Init<E, O> = unsafe extern "C" fn(
    *mut E,
    *const rcl_node_t,
    *const rosidl_service_type_support_t,
    *const c_char,
    *const O,
) -> rcl_ret_t;
type Fini<E> = unsafe extern "C" fn(*mut E, *mut rcl_node_t) -> rcl_ret_t;

/// After a successful init: the endpoint (its implementation pointer and rcl's name for it) noted.
///
/// # Safety
/// `endpoint` reads an endpoint just initialised on `node` with `type_support`.
unsafe fn noted(
    ret: rcl_ret_t,
    client: bool,
    node: *const rcl_node_t,
    type_support: *const rosidl_service_type_support_t,
    endpoint: impl FnOnce() -> (usize, *const c_char),
) -> rcl_ret_t {
    if ret == RCL_RET_OK as rcl_ret_t {
        let (handle, name) = endpoint();
        // SAFETY: as the caller says.
        unsafe { note(client, handle, name, node as usize, type_support as usize) };
    }
    ret
}

/// rcl's `rcl_service_init`, then the service noted and configured.
///
/// # Safety
/// As rcl's.
#[no_mangle]
pub unsafe extern "C" fn rcl_service_init(
    service: *mut rcl_service_t,
    node: *const rcl_node_t,
    type_support: *const rosidl_service_type_support_t,
    name: *const c_char,
    options: *const rcl_service_options_t,
) -> rcl_ret_t {
    static REAL: OnceLock<usize> = OnceLock::new();
    // SAFETY: forwarded unchanged to librcl's function of this signature; the service is read once made.
    unsafe {
        let f: Init<rcl_service_t, rcl_service_options_t> = real(&REAL, c"rcl_service_init");
        let ret = f(service, node, type_support, name, options);
        noted(ret, false, node, type_support, || {
            ((*service).impl_ as usize, rcl_service_get_service_name(service))
        })
    }
}

/// rcl's `rcl_client_init`, then the client noted and configured.
///
/// # Safety
/// As rcl's.
#[no_mangle]
pub unsafe extern "C" fn rcl_client_init(
    client: *mut rcl_client_t,
    node: *const rcl_node_t,
    type_support: *const rosidl_service_type_support_t,
    name: *const c_char,
    options: *const rcl_client_options_t,
) -> rcl_ret_t {
    static REAL: OnceLock<usize> = OnceLock::new();
    // SAFETY: forwarded unchanged to librcl's function of this signature; the client is read once made.
    unsafe {
        let f: Init<rcl_client_t, rcl_client_options_t> = real(&REAL, c"rcl_client_init");
        let ret = f(client, node, type_support, name, options);
        noted(ret, true, node, type_support, || {
            ((*client).impl_ as usize, rcl_client_get_service_name(client))
        })
    }
}

/// The service forgotten, then rcl's `rcl_service_fini`.
///
/// # Safety
/// As rcl's.
#[no_mangle]
pub unsafe extern "C" fn rcl_service_fini(service: *mut rcl_service_t, node: *mut rcl_node_t) -> rcl_ret_t {
    static REAL: OnceLock<usize> = OnceLock::new();
    // SAFETY: the caller's service (or null), forwarded unchanged.
    unsafe {
        if let Some(s) = service.as_ref() {
            forget(false, s.impl_ as usize);
        }
        real::<Fini<rcl_service_t>>(&REAL, c"rcl_service_fini")(service, node)
    }
}

/// The client forgotten, then rcl's `rcl_client_fini`.
///
/// # Safety
/// As rcl's.
#[no_mangle]
pub unsafe extern "C" fn rcl_client_fini(client: *mut rcl_client_t, node: *mut rcl_node_t) -> rcl_ret_t {
    static REAL: OnceLock<usize> = OnceLock::new();
    // SAFETY: the caller's client (or null), forwarded unchanged.
    unsafe {
        if let Some(c) = client.as_ref() {
            forget(true, c.impl_ as usize);
        }
        real::<Fini<rcl_client_t>>(&REAL, c"rcl_client_fini")(client, node)
    }
}
