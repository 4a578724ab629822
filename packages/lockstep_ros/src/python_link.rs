//! Keeping libpython linked when ROS 2 comes from the PyPI wheels (the build script sets
//! `lockstep_link_python` then); otherwise [`keep`] does nothing.

#[cfg(lockstep_link_python)]
use std::os::raw::c_int;

#[cfg(lockstep_link_python)]
extern "C" {
    fn Py_IsInitialized() -> c_int;
}

/// Reference one libpython symbol so the linker (which runs with --as-needed) keeps libpython as a
/// dependency of the binary; the wheels' librcl.so needs it at load time. Taking the address is enough.
#[cfg(lockstep_link_python)]
pub fn keep() {
    let symbol: unsafe extern "C" fn() -> c_int = Py_IsInitialized;
    std::hint::black_box(symbol);
}

/// Nothing to keep: libpython is not needed.
#[cfg(not(lockstep_link_python))]
pub fn keep() {}
