//! `lockstep view`: the live view for Foxglove, the node `/lockstep_view` running in this process.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use lockstep_recorder::TopicSelection;

use crate::bag::BagOptions;
use crate::bridge::{run, ViewOptions};

/// Arguments of `lockstep view`.
#[derive(Debug, clap::Args)]
pub struct ViewArgs {
    /// Port to listen on (Foxglove's default is 8765).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// Address to listen on (0.0.0.0: every interface; 127.0.0.1: this machine only).
    #[arg(long, default_value = "0.0.0.0")]
    pub address: String,
    /// Offer only these topics (and those `--regex` matches); default: every topic.
    #[arg(long, num_args = 1..)]
    pub topics: Vec<String>,
    /// Offer the topics this regular expression matches.
    #[arg(long, default_value = "")]
    pub regex: String,
    /// Do not offer the topics this regular expression matches.
    #[arg(long, default_value = "")]
    pub exclude_regex: String,
    /// Seconds between two looks at the graph (new and vanished topics).
    #[arg(long, default_value_t = 1.0)]
    pub discovery_period_secs: f64,
    /// Messages kept per client before a slow client's oldest are dropped (counted and logged).
    #[arg(long, default_value_t = 1024)]
    pub queue: usize,
    /// Stamp messages with /clock and send it as the protocol's time (for simulated time).
    #[arg(long)]
    pub sim_time: bool,
    /// Do not offer the nodes' parameters (Foxglove's Parameters panel reads and sets them).
    #[arg(long)]
    pub no_parameters: bool,
    /// Do not offer the graph's services (Foxglove's Service Call panel calls them, in JSON).
    #[arg(long)]
    pub no_services: bool,
    /// Serve this bag instead of the live graph: `lockstep bag play` runs beside the view with /clock, paused
    /// (call /lockstep_bag_player/resume, pause, set_rate, seek ... from Foxglove's Service Call panel), and
    /// only the bag's topics are offered.
    #[arg(long)]
    pub bag: Option<std::path::PathBuf>,
    /// With --bag: start playing at once.
    #[arg(long, requires = "bag")]
    pub play: bool,
    /// With --bag: playback rate.
    #[arg(long, requires = "bag", default_value_t = 1.0)]
    pub rate: f64,
    /// With --bag: play again from the start at the end.
    #[arg(long = "loop", requires = "bag")]
    pub looping: bool,
}

impl ViewArgs {
    /// The options these arguments give; errors name the argument.
    pub fn options(&self) -> anyhow::Result<ViewOptions> {
        let address: SocketAddr = format!("{}:{}", self.address, self.port)
            .parse()
            .with_context(|| format!("--address `{}` is not an IP address", self.address))?;
        let all = self.topics.is_empty() && self.regex.is_empty();
        let selection = TopicSelection::new(all, &self.topics, &self.regex, &self.exclude_regex)?;
        let selection = match &self.bag {
            Some(bag) => {
                anyhow::ensure!(
                    all,
                    "--bag offers the bag's topics: give no --topics or --regex with it"
                );
                TopicSelection::new(false, &crate::bag::topics(bag)?, "", &self.exclude_regex)?
            }
            None => selection,
        };
        anyhow::ensure!(
            self.discovery_period_secs.is_finite() && self.discovery_period_secs > 0.0,
            "--discovery-period-secs must be > 0, not {}",
            self.discovery_period_secs
        );
        anyhow::ensure!(self.queue >= 1, "--queue must be at least 1");
        Ok(ViewOptions {
            address,
            selection,
            period: Duration::from_secs_f64(self.discovery_period_secs),
            queue_len: self.queue,
            sim_time: self.sim_time || self.bag.is_some(),
            parameters: !self.no_parameters,
            services: !self.no_services,
        })
    }
}

/// Runs the view until SIGINT/SIGTERM.
pub fn run_view(args: ViewArgs) -> anyhow::Result<()> {
    let options = args.options()?;
    let _player = match &args.bag {
        Some(bag) => Some(crate::bag::start(&BagOptions {
            bag: bag.clone(),
            play: args.play,
            rate: args.rate,
            looping: args.looping,
        })?),
        None => None,
    };
    lockstep_ros::run_node("lockstep_view", move |node| {
        Ok(async move { run(node, options).await.map_err(Into::into) })
    })
    .context("lockstep view")
}
