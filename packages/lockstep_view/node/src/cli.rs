//! `lockstep view`: the live view for Foxglove, the node `/lockstep_view` running in this process.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use lockstep_recorder::TopicSelection;

use crate::access::access;
use crate::bag::BagOptions;
use crate::bridge::{run, ViewOptions};
pub use lockstep_view::args::ViewArgs;

/// The options `args` give; errors name the argument.
pub fn options(args: &ViewArgs) -> anyhow::Result<ViewOptions> {
    let address: SocketAddr = format!("{}:{}", args.address, args.port)
        .parse()
        .with_context(|| format!("--address `{}` is not an IP address", args.address))?;
    let all = args.topics.is_empty() && args.regex.is_empty();
    let selection = TopicSelection::new(all, &args.topics, &args.regex, &args.exclude_regex)?;
    let selection = match &args.bag {
        Some(bag) => {
            anyhow::ensure!(
                all,
                "--bag offers the bag's topics: give no --topics or --regex with it"
            );
            TopicSelection::new(false, &crate::bag::topics(bag)?, "", &args.exclude_regex)?
        }
        None => selection,
    };
    Ok(ViewOptions {
        address,
        selection,
        period: Duration::from_secs_f64(args.discovery_period_secs),
        queue_len: args.queue,
        sim_time: args.sim_time || args.bag.is_some(),
        parameters: !args.no_parameters,
        services: !args.no_services,
        access: access(args)?,
    })
}

/// Runs the view until SIGINT/SIGTERM.
pub fn run_view(args: ViewArgs) -> anyhow::Result<()> {
    let options = options(&args)?;
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
