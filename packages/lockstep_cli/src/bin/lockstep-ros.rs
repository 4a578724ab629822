//! `lockstep-ros <verb> ...`: the `lockstep` verbs that join the ROS graph (`replay`, `view`, `bag play`,
//! `bag record`). `lockstep` parses their arguments first and runs this binary for them, so that its other
//! verbs load no ROS library; usage and help name the command `lockstep`, as the user typed it.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "lockstep",
    bin_name = "lockstep",
    version,
    about = "Lockstep command-line tools that join the ROS graph"
)]
struct RosCli {
    #[command(subcommand)]
    command: RosCommand,
}

#[derive(Subcommand)]
enum RosCommand {
    #[command(about = lockstep_cli::REPLAY_ABOUT)]
    Replay(lockstep_replay_node::replay_cli::ReplayArgs),
    #[command(about = lockstep_cli::VIEW_ABOUT)]
    View(lockstep_view_node::cli::ViewArgs),
    /// Play or record bags on the ROS graph.
    Bag {
        #[command(subcommand)]
        verb: BagVerb,
    },
}

#[derive(Subcommand)]
enum BagVerb {
    #[command(about = lockstep_cli::BAG_PLAY_ABOUT)]
    Play(lockstep_bag_player_node::cli::PlayArgs),
    #[command(about = lockstep_cli::BAG_RECORD_ABOUT)]
    Record(lockstep_recorder_node::cli::RecordArgs),
}

fn main() -> ExitCode {
    let result = match RosCli::parse().command {
        RosCommand::Replay(args) => lockstep_replay_node::replay_cli::run(args),
        RosCommand::View(args) => lockstep_view_node::cli::run_view(args),
        RosCommand::Bag {
            verb: BagVerb::Play(args),
        } => lockstep_bag_player_node::cli::run(args),
        RosCommand::Bag {
            verb: BagVerb::Record(args),
        } => lockstep_recorder_node::cli::run(args),
    };
    lockstep_cli::exit_status(result)
}
