//! Service introspection for Lockstep's nodes: with `service_configure_introspection` (servers) or
//! `client_configure_introspection` (clients) set to `metadata` or `contents`, every service of the node
//! publishes its calls on `<service>/_service_event` (`<pkg>/srv/<Service>_Event`), as an rclcpp or rclpy node
//! does after `configure_introspection`, so `lockstep bag record --services` / `ros2 bag record --services`
//! records them. The parameter names and values are those of ROS 2's introspection demos.
//!
//! r2r keeps the `rcl_service_t` of each service private, so nothing in its API can configure one. This module
//! defines `rcl_service_init` / `rcl_client_init` (and their `_fini`) under rcl's own names: linked into a
//! node, r2r's calls land here, each forwards to librcl's function (found with `dlsym(RTLD_NEXT, ...)`),
//! notes the endpoint, and configures its introspection to the state in force. A change of the parameter at
//! run time reconfigures every endpoint noted. The parameter and type-description services every node serves
//! are left out, as rclcpp leaves them out.

mod hooks;
mod noted;
mod parameters;

pub use lockstep_intercept::introspection::Introspection;
pub use noted::{set_state, state};
pub use parameters::{
    check_parameter, get_parameter, register_parameters, set_parameter, CLIENT_PARAMETER, SERVICE_PARAMETER,
};
