//! `lockstep view`: the live view for Foxglove, the node `/lockstep_view` running in this process.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use lockstep_recorder::TopicSelection;

use crate::access::access;
pub use crate::args::ViewArgs;
use crate::bag::BagOptions;
use crate::bridge::{run, ViewOptions};

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
        Ok(ViewOptions {
            address,
            selection,
            period: Duration::from_secs_f64(self.discovery_period_secs),
            queue_len: self.queue,
            sim_time: self.sim_time || self.bag.is_some(),
            parameters: !self.no_parameters,
            services: !self.no_services,
            access: access(self)?,
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
