//! `lockstep bag record`: the recorder node in this process, with `ros2 bag record`'s flag names
//! ([`RecordArgs`], from the core), a live status line on the terminal and a one-line summary when Ctrl-C
//! ends the bag.

use std::time::Duration;

use anyhow::Context as _;
use lockstep_recorder::Status;

pub use lockstep_recorder::cli::RecordArgs;

/// Runs `lockstep bag record` until Ctrl-C (SIGINT) or SIGTERM, then finishes the bag and prints what it
/// holds. Fails when the recorder could not start or a write failed.
pub fn run(args: RecordArgs) -> anyhow::Result<()> {
    let settings = lockstep_recorder::cli::settings(&args, lockstep_recorder::unix_now_secs())?;
    let output = settings.output.clone();
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new_spinner()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} recording {prefix} {elapsed}  {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.set_prefix(output.clone());
    bar.enable_steady_tick(Duration::from_millis(200));
    let observer = {
        let bar = bar.clone();
        Box::new(move |status: &Status| bar.set_message(status.line()))
    };
    let status = crate::run(
        &args.node_name,
        settings.into(),
        Some(observer),
        args.use_sim_time,
    );
    bar.finish_and_clear();
    let status = status.with_context(|| format!("recording into {output}"))?;
    println!("{output}: {}", status.line());
    // The status's error is one line already: what failed, and what the bag holds.
    anyhow::ensure!(status.error.is_empty(), "{output}: {}", status.error);
    Ok(())
}
