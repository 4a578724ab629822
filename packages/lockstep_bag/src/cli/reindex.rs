//! `lockstep bag reindex`: salvage a damaged or unfinished bag into a new one (or in place).

use crate::{default_output, reindex_with, ReindexTarget};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `lockstep bag reindex`.
#[derive(Debug, clap::Args)]
pub struct ReindexArgs {
    /// Bag directory, or a single MCAP file.
    pub bag: PathBuf,
    /// Where to write the repaired bag (a new directory) or file (a new .mcap); it must not exist.
    /// Default: `<bag>.reindexed` beside a bag directory, `<name>.reindexed.mcap` beside a file.
    #[arg(short, long, value_name = "PATH", conflicts_with = "in_place")]
    pub output: Option<PathBuf>,
    /// Replace the damaged files themselves, each only once its repaired copy is on disk and reads
    /// back with every message salvaged from it.
    #[arg(long)]
    pub in_place: bool,
}

/// Runs `lockstep bag reindex`, printing what was salvaged and skipped to `out`.
pub fn run(args: &ReindexArgs, out: &mut dyn Write) -> Result<()> {
    let target = if args.in_place {
        ReindexTarget::InPlace
    } else {
        ReindexTarget::NewOutput(args.output.clone().unwrap_or_else(|| default_output(&args.bag)))
    };
    // The library's error names the file (and the byte offset) already.
    let report = reindex_with(&args.bag, &target).context("cannot reindex")?;
    let mut total = 0u64;
    for f in &report.files {
        total += f.messages;
        if f.was_complete {
            writeln!(
                out,
                "{}: complete, {} messages, kept as it is",
                f.path.display(),
                f.messages
            )?;
            continue;
        }
        writeln!(
            out,
            "{}: salvaged {} messages in {} chunks, {} bytes not usable",
            f.path.display(),
            f.messages,
            f.chunks,
            f.bytes_dropped
        )?;
        for s in &f.skipped {
            writeln!(
                out,
                "  skipped {} bytes at byte offset {}: {}",
                s.length, s.offset, s.reason
            )?;
        }
        if let Some(reason) = &f.stop_reason {
            writeln!(out, "  unusable end of file: {reason}")?;
        }
        if f.messages_without_channel > 0 {
            writeln!(
                out,
                "  dropped {} messages whose channel record was lost",
                f.messages_without_channel
            )?;
        }
    }
    writeln!(out, "wrote {} ({total} messages)", report.output.display())?;
    Ok(())
}
