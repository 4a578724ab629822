//! `lockstep <verb> ...`: one binary for every Lockstep command-line tool, like `ros2 <verb>`.
//! Each verb's arguments and logic live in the owning package's library (`<crate>::cli`); this file only
//! dispatches.

use clap::{Parser, Subcommand};

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
    /// Inspect, repair and convert rosbag2 bags.
    Bag(lockstep_bag::cli::BagArgs),
    /// Evaluate or check Datalog rule files.
    Rules(lockstep_rules::cli::RulesArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Bag(args) => lockstep_bag::cli::run(args),
        Command::Version => {
            println!("lockstep {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Rules(args) => lockstep_rules::cli::run(args),
    }
}
