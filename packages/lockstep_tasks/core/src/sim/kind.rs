//! Which actuator one `lockstep_actuator` process simulates (its parameter `kind`), and the name of its
//! action server.

/// What one actuator process simulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Navigation,
    Localization,
    Lift,
    Roller,
    Loader,
    Display,
    Hmi,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Navigation,
        Kind::Localization,
        Kind::Lift,
        Kind::Roller,
        Kind::Loader,
        Kind::Display,
        Kind::Hmi,
    ];

    /// The parameter value naming this kind.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Navigation => "navigation",
            Kind::Localization => "localization",
            Kind::Lift => "lift",
            Kind::Roller => "roller",
            Kind::Loader => "loader",
            Kind::Display => "display",
            Kind::Hmi => "hmi",
        }
    }

    /// The action server's default (relative) name.
    pub fn default_server(self) -> &'static str {
        match self {
            Kind::Navigation => "navigate",
            Kind::Localization => "localize",
            Kind::Lift => "lift",
            Kind::Roller => "roll",
            Kind::Loader => "load",
            Kind::Display => "display",
            Kind::Hmi => "prompt",
        }
    }

    /// The kind the parameter value `text` names, or why there is none (listing every kind).
    pub fn parse(text: &str) -> Result<Kind, String> {
        let names = || Kind::ALL.map(Kind::name).join(", ");
        if text.trim().is_empty() {
            return Err(format!("parameter `kind` is required: one of {}", names()));
        }
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == text.trim())
            .ok_or_else(|| format!("parameter `kind` is `{text}`; it must be one of {}", names()))
    }

    /// The action server's name as given in `server` (relative unless it starts with `/`), or the kind's
    /// default when `server` is blank.
    pub fn server_name(self, server: &str) -> String {
        match server.trim() {
            "" => self.default_server().to_owned(),
            name => name.to_owned(),
        }
    }

    /// Whether each goal takes the parameter `duration_s` (the timed kinds).
    pub fn is_timed(self) -> bool {
        !matches!(self, Kind::Navigation | Kind::Hmi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_an_unknown_one_lists_them_all() {
        assert_eq!(Kind::parse("loader"), Ok(Kind::Loader));
        assert_eq!(Kind::parse(" hmi "), Ok(Kind::Hmi));
        assert_eq!(
            Kind::parse("forklift"),
            Err(
                "parameter `kind` is `forklift`; it must be one of navigation, localization, lift, roller, \
                 loader, display, hmi"
                    .to_owned()
            )
        );
        assert!(Kind::parse("").is_err_and(|e| e.starts_with("parameter `kind` is required")));
    }

    #[test]
    fn the_server_is_the_kinds_default_unless_named() {
        assert_eq!(Kind::Roller.server_name(""), "roll");
        assert_eq!(Kind::Roller.server_name("  "), "roll");
        assert_eq!(Kind::Roller.server_name("/belt"), "/belt");
        assert!(Kind::Lift.is_timed() && !Kind::Hmi.is_timed() && !Kind::Navigation.is_timed());
    }
}
