//! `lockstep_view`: the live view node (a Foxglove WebSocket server relaying every topic of the graph).
//! Parameters mirror `lockstep view`'s flags: `port`, `address`, `topics` (comma separated), `regex`,
//! `exclude_regex`, `discovery_period_secs`, `queue`, `sim_time`, `parameters`, `services`.

use anyhow::Context as _;
use lockstep_view_node::bridge::run;
use lockstep_view_node::cli::ViewArgs;

/// Parameters of the node.
#[derive(r2r::RosParams, Debug, Clone)]
struct ViewParams {
    /// Port to listen on.
    port: i64,
    /// Address to listen on.
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
}

impl Default for ViewParams {
    fn default() -> Self {
        ViewParams {
            port: 8765,
            address: "0.0.0.0".into(),
            topics: String::new(),
            regex: String::new(),
            exclude_regex: String::new(),
            discovery_period_secs: 1.0,
            queue: 1024,
            sim_time: false,
            parameters: true,
            services: true,
        }
    }
}

fn main() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_view",
        about: "live view for Foxglove: a Foxglove WebSocket server relaying every topic of the graph as raw CDR with its message definition.",
        readme: Some(include_str!("../../README.md")),
    });
    lockstep_ros::run_node("lockstep_view", |node| {
        let declared = lockstep_ros::declare_parameters(&node, ViewParams::default())?;
        let p = declared.current()?;
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
            bag: None,
            play: false,
            rate: 1.0,
            looping: false,
        };
        let options = args.options()?;
        Ok(async move { run(node, options).await.map_err(Into::into) })
    })
    .context("lockstep_view")
}
