//! Who may connect to the view and what they may do: `--allow-topics`, `--allow-services`,
//! `--allow-parameters`, the token (`--token`, `--token-file` or the environment variable
//! `LOCKSTEP_VIEW_TOKEN`) and TLS (`--tls-cert`, `--tls-key`); the node takes the same as parameters, except
//! the token itself (a parameter can be read by anyone on the ROS graph): `token_file` or the environment.

use anyhow::Context as _;
use lockstep_view::policy::{allowed_services, token_of_env, token_of_file};
pub use lockstep_view::policy::{Access, BAG_PLAYER_SERVICES};
use lockstep_view::{Tls, Token};

use lockstep_view::args::ViewArgs;

/// The environment variable a token may come from (it does not show in `ps`, unlike `--token`).
pub const TOKEN_ENV: &str = "LOCKSTEP_VIEW_TOKEN";

/// The largest token file read.
const MAX_TOKEN_FILE_BYTES: u64 = 64 << 10;

/// The access settings of these arguments; errors name the argument.
pub fn access(args: &ViewArgs) -> anyhow::Result<Access> {
    let allow_services = allowed_services(&args.allow_services, args.bag.is_some());
    let token = match (&args.token, &args.token_file) {
        (Some(text), _) => Some(Token::new(text).context("--token")?),
        (None, Some(path)) => {
            let text = lockstep_ranges::file::read_text(path, MAX_TOKEN_FILE_BYTES)
                .with_context(|| format!("--token-file {}: cannot read it", path.display()))?;
            Some(token_of_file(&text).with_context(|| format!("--token-file {}", path.display()))?)
        }
        (None, None) => {
            token_of_env(std::env::var(TOKEN_ENV).ok().as_deref()).with_context(|| TOKEN_ENV.to_owned())?
        }
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(Tls::from_pem_files(cert, key)?),
        (None, None) => None,
        _ => anyhow::bail!("--tls-cert and --tls-key go together: give both or neither"),
    };
    let (topics, parameters) = (&args.allow_topics, &args.allow_parameters);
    Ok(Access::new(topics, &allow_services, parameters, token, tls)?)
}
