//! `lockstep_replay`: the lock-step replay node; the same as `lockstep replay`, with the node's
//! own `--ros-args` after the replay's arguments:
//!
//! ```text
//! lockstep_replay <bag> --output <dir> [--frames all|<module>] [--strict] [--timeout-ms N] --ros-args ...
//! ```

use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _};

#[derive(Debug, clap::Parser)]
#[command(
    name = "lockstep_replay",
    about = "Lock-step re-simulation of a recording through live modules"
)]
struct Cli {
    #[command(flatten)]
    args: lockstep_replay_node::replay_cli::ReplayArgs,
}

fn main() -> ExitCode {
    // rcl reads everything from --ros-args on itself.
    let ours: Vec<String> = std::env::args().take_while(|a| a != "--ros-args").collect();
    let node_interface =
        lockstep_ros::help::interface_sections(include_str!("../../../README.md"), "lockstep_replay");
    let matches = Cli::command()
        .after_help(format!(
            "The node (its ROS arguments after --ros-args):{node_interface}"
        ))
        .get_matches_from(ours);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match lockstep_replay_node::replay_cli::run(cli.args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", lockstep_bag::error_chain(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}
