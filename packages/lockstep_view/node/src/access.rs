//! Who may connect to the view and what they may do: `--allow-topics`, `--allow-services`,
//! `--allow-parameters`, the token (`--token`, `--token-file` or the environment variable
//! `LOCKSTEP_VIEW_TOKEN`) and TLS (`--tls-cert`, `--tls-key`); the node takes the same as parameters, except
//! the token itself (a parameter can be read by anyone on the ROS graph): `token_file` or the environment.

use std::net::SocketAddr;

use anyhow::Context as _;
use lockstep_view::{Allowlist, Kind, Tls, Token};

use crate::args::ViewArgs;

/// The environment variable a token may come from (it does not show in `ps`, unlike `--token`).
pub const TOKEN_ENV: &str = "LOCKSTEP_VIEW_TOKEN";

/// With `--bag` and no `--allow-services`: the bag player's controls may be called.
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

/// The access settings of these arguments; errors name the argument.
pub fn access(args: &ViewArgs) -> anyhow::Result<Access> {
    let allow_services = if args.allow_services.is_empty() && args.bag.is_some() {
        vec![BAG_PLAYER_SERVICES.to_owned()]
    } else {
        args.allow_services.clone()
    };
    let token = match (&args.token, &args.token_file) {
        (Some(text), _) => Some(Token::new(text).context("--token")?),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--token-file {}: cannot read it", path.display()))?;
            let first = text.lines().next().unwrap_or("");
            Some(Token::new(first).with_context(|| format!("--token-file {}", path.display()))?)
        }
        (None, None) => match std::env::var(TOKEN_ENV) {
            Ok(text) if !text.is_empty() => Some(Token::new(&text).with_context(|| TOKEN_ENV.to_owned())?),
            _ => None,
        },
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(Tls::from_pem_files(cert, key)?),
        (None, None) => None,
        _ => anyhow::bail!("--tls-cert and --tls-key go together: give both or neither"),
    };
    Ok(Access {
        allow_topics: Allowlist::new(Kind::Topics, &args.allow_topics)?,
        allow_services: Allowlist::new(Kind::Services, &allow_services)?,
        allow_parameters: Allowlist::new(Kind::Parameters, &args.allow_parameters)?,
        token,
        tls,
    })
}

/// One line on what is open to whom, for the log at start.
pub fn summary(address: SocketAddr, access: &Access) -> String {
    let list = |a: &Allowlist| match a.patterns() {
        [] => "none".to_owned(),
        p => p.join(" "),
    };
    format!(
        "topics {}; services callable: {}; parameters settable: {}; token: {}; TLS: {}{}",
        list(&access.allow_topics),
        list(&access.allow_services),
        list(&access.allow_parameters),
        if access.token.is_some() {
            "required"
        } else {
            "none"
        },
        if access.tls.is_some() { "on" } else { "off" },
        if address.ip().is_loopback() {
            " (this machine only: --address 0.0.0.0 for others)"
        } else if access.token.is_none() {
            " (listening beyond this machine without a token: anyone who reaches the port sees the topics)"
        } else {
            ""
        }
    )
}
