//! The real rcl functions, found with `dlsym(RTLD_NEXT, ...)`: the next definition after this library in
//! the process's lookup order, which is librcl's.

use std::ffi::CStr;
use std::sync::OnceLock;

/// The address of the next definition of `name`, looked up once.
pub fn next(cell: &OnceLock<usize>, name: &CStr) -> usize {
    *cell.get_or_init(|| {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name has no other precondition.
        let address = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
        if address.is_null() {
            crate::say(&format!(
                "{} not found in the libraries after the interceptor: the program cannot go on",
                name.to_string_lossy()
            ));
            std::process::abort();
        }
        address as usize
    })
}

/// `real!(rcl_publish: unsafe extern "C" fn(A, B) -> R)` is the real `rcl_publish` as a function pointer.
macro_rules! real {
    ($name:ident : $ty:ty) => {{
        #[allow(unused_unsafe)]
        static CELL: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let address = $crate::real::next(
            &CELL,
            match std::ffi::CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
                Ok(name) => name,
                Err(_) => c"(bad name)",
            },
        );
        // SAFETY: the symbol is rcl's function of that name, whose C signature is `$ty`.
        #[allow(unused_unsafe)]
        let f = unsafe { std::mem::transmute::<usize, $ty>(address) };
        f
    }};
}
pub(crate) use real;
