//! The two parameters every Lockstep node with checked parameters declares, `service_configure_introspection`
//! and `client_configure_introspection`: read at start, set at run time, applied to every endpoint.

use super::noted::{set_state, state};
use lockstep_intercept::introspection::Introspection;

/// The parameter that sets the introspection of the node's services (servers).
pub const SERVICE_PARAMETER: &str = "service_configure_introspection";
/// The parameter that sets the introspection of the node's clients.
pub const CLIENT_PARAMETER: &str = "client_configure_introspection";

/// The two parameters: (name, whether it sets the clients, description).
const PARAMETERS: [(&str, bool, &str); 2] = [
    (
        SERVICE_PARAMETER,
        false,
        "Service introspection of this node's services: disabled, metadata (who called, when) or contents \
         (with the request and response), published on <service>/_service_event.",
    ),
    (
        CLIENT_PARAMETER,
        true,
        "Service introspection of this node's clients: disabled, metadata or contents.",
    ),
];

fn parameter(name: &str) -> Option<bool> {
    PARAMETERS
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|&(_, client, _)| client)
}

/// Declare the two parameters on a node's parameter map, applying the values given at start (`-p`, a
/// parameter file). A value that names no state is an error naming the parameter.
pub fn register_parameters(params: &mut r2r::indexmap::IndexMap<String, r2r::Parameter>) -> r2r::Result<()> {
    for (name, client, description) in PARAMETERS {
        if let Some(given) = params.get(name) {
            let state = parse_value(name, &given.value)?;
            set_state(client, state).map_err(|msg| conversion(name, msg))?;
        }
        let mut declared =
            r2r::Parameter::new(r2r::ParameterValue::String(state(client).as_str().to_owned()));
        declared.description = description;
        params.insert(name.to_owned(), declared);
    }
    Ok(())
}

/// The value of one of the two parameters; `None` for any other name.
pub fn get_parameter(name: &str) -> Option<r2r::ParameterValue> {
    parameter(name).map(|client| r2r::ParameterValue::String(state(client).as_str().to_owned()))
}

/// A run-time set of one of the two parameters, applied to every endpoint; `None` for any other name.
pub fn set_parameter(name: &str, value: &r2r::ParameterValue) -> Option<r2r::Result<()>> {
    let client = parameter(name)?;
    Some(
        parse_value(name, value)
            .and_then(|state| set_state(client, state).map_err(|msg| conversion(name, msg))),
    )
}

/// Whether a set of one of the two parameters would be taken; `None` for any other name.
pub fn check_parameter(name: &str, value: &r2r::ParameterValue) -> Option<r2r::Result<()>> {
    parameter(name).map(|_| parse_value(name, value).map(|_| ()))
}

fn parse_value(name: &str, value: &r2r::ParameterValue) -> r2r::Result<Introspection> {
    match value {
        r2r::ParameterValue::String(text) => {
            Introspection::parse(name, text).map_err(|msg| conversion(name, msg))
        }
        _ => Err(r2r::Error::InvalidParameterType {
            name: name.to_owned(),
            ty: "string",
        }),
    }
}

fn conversion(name: &str, msg: String) -> r2r::Error {
    r2r::Error::ParameterValueConv {
        name: name.to_owned(),
        msg,
    }
}
