//! `lockstep <verb> ...`: one binary for every Lockstep command-line tool, like `ros2 <verb>`.
//! Each verb's arguments and logic live in the owning package's library (`<crate>::cli`); this file only
//! dispatches, and prints a failed command's error as `error: <what>: <cause>` (never a backtrace).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "lockstep", version, about = "Lockstep command-line tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the build's version and exit.
    Version,
    // One variant per package subcommand, e.g. `Bag(lockstep_bag::cli::BagArgs)`.
    /// Play, inspect, repair and convert rosbag2 bags.
    Bag(BagArgs),
    /// Re-simulate a recording in lock-step: every module computes each recorded frame from exactly the
    /// recorded (or simulated upstream) inputs; writes the outputs into a new bag with report.json.
    Replay(lockstep_replay_node::replay_cli::ReplayArgs),
    /// Evaluate or check Datalog rule files.
    Rules(lockstep_rules::cli::RulesArgs),
    /// Calibrate the differential-drive motion model (wheel radius, track width, delay, centripetal factor)
    /// offline from a bag's cmd_vel, odom and SLAM pose; writes calibration.yaml (a ROS 2 parameter file)
    /// and trajectories.png (dead reckoning before and after against the observed poses).
    Calibrate(lockstep_calibrator::cli::CalibrateArgs),
    /// Interpolation files: generate one from waypoints within joint limits, or check one.
    Player(lockstep_player::cli::PlayerArgs),
    /// Live view for Foxglove: a Foxglove WebSocket server relaying every topic of the graph (raw CDR with
    /// its ros2msg schema); the node `/lockstep_view` runs in this process. In Foxglove: Open connection,
    /// Foxglove WebSocket, ws://<host>:8765.
    View(lockstep_view_node::cli::ViewArgs),
    /// Run a ROS 2 XML launch file where `ros2 launch` is not installed: `lockstep launch <file>
    /// [name:=value ...]` starts its nodes with prefixed output, forwards Ctrl-C, and stops them all when a
    /// node marked on_exit="shutdown" ends.
    Launch(lockstep_launch::cli::LaunchArgs),
    /// Render an output folder (of the demo, `lockstep replay` or `lockstep calibrate`) into PNG plots and
    /// one self-contained report.html.
    Report(lockstep_report::cli::ReportArgs),
    /// Print a shell completion script. bash: `lockstep completions bash >
    /// ~/.local/share/bash-completion/completions/lockstep`; zsh: as `_lockstep` in a directory of $fpath;
    /// fish: `~/.config/fish/completions/lockstep.fish`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `lockstep bag`: `play` comes from the player's package, `record` from the recorder's, the other verbs from
/// the bag library's.
#[derive(clap::Args)]
struct BagArgs {
    #[command(subcommand)]
    command: BagVerb,
}

#[derive(Subcommand)]
enum BagVerb {
    /// Play a bag like `ros2 bag play`: every installed message type, recorded timing and QoS, a stable
    /// order; the player node `/lockstep_bag_player` runs in this process (its services work meanwhile).
    Play(lockstep_replay_node::cli::PlayArgs),
    /// Record topics into a bag like `ros2 bag record` (same flag names): any installed message type, with
    /// dependency headers and the module topology; a status line while it runs; Ctrl-C finishes the bag.
    Record(lockstep_recorder_node::cli::RecordArgs),
    #[command(flatten)]
    Library(lockstep_bag::cli::BagCommand),
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Bag(BagArgs {
            command: BagVerb::Play(args),
        }) => lockstep_replay_node::cli::run(args),
        Command::Bag(BagArgs {
            command: BagVerb::Record(args),
        }) => lockstep_recorder_node::cli::run(args),
        Command::Bag(BagArgs {
            command: BagVerb::Library(command),
        }) => lockstep_bag::cli::run(lockstep_bag::cli::BagArgs { command }),
        Command::Version => {
            println!("lockstep {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Rules(args) => lockstep_rules::cli::run(args),
        Command::Calibrate(args) => lockstep_calibrator::cli::run(args),
        Command::Player(args) => lockstep_player::cli::run(args),
        Command::Replay(args) => lockstep_replay_node::replay_cli::run(args),
        Command::View(args) => lockstep_view_node::cli::run_view(args),
        Command::Launch(args) => lockstep_launch::cli::run_launch(args),
        Command::Report(args) => lockstep_report::cli::run(args),
        Command::Completions { shell } => {
            use clap::CommandFactory as _;
            clap_complete::generate(shell, &mut Cli::command(), "lockstep", &mut std::io::stdout());
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // Not `{:?}`: anyhow prints a backtrace there whenever RUST_BACKTRACE is set.
            eprintln!("error: {}", error_text(&err));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, each said once (see [`lockstep_bag::error_chain`]).
fn error_text(err: &anyhow::Error) -> String {
    lockstep_bag::error_chain(err.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn causes_are_said_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let lib = lockstep_bag::Error::Io {
            path: "/nonexistent".into(),
            source: io,
        };
        let err = Err::<(), _>(lib).context("cannot open bag").unwrap_err();
        assert_eq!(
            error_text(&err),
            "cannot open bag: /nonexistent: No such file or directory"
        );
        // A cause the message does not hold yet is kept.
        let err = anyhow::anyhow!("disk on fire").context("cannot write");
        assert_eq!(error_text(&err), "cannot write: disk on fire");
    }
}
