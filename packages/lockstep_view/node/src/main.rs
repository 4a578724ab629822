//! `lockstep_view`: the live view node (a Foxglove WebSocket server relaying every topic of the graph).
//! Parameters mirror `lockstep view`'s flags: `port`, `address`, `topics` (comma separated), `regex`,
//! `exclude_regex`, `discovery_period_secs`, `queue`, `sim_time`, `parameters`, `services`, `allow_topics`,
//! `allow_services`, `allow_parameters` (one regular expression each; `|` for several), `token_file`,
//! `tls_cert`, `tls_key`. The token itself is no parameter (anyone on the graph can read parameters): it comes
//! from `token_file` or the environment variable `LOCKSTEP_VIEW_TOKEN`.

use anyhow::Context as _;
use lockstep_ros::{Int, ParamRule, ParamRules, Real};
use lockstep_view_node::bridge::run;
use lockstep_view_node::cli::ViewArgs;

/// Parameters of the node.
#[derive(r2r::RosParams, Debug, Clone)]
struct ViewParams {
    /// Port to listen on.
    port: i64,
    /// Address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface).
    address: String,
    /// Topics to offer, comma separated (with `regex` empty too: every topic).
    topics: String,
    /// Offer the topics this regular expression matches.
    regex: String,
    /// Do not offer the topics this regular expression matches.
    exclude_regex: String,
    /// Seconds between two looks at the graph.
    discovery_period_secs: f64,
    /// Messages kept per client before a slow client's oldest are dropped.
    queue: i64,
    /// Stamp messages with /clock and send it as the protocol's time.
    sim_time: bool,
    /// Offer the nodes' parameters (read and set through their parameter services).
    parameters: bool,
    /// Offer the graph's services (calls in JSON).
    services: bool,
    /// Topics that may be offered: a regular expression matching whole names.
    allow_topics: String,
    /// Services that may be called: a regular expression matching whole names ("": none).
    allow_services: String,
    /// Parameters (/node.parameter) that may be set: a regular expression matching whole names ("": none).
    allow_parameters: String,
    /// File holding the token clients must send ("": LOCKSTEP_VIEW_TOKEN, or no token).
    token_file: String,
    /// Certificate chain (PEM) to serve wss:// with ("": no TLS).
    tls_cert: String,
    /// Private key (PEM) of tls_cert.
    tls_key: String,
}

/// What each parameter may hold (`lockstep_ros::ParamRules`), checked at start and on every run-time set; the
/// same ranges as `lockstep view`'s flags.
const RULES: &[ParamRule] = &[
    ParamRule::int("port", Int::closed(0, 65535, "")),
    ParamRule::non_empty("address"),
    ParamRule::real("discovery_period_secs", Real::closed(0.01, 3600.0, "s")),
    ParamRule::int("queue", Int::closed(1, 1_000_000, "messages")),
];

impl ParamRules for ViewParams {
    fn param_rules() -> &'static [ParamRule] {
        RULES
    }
}

impl Default for ViewParams {
    fn default() -> Self {
        ViewParams {
            port: 8765,
            address: "127.0.0.1".into(),
            topics: String::new(),
            regex: String::new(),
            exclude_regex: String::new(),
            discovery_period_secs: 1.0,
            queue: 1024,
            sim_time: false,
            parameters: true,
            services: true,
            allow_topics: ".*".into(),
            allow_services: String::new(),
            allow_parameters: String::new(),
            token_file: String::new(),
            tls_cert: String::new(),
            tls_key: String::new(),
        }
    }
}

/// An optional path parameter ("": none).
fn path(text: String) -> Option<std::path::PathBuf> {
    (!text.is_empty()).then(|| text.into())
}

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_view", run_view())
}

fn run_view() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_view",
        about: "live view for Foxglove: a Foxglove WebSocket server relaying every topic of the graph as raw CDR with its message definition.",
        readme: Some(include_str!("../../README.md")),
        rules: <ViewParams as lockstep_ros::ParamRules>::param_rules(),
    });
    lockstep_ros::run_node("lockstep_view", |node| {
        // A bad start value stops the node naming the parameter and its range; every parameter is read at
        // start only, so a run-time set is refused saying so.
        let p = lockstep_ros::declare_start_only_parameters(&node, ViewParams::default())?;
        let args = ViewArgs {
            port: u16::try_from(p.port).map_err(|_| anyhow::anyhow!("parameter `port` is {}", p.port))?,
            address: p.address,
            topics: lockstep_ros::param_list(&p.topics),
            regex: p.regex,
            exclude_regex: p.exclude_regex,
            discovery_period_secs: p.discovery_period_secs,
            queue: usize::try_from(p.queue)
                .map_err(|_| anyhow::anyhow!("parameter `queue` is {}", p.queue))?,
            sim_time: p.sim_time,
            no_parameters: !p.parameters,
            no_services: !p.services,
            allow_topics: vec![p.allow_topics],
            allow_services: vec![p.allow_services],
            allow_parameters: vec![p.allow_parameters],
            token: None,
            token_file: path(p.token_file),
            tls_cert: path(p.tls_cert),
            tls_key: path(p.tls_key),
            bag: None,
            play: false,
            rate: 1.0,
            looping: false,
        };
        let options = lockstep_view_node::cli::options(&args)?;
        Ok(async move { run(node, options).await.map_err(Into::into) })
    })
    .context("lockstep_view")
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_ros::param_rules::check_all;

    #[test]
    fn the_defaults_pass_the_rules_and_bad_values_are_refused_with_the_range() {
        assert_eq!(check_all(&mut ViewParams::default()), Ok(()));
        let mut p = ViewParams {
            discovery_period_secs: f64::INFINITY,
            ..ViewParams::default()
        };
        assert_eq!(
            check_all(&mut p).err().as_deref(),
            Some("parameter 'discovery_period_secs' = inf: must be finite and in [0.01, 3600] s")
        );
        let mut p = ViewParams {
            port: 70000,
            ..ViewParams::default()
        };
        assert_eq!(
            check_all(&mut p).err().as_deref(),
            Some("parameter 'port' = 70000: must be an integer in [0, 65535]")
        );
    }
}
