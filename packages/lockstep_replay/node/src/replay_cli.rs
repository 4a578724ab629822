//! `lockstep replay <bag> --output <dir>`: lock-step re-simulation of a recording (seed 000), with a
//! progress bar, a readable summary and `report.json` in the output bag directory.
//!
//! Today it runs the example pipeline's modules in-process (`--in-process`); stepping live module
//! processes over DDS (the step protocol) is not built yet and is refused with that reason.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use lockstep_bag::BagReader;
use lockstep_replay::lockstep::{
    replay_observed, write_bag, FrameSelection, Recording, ReplayOptions, ReplayOutcome,
};

use crate::in_process::{parse_params, pipeline_modules};

/// Arguments of `lockstep replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The recording (a bag written by lockstep_recorder).
    pub bag: PathBuf,
    /// Directory of the new bag holding the simulated outputs and their headers (must not exist).
    #[arg(long, short)]
    pub output: PathBuf,
    /// `all` (every frame), or a module name: its frames and the frames they depend on.
    #[arg(long, default_value = "all")]
    pub frames: String,
    /// A frame whose back-trace reaches outside the recording is an error instead of skipped.
    #[arg(long)]
    pub strict: bool,
    /// Run the example pipeline's modules in this process (no DDS).
    #[arg(long)]
    pub in_process: bool,
    /// A module parameter, `<module>.<name>=<value>` (repeatable).
    #[arg(long = "param", short = 'p')]
    pub params: Vec<String>,
    /// Longest wait for a live module's output over DDS, milliseconds (DDS mode).
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u64,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Runs `lockstep replay`.
pub fn run(args: ReplayArgs) -> anyhow::Result<()> {
    if !args.in_process {
        bail!(
            "stepping live module processes over DDS is not built yet: run the example pipeline in-process with --in-process"
        );
    }
    if std::fs::read_dir(&args.output).is_ok_and(|mut d| d.next().is_some()) {
        bail!("--output {}: exists and is not empty", args.output.display());
    }
    let params = parse_params(&args.params)?;
    let mut modules = pipeline_modules(&params)?;
    let reader = BagReader::open(&args.bag).context("cannot open the recording")?;
    let recording = Recording::load(&reader).context("cannot read the recording")?;
    let options = ReplayOptions {
        frames: match args.frames.as_str() {
            "all" => FrameSelection::All,
            module => FrameSelection::Module(module.to_owned()),
        },
        strict: args.strict,
    };
    let bar = progress_bar(args.quiet);
    let outcome = replay_observed(&recording, &mut modules, &options, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    write_bag(&recording, &outcome, &args.output).context("cannot write the simulated bag")?;
    let report = report_json(&recording, &outcome);
    let path = args.output.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    print!("{}", summary(&args.bag, &args.output, &outcome));
    Ok(())
}

fn progress_bar(quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} frames, {per_sec}, {eta} left") {
        bar.set_style(style);
    }
    bar
}

/// The evaluation as JSON: per channel recorded / simulated / exact counts and the first difference; the
/// skipped frames; the modules whose recorded outputs were used.
fn report_json(recording: &Recording, outcome: &ReplayOutcome) -> serde_json::Value {
    let first = outcome.first_differences();
    let channels: serde_json::Map<String, serde_json::Value> = outcome
        .exact_by_channel()
        .into_iter()
        .map(|(channel, (simulated, exact))| {
            let recorded = recording.channels.get(&channel).map_or(0, |c| c.count);
            let difference = first.get(&channel).map(|o| {
                serde_json::json!({
                    "module": o.header.module_name,
                    "sequence_num": o.header.sequence_num,
                    "epoch": o.header.epoch,
                    "log_time_ns": o.data_log_time_ns,
                })
            });
            let entry = serde_json::json!({
                "recorded": recorded,
                "simulated": simulated,
                "exact": exact,
                "exact_ratio": if simulated > 0 { exact as f64 / simulated as f64 } else { 0.0 },
                "first_difference": difference,
            });
            (channel, entry)
        })
        .collect();
    let skipped: Vec<serde_json::Value> = outcome
        .skipped
        .iter()
        .map(|s| {
            serde_json::json!({
                "module": s.module, "channel": s.channel, "sequence_num": s.sequence_num, "reason": s.reason,
            })
        })
        .collect();
    serde_json::json!({
        "frames_selected": outcome.selected,
        "frames_replayed": outcome.outputs.len(),
        "frames_skipped": skipped,
        "modules_not_live": outcome.not_live,
        "channels": channels,
    })
}

/// A few lines a person reads at the end of a replay.
fn summary(bag: &Path, output: &Path, outcome: &ReplayOutcome) -> String {
    let mut out = format!(
        "replayed {} of {} frames of {} in lock-step ({} skipped) into {}\n",
        outcome.outputs.len(),
        outcome.selected,
        bag.display(),
        outcome.skipped.len(),
        output.display()
    );
    let first = outcome.first_differences();
    for (channel, (simulated, exact)) in outcome.exact_by_channel() {
        let pct = if simulated > 0 {
            100.0 * exact as f64 / simulated as f64
        } else {
            0.0
        };
        out.push_str(&format!(
            "  {channel}: {exact}/{simulated} equal to the recording ({pct:.1} %)"
        ));
        if let Some(o) = first.get(&channel) {
            out.push_str(&format!(
                ", first difference: {} #{}",
                o.header.module_name, o.header.sequence_num
            ));
        }
        out.push('\n');
    }
    if !outcome.not_live.is_empty() {
        out.push_str(&format!(
            "  recorded outputs used for: {}\n",
            outcome.not_live.join(", ")
        ));
    }
    out
}
