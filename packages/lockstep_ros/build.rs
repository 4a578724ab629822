//! Links libpython into every binary that uses lockstep_ros when ROS 2 comes from the PyPI wheels: there,
//! librcl.so depends on the `*__rosidl_generator_py.so` libraries, which leave Python symbols undefined, so a
//! node would fail at load with `undefined symbol: PyExc_RuntimeError`. Doing it here means no node crate
//! and no user has to remember it.

fn main() {
    println!("cargo:rerun-if-env-changed=LOCKSTEP_ROS_FROM_WHEELS");
    println!("cargo:rerun-if-env-changed=LOCKSTEP_PYTHON_LIBDIR");
    println!("cargo:rerun-if-env-changed=LOCKSTEP_PYTHON_LIB");
    println!("cargo::rustc-check-cfg=cfg(lockstep_link_python)");
    if std::env::var("LOCKSTEP_ROS_FROM_WHEELS").as_deref() != Ok("1") {
        return;
    }
    let (Ok(libdir), Ok(lib)) = (
        std::env::var("LOCKSTEP_PYTHON_LIBDIR"),
        std::env::var("LOCKSTEP_PYTHON_LIB"),
    ) else {
        println!("cargo::warning=LOCKSTEP_ROS_FROM_WHEELS=1 but LOCKSTEP_PYTHON_LIBDIR/LIB unset: source scripts/env.sh");
        return;
    };
    // "libpython3.11.so" -> "python3.11"
    let name = lib
        .trim_start_matches("lib")
        .split(".so")
        .next()
        .unwrap_or("python3");
    println!("cargo:rustc-link-search=native={libdir}");
    println!("cargo:rustc-link-lib=dylib={name}");
    // rustc links with --as-needed: the library stays only if something references it (see src/lib.rs).
    println!("cargo:rustc-cfg=lockstep_link_python");
}
