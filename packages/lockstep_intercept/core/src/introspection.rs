//! Service introspection: how much of each call a service or client publishes on `<service>/_service_event`
//! (rcl's `rcl_service_introspection_state_t`), named with the words of ROS 2's introspection demos. Lockstep's
//! nodes take it from their `service_configure_introspection` / `client_configure_introspection` parameters,
//! a traced node from `lockstep trace --service-introspection` / `--client-introspection`.

/// The variable that tells the interceptor the introspection of the traced node's services.
pub const SERVICE_VAR: &str = "LOCKSTEP_SERVICE_INTROSPECTION";
/// The variable that tells the interceptor the introspection of the traced node's clients.
pub const CLIENT_VAR: &str = "LOCKSTEP_CLIENT_INTROSPECTION";

/// How much of each call a service or client publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Introspection {
    /// Nothing (rcl's default).
    #[default]
    Disabled,
    /// The event's kind, time, client and sequence number, without the request and response.
    Metadata,
    /// Everything, the request and response included.
    Contents,
}

impl Introspection {
    /// The word for this state (a parameter's value, a flag's, a variable's).
    pub fn as_str(self) -> &'static str {
        match self {
            Introspection::Disabled => "disabled",
            Introspection::Metadata => "metadata",
            Introspection::Contents => "contents",
        }
    }

    /// The state `value` of parameter (or variable) `name` names; the reason when it names none.
    pub fn parse(name: &str, value: &str) -> Result<Self, String> {
        match value {
            "disabled" => Ok(Introspection::Disabled),
            "metadata" => Ok(Introspection::Metadata),
            "contents" => Ok(Introspection::Contents),
            other => Err(format!(
                "parameter '{name}' = '{other}': must be disabled, metadata or contents"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_reads_back_from_its_word_and_other_words_are_refused() {
        for state in [
            Introspection::Disabled,
            Introspection::Metadata,
            Introspection::Contents,
        ] {
            assert_eq!(Introspection::parse("p", state.as_str()), Ok(state));
        }
        let e = Introspection::parse("service_configure_introspection", "on").unwrap_err();
        assert_eq!(
            e,
            "parameter 'service_configure_introspection' = 'on': must be disabled, metadata or contents"
        );
    }
}
