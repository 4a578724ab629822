//! `lockstep <verb> ...`: one command for every Lockstep command-line tool, like `ros2 <verb>`. The verbs that
//! join the ROS graph run in `lockstep-ros` beside this binary, so this one loads no ROS library (see the
//! crate's library).

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser as _;
use lockstep_cli::{BagArgs, BagVerb, Cli, Command};

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    // Parsed here first, the verbs `lockstep-ros` runs too: their help and argument errors need no ROS.
    let result = match Cli::parse().command {
        Command::Bag(BagArgs {
            command: BagVerb::Library(command),
        }) => lockstep_bag::cli::run(lockstep_bag::cli::BagArgs { command }),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "lockstep", &mut std::io::stdout());
            Ok(())
        }
        Command::Version => {
            println!("lockstep {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Rules(args) => lockstep_rules::cli::run(args),
        Command::Calibrate(args) => lockstep_calibrator::cli::run(args),
        Command::Player(args) => lockstep_interpolation::cli::run(args),
        Command::Launch(args) => lockstep_launch::cli::run_launch(args),
        Command::Report(args) => lockstep_report::cli::run(args),
        // Returns only when the command could not start (it replaces this process).
        Command::Trace(args) => lockstep_intercept::cli::run(args).map(|never| match never {}),
        // Its exit status says more than success or failure (2: a bad suite file).
        Command::Test(args) => return lockstep_suite::cli::run(args),
        // Handed over above.
        Command::Bag(BagArgs {
            command: BagVerb::Play(_) | BagVerb::Record(_),
        })
        | Command::Replay(_)
        | Command::View(_) => return hand_over(&args[1..]),
    };
    lockstep_cli::exit_status(result)
}

/// Run `lockstep-ros` (beside this binary) with `args` in place of this process: signals, standard streams
/// and the exit status are its own. When the ROS libraries it links cannot be loaded, one line names the first
/// missing one and what to source, instead of the dynamic loader's message.
fn hand_over(args: &[OsString]) -> ExitCode {
    use std::os::unix::process::CommandExt as _;
    let ros = std::env::current_exe().map(|exe| exe.with_file_name(lockstep_cli::ROS_BINARY));
    let error = match &ros {
        Ok(path) => {
            let verb = lockstep_cli::verb_words(args);
            if let Some(missing) = lockstep_cli::missing_library(path) {
                eprintln!("error: {}", lockstep_cli::no_ros_environment(&verb, &missing));
                return ExitCode::FAILURE;
            }
            let err = std::process::Command::new(path).args(args).exec();
            format!(
                "`lockstep {verb}` runs {} and it could not start: {err} (it is built beside `lockstep` by `cargo build -p lockstep_cli`, with its default `ros` feature, on a machine with ROS 2)",
                path.display()
            )
        }
        Err(e) => format!(
            "cannot tell where this binary is, to find {}: {e}",
            lockstep_cli::ROS_BINARY
        ),
    };
    eprintln!("error: {error}");
    ExitCode::FAILURE
}
