//! More type support loaded at run time (see [`crate::typesupport`]): a service's C type support, for clients
//! of services named at run time, and a message's introspection type support, which says how big its C struct
//! is and how to initialise and finalise one, so that a serialized message can be turned into the struct rcl
//! sends (`rmw_deserialize`) without the type compiled in.

use r2r_rcl::rosidl_typesupport_introspection_c__MessageMembers as MessageMembers;
use r2r_rcl::{rosidl_message_type_support_t, rosidl_service_type_support_t};

use crate::typesupport::{find_library_of, load_library, split_interface_name, TypeSupportError};

/// A service type's C type support handle (`rcl_client_init`), valid for the life of the process.
#[derive(Debug, Clone, Copy)]
pub struct ServiceTypeSupport {
    handle: &'static rosidl_service_type_support_t,
}

impl ServiceTypeSupport {
    pub fn handle(&self) -> &'static rosidl_service_type_support_t {
        self.handle
    }
}

// The handle points to immutable static data of a library that is never unloaded.
unsafe impl Send for ServiceTypeSupport {}
unsafe impl Sync for ServiceTypeSupport {}

/// How a message type's C struct is laid out, made and unmade (its introspection type support).
#[derive(Debug, Clone, Copy)]
pub struct MessageLayout {
    members: &'static MessageMembers,
}

// Immutable static data of a library that is never unloaded.
unsafe impl Send for MessageLayout {}
unsafe impl Sync for MessageLayout {}

impl MessageLayout {
    pub fn members(&self) -> &'static MessageMembers {
        self.members
    }

    /// The byte offset of the field `name` in the struct, if it has one.
    pub fn offset_of(&self, name: &str) -> Option<usize> {
        let m = self.members;
        if m.members_.is_null() {
            return None;
        }
        // SAFETY: `members_` points to `member_count_` static member descriptions with C string names.
        let fields = unsafe { std::slice::from_raw_parts(m.members_, m.member_count_ as usize) };
        fields.iter().find_map(|f| {
            // SAFETY: each name is a static NUL-terminated string of the library.
            let field = unsafe { std::ffi::CStr::from_ptr(f.name_) };
            (field.to_bytes() == name.as_bytes()).then_some(f.offset_ as usize)
        })
    }
}

/// The C type support of service type `service_type` (`pkg/srv/Type`, or an action's `pkg/action/Type_SendGoal`).
pub fn service_type_support(
    service_type: &str,
    ament_prefix_path: &str,
) -> Result<ServiceTypeSupport, TypeSupportError> {
    let handle = getter::<rosidl_service_type_support_t>(
        service_type,
        "rosidl_typesupport_c",
        "rosidl_typesupport_c__get_service_type_support_handle",
        ament_prefix_path,
    )?;
    Ok(ServiceTypeSupport { handle })
}

/// The introspection type support of message type `type_name` (`pkg/msg/Type`, `pkg/srv/Type_Event`, ...).
pub fn message_layout(type_name: &str, ament_prefix_path: &str) -> Result<MessageLayout, TypeSupportError> {
    let support = getter::<rosidl_message_type_support_t>(
        type_name,
        "rosidl_typesupport_introspection_c",
        "rosidl_typesupport_introspection_c__get_message_type_support_handle",
        ament_prefix_path,
    )?;
    // SAFETY: an introspection type support's data is its MessageMembers, static in the library.
    match unsafe { (support.data as *const MessageMembers).as_ref() } {
        Some(members) => Ok(MessageLayout { members }),
        None => Err(TypeSupportError::BadTypeName(type_name.to_owned())),
    }
}

/// Call `<prefix>__<package>__<kind>__<name>` of `lib<package>__<library>.so` and return what it points to.
fn getter<T>(
    type_name: &str,
    library: &str,
    prefix: &str,
    ament_prefix_path: &str,
) -> Result<&'static T, TypeSupportError> {
    let (package, kind, name) = split_interface_name(type_name)?;
    let path = find_library_of(package, library, ament_prefix_path)?;
    let loaded = load_library(&path)?;
    let symbol = format!("{prefix}__{package}__{kind}__{name}");
    type GetHandle<T> = unsafe extern "C" fn() -> *const T;
    // SAFETY: rosidl generates exactly this signature for every handle getter.
    let get: libloading::Symbol<'static, GetHandle<T>> =
        unsafe { loaded.get(symbol.as_bytes()) }.map_err(|_| TypeSupportError::NoSymbol {
            path: path.clone(),
            symbol: symbol.clone(),
            type_name: type_name.to_owned(),
        })?;
    // SAFETY: the getter returns a pointer to static data of the library (or null).
    match unsafe { get().as_ref() } {
        Some(handle) => Ok(handle),
        None => Err(TypeSupportError::NullHandle { path, symbol }),
    }
}
