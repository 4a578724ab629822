//! `lockstep bag ...`: inspect, repair, convert, filter, merge and measure rosbag2 bags (feature `cli`).
//!
//! `info`, `echo`, `du`, `convert`, `filter` and `merge` only read their input bags (sqlite3 bags are opened
//! read-only and immutable, see [`crate::reader`]); the last three write a new bag directory and refuse one that
//! exists. `reindex` is the one command that writes into a bag directory.
//!
//! Error contexts name the step that failed ("cannot open bag"); the library error after them names
//! the file, so the path is not repeated.

mod copy;
mod du;
mod du_files;
mod echo;
mod filter;
mod info;
mod merge;
mod reindex;
mod select;

pub use copy::{convert, CompressionArg, OutputArgs};
pub use du::{du, DuArgs};
pub use echo::{echo, EchoOptions};
pub use filter::{filter, FilterArgs, FilterReport};
pub use info::{info, info_with};
pub use merge::{merge, MergeArgs};

use anyhow::Result;
use lockstep_ranges::{real_arg, Real};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `lockstep bag`.
#[derive(Debug, clap::Args)]
pub struct BagArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: BagCommand,
}

/// Offsets into a bag: up to about 300 years of recording.
const START_OFFSET_S: Real = Real::closed(0.0, 1e10, "s");

/// The `lockstep bag` verbs.
#[derive(Debug, clap::Subcommand)]
pub enum BagCommand {
    /// Print a bag's files, size, duration, topics and Lockstep extra data (like `ros2 bag info`), with the
    /// nodes traced by interception (`lockstep trace`) when the bag has their event topics.
    /// Only reads: nothing is written into the bag directory.
    Info {
        /// Bag directory, or a single MCAP or sqlite3 file.
        bag: PathBuf,
        /// Also read every message back (CRCs, decompression), so that a damaged chunk under an intact
        /// summary is found. Without it, info reads the summaries and checks that they fit the file
        /// (instant on any bag; a file cut short is still found), and only the messages of the nodes'
        /// event topics (`lockstep_interfaces/msg/NodeEvents`) when the bag has any.
        #[arg(long)]
        verify: bool,
    },
    /// Repair a bag whose recorder was killed or whose files are damaged: salvage every chunk that
    /// reads back intact into a new bag (default `<bag>.reindexed`), or in place with --in-place.
    Reindex(reindex::ReindexArgs),
    /// Print a topic's messages as YAML, like `ros2 topic echo`, decoded with the message definition the
    /// bag holds (or the installed .msg files when it holds none).
    Echo {
        /// Bag directory, or a single MCAP or sqlite3 file.
        bag: PathBuf,
        /// The topic.
        topic: String,
        /// Print at most this many messages.
        #[arg(long)]
        limit: Option<u64>,
        /// Print only this field (`pose.position`).
        #[arg(long)]
        field: Option<String>,
        /// Skip the first this many seconds of the bag.
        #[arg(long, default_value_t = 0.0, value_parser = real_arg(START_OFFSET_S))]
        start_offset: f64,
    },
    /// Copy any readable bag (sqlite3 or MCAP) into a new MCAP bag written by this library. The
    /// input is only read.
    Convert {
        /// Input bag directory or file.
        input: PathBuf,
        /// Output bag directory (must not exist or be empty).
        output: PathBuf,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Copy a bag's messages of some topics and a time range into a new bag (like `mcap filter`), keeping
    /// what makes it a Lockstep recording: the /lockstep/ topics and the dependency headers of the topics
    /// kept, the attachments and metadata records. The input is only read.
    Filter(FilterArgs),
    /// Merge two or more bags by log time into a new bag (equal times: the order of the inputs on the
    /// command line, then each input's own order). The inputs are only read.
    Merge(MergeArgs),
    /// Print the bytes per topic and, per storage file, per chunk compression (largest first).
    Du(DuArgs),
}

/// Runs a `lockstep bag` command, printing to stdout (progress to stderr).
pub fn run(args: BagArgs) -> Result<()> {
    let stdout = std::io::stdout();
    run_with(args.command, &mut stdout.lock(), &mut std::io::stderr())
}

/// Runs a `lockstep bag` command, printing its result to `out` and the progress of a long copy to `progress`.
pub fn run_with(command: BagCommand, out: &mut dyn Write, progress: &mut dyn Write) -> Result<()> {
    match command {
        BagCommand::Info { bag, verify } => info_with(&bag, verify, out),
        BagCommand::Echo {
            bag,
            topic,
            limit,
            field,
            start_offset,
        } => {
            let opts = EchoOptions {
                limit,
                field,
                start_offset_secs: start_offset,
            };
            echo(&bag, &topic, &opts, out).map(|_| ())
        }
        BagCommand::Reindex(args) => reindex::run(&args, out),
        BagCommand::Convert {
            input,
            output,
            out: how,
        } => {
            let mut defs = copy::installed_definitions();
            let n = convert(&input, &output, how.writer_options()?, &mut defs, progress)?;
            writeln!(
                out,
                "converted {n} messages from {} to {}",
                input.display(),
                output.display()
            )?;
            Ok(())
        }
        BagCommand::Filter(args) => filter::run(&args, out, progress),
        BagCommand::Merge(args) => merge::run(&args, out, progress),
        BagCommand::Du(args) => du(&args.bag, args.json, out),
    }
}
