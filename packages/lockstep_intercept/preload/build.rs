//! Links libpython into the interceptor when ROS 2 comes from the PyPI wheels: there, librcl.so depends on
//! the `*__rosidl_generator_py.so` libraries, which leave Python symbols undefined, so preloading the
//! interceptor into a program that has no libpython (a C or C++ node) would fail at load. `--no-as-needed`
//! keeps the library although the interceptor itself calls nothing in it.

fn main() {
    println!("cargo:rerun-if-env-changed=LOCKSTEP_ROS_FROM_WHEELS");
    println!("cargo:rerun-if-env-changed=LOCKSTEP_PYTHON_LIBDIR");
    println!("cargo:rerun-if-env-changed=LOCKSTEP_PYTHON_LIB");
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
    let name = lib
        .trim_start_matches("lib")
        .split(".so")
        .next()
        .unwrap_or("python3");
    println!("cargo:rustc-cdylib-link-arg=-L{libdir}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--no-as-needed");
    println!("cargo:rustc-cdylib-link-arg=-l{name}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--as-needed");
}
