//! `lockstep-ros <verb> ...`: the `lockstep` verbs that join the ROS graph (`replay`, `view`, `bag play`,
//! `bag record`) and `completions`. `lockstep` runs this binary for them, so that its other verbs load no ROS
//! library; usage and help name the command `lockstep`, as the user typed it.

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand};

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
    #[command(about = lockstep_cli::COMPLETIONS_ABOUT)]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
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
        RosCommand::Completions { shell } => {
            clap_complete::generate(shell, &mut full_command(), "lockstep", &mut std::io::stdout());
            Ok(())
        }
    };
    lockstep_cli::exit_status(result)
}

/// Every `lockstep` verb with its real arguments: `lockstep`'s own tree, where the verbs handed over to this
/// binary are replaced by this binary's definitions of them (for shell completions).
fn full_command() -> clap::Command {
    let ros = RosCli::command();
    let sub = |path: &[&str]| {
        path.iter()
            .try_fold(&ros, |cmd, name| cmd.find_subcommand(name))
            .cloned()
    };
    let mut full = lockstep_cli::Cli::command();
    for name in ["replay", "view", "completions"] {
        if let Some(real) = sub(&[name]) {
            full = full.mut_subcommand(name, |_| real);
        }
    }
    if let (Some(play), Some(record)) = (sub(&["bag", "play"]), sub(&["bag", "record"])) {
        full = full.mut_subcommand("bag", |bag| {
            bag.mut_subcommand("play", |_| play)
                .mut_subcommand("record", |_| record)
        });
    }
    full
}
