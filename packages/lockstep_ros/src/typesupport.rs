//! Message type support loaded at run time, for types not compiled into the binary.
//!
//! r2r only knows the message packages its bindings were generated for (`IDL_PACKAGE_FILTER`). rclcpp's
//! generic subscriptions, which rosbag2 records with, find a type's support library at run time instead:
//! this module does the same for the C type support. For `pkg/msg/Type` it looks for
//! `lib/lib<pkg>__rosidl_typesupport_c.so` in each prefix of `AMENT_PREFIX_PATH` (first match wins, as for
//! any ament resource), loads it once per process and calls
//! `rosidl_typesupport_c__get_message_type_support_handle__<pkg>__msg__<Type>`.
//!
//! Loaded libraries are never unloaded: the handles rcl keeps for subscriptions and publishers point into
//! them, so they live as long as the process (one library per package, loaded once).
//!
//! This is the first piece of the generic subscription/publisher (the rcl entities that use the handle
//! come next).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use r2r_rcl::rosidl_message_type_support_t;

pub mod more;

/// What can go wrong finding a type's support.
#[derive(Debug, thiserror::Error)]
pub enum TypeSupportError {
    #[error("`{0}` is not a message type name (expected `package/msg/Type`, or `package/srv/Type_Request` and the like)")]
    BadTypeName(String),
    #[error(
        "no type support library for package `{package}` (looked for {})",
        list(searched)
    )]
    NotInstalled { package: String, searched: Vec<PathBuf> },
    #[error("{}: cannot load it: {reason}", path.display())]
    Load { path: PathBuf, reason: String },
    #[error("{}: has no symbol `{symbol}` (is `{type_name}` a message of this package?)", path.display())]
    NoSymbol {
        path: PathBuf,
        symbol: String,
        type_name: String,
    },
    #[error("{}: `{symbol}` returned no type support", path.display())]
    NullHandle { path: PathBuf, symbol: String },
}

fn list(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "nothing: AMENT_PREFIX_PATH is empty".into();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A message type's C type support handle, valid for the life of the process.
#[derive(Debug, Clone, Copy)]
pub struct MessageTypeSupport {
    handle: &'static rosidl_message_type_support_t,
}

impl MessageTypeSupport {
    /// The handle rcl takes (`rcl_subscription_init`, `rcl_publisher_init`).
    pub fn handle(&self) -> &'static rosidl_message_type_support_t {
        self.handle
    }
}

// The handle points to immutable static data of a library that is never unloaded.
unsafe impl Send for MessageTypeSupport {}
unsafe impl Sync for MessageTypeSupport {}

/// `pkg/msg/Type` (or `pkg/Type`) split into package and type.
pub fn split_type_name(type_name: &str) -> Result<(&str, &str), TypeSupportError> {
    match split_interface_name(type_name)? {
        (package, "msg", name) => Ok((package, name)),
        _ => Err(TypeSupportError::BadTypeName(type_name.to_owned())),
    }
}

/// A message type's package, interface kind and name: `pkg/msg/Type` (or `pkg/Type`), and the messages of
/// services and actions (`pkg/srv/Type_Request`, `pkg/srv/Type_Event`, `pkg/action/Type_Goal`, ...), which
/// service introspection and Lockstep's interceptor publish.
pub fn split_interface_name(type_name: &str) -> Result<(&str, &str, &str), TypeSupportError> {
    let bad = || TypeSupportError::BadTypeName(type_name.to_owned());
    let parts: Vec<&str> = type_name.split('/').collect();
    let (package, kind, name) = match parts.as_slice() {
        [package, kind @ ("msg" | "srv" | "action"), name] => (*package, *kind, *name),
        [package, name] => (*package, "msg", *name),
        _ => return Err(bad()),
    };
    let identifier = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if identifier(package) && identifier(name) {
        Ok((package, kind, name))
    } else {
        Err(bad())
    }
}

/// The type support library of `package`: `<prefix>/lib/lib<package>__rosidl_typesupport_c.so` of the first
/// prefix of `ament_prefix_path` (colon-separated) that has it; `Err` lists every path tried.
pub fn find_library(package: &str, ament_prefix_path: &str) -> Result<PathBuf, TypeSupportError> {
    find_library_of(package, "rosidl_typesupport_c", ament_prefix_path)
}

/// `<prefix>/lib/lib<package>__<support>.so` of the first prefix of `ament_prefix_path` that has it.
pub(crate) fn find_library_of(
    package: &str,
    support: &str,
    ament_prefix_path: &str,
) -> Result<PathBuf, TypeSupportError> {
    let file = format!("lib{package}__{support}.so");
    let searched: Vec<PathBuf> = ament_prefix_path
        .split(':')
        .filter(|p| !p.is_empty())
        .map(|prefix| Path::new(prefix).join("lib").join(&file))
        .collect();
    searched
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| TypeSupportError::NotInstalled {
            package: package.to_owned(),
            searched,
        })
}

/// Libraries loaded so far, by path; kept for the life of the process.
fn libraries() -> &'static Mutex<BTreeMap<PathBuf, &'static libloading::Library>> {
    static LIBRARIES: OnceLock<Mutex<BTreeMap<PathBuf, &'static libloading::Library>>> = OnceLock::new();
    LIBRARIES.get_or_init(Mutex::default)
}

pub(crate) fn load_library(path: &Path) -> Result<&'static libloading::Library, TypeSupportError> {
    let mut loaded = libraries()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(library) = loaded.get(path) {
        return Ok(library);
    }
    // SAFETY: a rosidl type support library runs no initialisers beyond registering its static tables.
    let library = unsafe { libloading::Library::new(path) }.map_err(|e| TypeSupportError::Load {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let library: &'static libloading::Library = Box::leak(Box::new(library));
    loaded.insert(path.to_path_buf(), library);
    Ok(library)
}

/// The type support of `type_name` (`pkg/msg/Type`, `pkg/srv/Type_Request`, ...), found through
/// `ament_prefix_path`.
pub fn message_type_support(
    type_name: &str,
    ament_prefix_path: &str,
) -> Result<MessageTypeSupport, TypeSupportError> {
    let (package, kind, name) = split_interface_name(type_name)?;
    let path = find_library(package, ament_prefix_path)?;
    let library = load_library(&path)?;
    let symbol = format!("rosidl_typesupport_c__get_message_type_support_handle__{package}__{kind}__{name}");
    type GetHandle = unsafe extern "C" fn() -> *const rosidl_message_type_support_t;
    // SAFETY: rosidl generates exactly this signature for every message's handle getter.
    let get: libloading::Symbol<'static, GetHandle> =
        unsafe { library.get(symbol.as_bytes()) }.map_err(|_| TypeSupportError::NoSymbol {
            path: path.clone(),
            symbol: symbol.clone(),
            type_name: type_name.to_owned(),
        })?;
    // SAFETY: the getter returns a pointer to static data of the library (or null).
    let handle = unsafe { get() };
    // SAFETY: non-null pointers from the getter point to static data that lives as long as the library,
    // which is never unloaded.
    match unsafe { handle.as_ref() } {
        Some(handle) => Ok(MessageTypeSupport { handle }),
        None => Err(TypeSupportError::NullHandle { path, symbol }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use r2r::WrappedTypesupport;

    fn prefixes() -> String {
        std::env::var("AMENT_PREFIX_PATH").unwrap_or_default()
    }

    #[test]
    fn type_names_are_split_and_checked() {
        assert_eq!(
            split_type_name("std_msgs/msg/String").unwrap(),
            ("std_msgs", "String")
        );
        assert_eq!(
            split_type_name("std_msgs/String").unwrap(),
            ("std_msgs", "String")
        );
        for bad in [
            "std_msgs",
            "std_msgs/srv/Trigger",
            "a/msg/B/c",
            "std msgs/msg/String",
            "/msg/X",
            "",
        ] {
            assert!(split_type_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_loaded_handle_is_the_one_compiled_in() {
        // r2r links std_msgs' type support; loading it at run time must give the very same handle.
        let loaded = message_type_support("std_msgs/msg/String", &prefixes()).unwrap();
        let compiled = r2r::std_msgs::msg::String::get_ts();
        assert!(std::ptr::eq(loaded.handle(), compiled));
        let again = message_type_support("std_msgs/msg/String", &prefixes()).unwrap();
        assert!(std::ptr::eq(again.handle(), compiled));
        let other = message_type_support("std_msgs/msg/Int32", &prefixes()).unwrap();
        assert!(std::ptr::eq(other.handle(), r2r::std_msgs::msg::Int32::get_ts()));
    }

    #[test]
    fn a_missing_package_names_every_path_searched() {
        let err = message_type_support("no_such_msgs/msg/Thing", "/opt/a:/opt/b").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no type support library for package `no_such_msgs` (looked for \
             /opt/a/lib/libno_such_msgs__rosidl_typesupport_c.so, \
             /opt/b/lib/libno_such_msgs__rosidl_typesupport_c.so)"
        );
    }

    #[test]
    fn a_missing_type_of_an_installed_package_names_the_symbol() {
        let err = message_type_support("std_msgs/msg/NoSuchType", &prefixes()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("libstd_msgs__rosidl_typesupport_c.so: has no symbol"),
            "{text}"
        );
        assert!(text.contains("std_msgs__msg__NoSuchType"), "{text}");
    }

    #[test]
    fn a_broken_library_is_an_error_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("lockstep_ts_{}", std::process::id()));
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        let lib = dir.join("lib/libbroken_msgs__rosidl_typesupport_c.so");
        std::fs::write(&lib, b"not an ELF file").unwrap();
        let err = message_type_support("broken_msgs/msg/X", dir.to_str().unwrap()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("{}: cannot load it", lib.display())),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
