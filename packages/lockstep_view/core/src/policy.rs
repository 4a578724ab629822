//! The access settings together -- allowlists, token, TLS -- and the line at start saying what is open to
//! whom.

use std::net::SocketAddr;

use crate::access::{AccessError, Allowlist, Kind, Token};
use crate::tls::Tls;

/// With a bag and no services allowed: the bag player's controls may be called.
pub const BAG_PLAYER_SERVICES: &str = "/lockstep_bag_player/.*";

/// The access settings, checked.
#[derive(Debug, Clone)]
pub struct Access {
    pub allow_topics: Allowlist,
    pub allow_services: Allowlist,
    pub allow_parameters: Allowlist,
    pub token: Option<Token>,
    pub tls: Option<Tls>,
}

/// The services that may be called: those given, or with a bag and none given, the bag player's controls.
pub fn allowed_services(given: &[String], bag: bool) -> Vec<String> {
    if given.is_empty() && bag {
        vec![BAG_PLAYER_SERVICES.to_owned()]
    } else {
        given.to_vec()
    }
}

/// The token of a token file: its first line.
pub fn token_of_file(text: &str) -> Result<Token, AccessError> {
    Token::new(text.lines().next().unwrap_or(""))
}

/// The token of the environment variable's value: none when it is unset or empty.
pub fn token_of_env(value: Option<&str>) -> Result<Option<Token>, AccessError> {
    match value {
        Some(text) if !text.is_empty() => Token::new(text).map(Some),
        _ => Ok(None),
    }
}

impl Access {
    /// The settings of the allowlists' patterns (topics, services, parameters), the token and TLS; an
    /// error names the pattern that does not compile.
    pub fn new(
        topics: &[String],
        services: &[String],
        parameters: &[String],
        token: Option<Token>,
        tls: Option<Tls>,
    ) -> Result<Access, AccessError> {
        Ok(Access {
            allow_topics: Allowlist::new(Kind::Topics, topics)?,
            allow_services: Allowlist::new(Kind::Services, services)?,
            allow_parameters: Allowlist::new(Kind::Parameters, parameters)?,
            token,
            tls,
        })
    }

    /// One line on what is open to whom when listening on `address`, for the log at start.
    pub fn summary(&self, address: SocketAddr) -> String {
        let list = |a: &Allowlist| match a.patterns() {
            [] => "none".to_owned(),
            p => p.join(" "),
        };
        format!(
            "topics {}; services callable: {}; parameters settable: {}; token: {}; TLS: {}{}",
            list(&self.allow_topics),
            list(&self.allow_services),
            list(&self.allow_parameters),
            if self.token.is_some() { "required" } else { "none" },
            if self.tls.is_some() { "on" } else { "off" },
            if address.ip().is_loopback() {
                " (this machine only: --address 0.0.0.0 for others)"
            } else if self.token.is_none() {
                " (listening beyond this machine without a token: anyone who reaches the port sees the topics)"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(token: bool) -> Access {
        let token = token.then(|| Token::new("secret").unwrap());
        Access::new(&[".*".to_owned()], &[], &[], token, None).unwrap()
    }

    #[test]
    fn tokens_come_from_a_files_first_line_or_a_set_variable() {
        assert_eq!(token_of_file("abc\nrest\n").unwrap(), Token::new("abc").unwrap());
        assert!(token_of_file("").is_err());
        assert_eq!(token_of_env(None).unwrap(), None);
        assert_eq!(token_of_env(Some("")).unwrap(), None);
        assert!(token_of_env(Some("x y")).is_err());
    }

    #[test]
    fn the_summary_says_what_is_open_and_warns_of_an_open_port() {
        let local = access(false).summary("127.0.0.1:8765".parse().unwrap());
        assert!(
            local.starts_with(
                "topics .*; services callable: none; parameters settable: none; token: none; TLS: off"
            ),
            "{local}"
        );
        assert!(local.ends_with("(this machine only: --address 0.0.0.0 for others)"));
        let open = access(false).summary("0.0.0.0:8765".parse().unwrap());
        assert!(open.contains("without a token"), "{open}");
        let guarded = access(true).summary("0.0.0.0:8765".parse().unwrap());
        assert!(
            guarded.contains("token: required") && !guarded.contains('('),
            "{guarded}"
        );
    }

    #[test]
    fn a_bag_opens_its_players_controls_unless_services_are_given() {
        assert_eq!(allowed_services(&[], true), [BAG_PLAYER_SERVICES]);
        assert!(allowed_services(&[], false).is_empty());
        assert_eq!(allowed_services(&["/a".to_owned()], true), ["/a"]);
    }
}
