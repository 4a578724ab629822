//! The `lockstep` command line, shared by its two binaries:
//! - `lockstep` takes every verb; those that need no ROS graph (bag inspection and conversion, rules,
//!   calibrate, player, launch, report, trace) run in it, and it loads no ROS library, so they work in a
//!   plain shell;
//! - `lockstep-ros`, installed beside it, runs the verbs that join the ROS graph (`replay`, `view`,
//!   `bag play`, `bag record`); `lockstep` parses their arguments (from the owning packages' pure crates, so
//!   help, completions and argument errors need no ROS) and hands them over to it.
//!
//! Each verb's arguments and logic live in the owning package's library (`<crate>::cli`); this crate only
//! dispatches, and prints a failed command's error as `error: <what>: <cause>` (never a backtrace).

use clap::{Parser, Subcommand};

mod ros_libraries;
pub use ros_libraries::{missing_library, no_ros_environment, verb_words};

/// `lockstep replay`.
pub const REPLAY_ABOUT: &str =
    "Re-simulate a recording in lock-step: every module computes each recorded frame \
from exactly the recorded (or simulated upstream) inputs; writes the outputs into a new bag with report.json";
/// `lockstep view`.
pub const VIEW_ABOUT: &str =
    "Live view for Foxglove: a Foxglove WebSocket server relaying every topic of the \
graph (raw CDR with its ros2msg schema); the node `/lockstep_view` runs in this process. In Foxglove: Open \
connection, Foxglove WebSocket, ws://<host>:8765";
/// `lockstep bag play`.
pub const BAG_PLAY_ABOUT: &str =
    "Play a bag like `ros2 bag play`: every installed message type, recorded timing \
and QoS, a stable order; the player node `/lockstep_bag_player` runs in this process (its services work \
meanwhile)";
/// `lockstep bag record`.
pub const BAG_RECORD_ABOUT: &str = "Record topics into a bag like `ros2 bag record` (same flag names): any \
installed message type, with dependency headers and the module topology; a status line while it runs; Ctrl-C \
finishes the bag";
/// `lockstep completions`.
pub const COMPLETIONS_ABOUT: &str = "Print a shell completion script. bash: `lockstep completions bash > \
~/.local/share/bash-completion/completions/lockstep`; zsh: as `_lockstep` in a directory of $fpath; fish: \
`~/.config/fish/completions/lockstep.fish`";

/// The binary that runs the verbs joining the ROS graph, beside `lockstep`.
pub const ROS_BINARY: &str = "lockstep-ros";

#[derive(Parser)]
#[command(name = "lockstep", version, about = "Lockstep command-line tools")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Print the build's version and exit.
    Version,
    /// Play, inspect, repair and convert rosbag2 bags.
    Bag(BagArgs),
    #[command(about = REPLAY_ABOUT)]
    Replay(lockstep_replay::args::ReplayArgs),
    /// Evaluate or check Datalog rule files.
    Rules(lockstep_rules::cli::RulesArgs),
    /// Calibrate the differential-drive motion model (wheel radius, track width, delay, centripetal factor)
    /// offline from a bag's cmd_vel, odom and SLAM pose; writes calibration.yaml (a ROS 2 parameter file)
    /// and trajectories.png (dead reckoning before and after against the observed poses).
    Calibrate(lockstep_calibrator::cli::CalibrateArgs),
    /// Interpolation files: generate one from waypoints within joint limits, or check one.
    Player(lockstep_interpolation::cli::PlayerArgs),
    #[command(about = VIEW_ABOUT)]
    View(lockstep_view::args::ViewArgs),
    /// Run a ROS 2 XML launch file where `ros2 launch` is not installed: `lockstep launch <file>
    /// [name:=value ...]` starts its nodes with prefixed output, forwards Ctrl-C, and stops them all when a
    /// node marked on_exit="shutdown" ends.
    Launch(lockstep_launch::cli::LaunchArgs),
    /// Render an output folder (of the demo, `lockstep replay` or `lockstep calibrate`) into PNG plots and
    /// one self-contained report.html.
    Report(lockstep_report::cli::ReportArgs),
    #[command(
        about = lockstep_intercept::cli::ABOUT,
        long_about = lockstep_intercept::cli::LONG_ABOUT,
        after_help = lockstep_intercept::cli::EXAMPLES,
        override_usage = lockstep_intercept::cli::USAGE
    )]
    Trace(lockstep_intercept::cli::TraceArgs),
    /// Run a replay regression suite: every recording of a corpus replayed in lock-step with the modules
    /// under test (per variant of their launch arguments), compared with the recording or an earlier run
    /// within the suite's tolerances; report.json and differences.png per case, summary.json, junit.xml and
    /// summary.html. Exit 0 when every case passed, 1 when any failed, 2 for a bad suite file.
    Test(lockstep_suite::cli::TestArgs),
    #[command(about = COMPLETIONS_ABOUT)]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `lockstep bag`: `play` and `record` join the ROS graph; the other verbs are the bag library's.
#[derive(clap::Args)]
pub struct BagArgs {
    #[command(subcommand)]
    pub command: BagVerb,
}

#[derive(Subcommand)]
pub enum BagVerb {
    #[command(about = BAG_PLAY_ABOUT)]
    Play(lockstep_bag_player::args::PlayArgs),
    #[command(about = BAG_RECORD_ABOUT)]
    Record(lockstep_recorder::cli::RecordArgs),
    #[command(flatten)]
    Library(lockstep_bag::cli::BagCommand),
}

/// A command's outcome as the process's: success, or `error: <what>: <cause>` on stderr and failure.
pub fn exit_status(result: anyhow::Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            // Not `{:?}`: anyhow prints a backtrace there whenever RUST_BACKTRACE is set.
            eprintln!("error: {}", error_text(&err));
            std::process::ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, each said once (see [`lockstep_bag::error_chain`]).
pub fn error_text(err: &anyhow::Error) -> String {
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

    #[test]
    fn the_verbs_joining_the_graph_are_parsed_here_with_their_real_arguments() {
        let parse = |s: &str| Cli::try_parse_from(std::iter::once("lockstep").chain(s.split_whitespace()));
        for ok in [
            "replay rec -o out --strict",
            "view --port 9000",
            "bag record -a -o b",
        ] {
            assert!(parse(ok).is_ok(), "{ok}");
        }
        for (bad, flag) in [
            ("replay rec", "--output"),
            ("view --port x", "--port"),
            ("bag record", "--all"),
        ] {
            let err = parse(bad).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(flag), "{bad}: {err}");
        }
        let help = parse("replay --help")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(help.contains("--missing-upstream"), "{help}");
    }

    #[test]
    fn trace_takes_the_command_after_the_dashes() {
        let cli = Cli::try_parse_from(["lockstep", "trace", "--replay", "--", "python3", "n.py", "--help"])
            .unwrap();
        let Command::Trace(args) = cli.command else {
            panic!("not trace");
        };
        assert!(args.replay);
        assert_eq!(args.command, ["python3", "n.py", "--help"]);
    }
}
