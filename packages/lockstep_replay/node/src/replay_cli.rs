//! `lockstep replay <bag> --output <dir>`: lock-step re-simulation of a recording, with a
//! progress bar, a readable summary and `report.json` in the output bag directory.
//!
//! By default it steps the live module processes over DDS (modules started with
//! `-p lockstep_step_mode:=true`; see [`crate::lockstep_dds`]); `--in-process` runs the example pipeline's
//! pure logic in this process instead. The binary `lockstep_replay` is this command as a ROS node.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use lockstep_bag::{BagReader, MetadataRecord};
pub use lockstep_replay::args::{MissingUpstreamArg, ReplayArgs};
use lockstep_replay::lockstep::{
    differences_figure, evaluate, replay_observed, write_bag, FrameSelection, Module, Recording,
    ReplayOptions, ReplayOutcome,
};
use lockstep_replay::parameters::ParameterReport;

use crate::in_process::{parse_params, pipeline_modules};
use lockstep_replay::report::{report_json, summary, PLOT_FILE};

use crate::lockstep_dds::{connect, DdsOptions, LiveModules};

/// Runs `lockstep replay`.
pub fn run(args: ReplayArgs) -> anyhow::Result<()> {
    if std::fs::read_dir(&args.output).is_ok_and(|mut d| d.next().is_some()) {
        bail!("--output {}: exists and is not empty", args.output.display());
    }
    let reader = BagReader::open(&args.bag).context("cannot open the recording")?;
    let records = reader
        .metadata_records()
        .context("cannot read the recording's metadata")?;
    let damage = reader.damage_note();
    let recording = Recording::open_indexed(reader, IN_MEMORY_BYTES)
        .map_err(|e| anyhow::anyhow!("{e}{damage}"))
        .context("cannot read the recording")?;
    let mut options = ReplayOptions {
        frames: match args.frames.as_str() {
            "all" => FrameSelection::All,
            module => FrameSelection::Module(module.to_owned()),
        },
        strict: args.strict,
        missing_upstream: args.missing_upstream.into(),
        ..ReplayOptions::default()
    };
    let (mut modules, live, parameters) = if args.in_process {
        if let Some((name, _)) = args.new_modules.first() {
            bail!("--new-module {name}: only live modules over DDS can be new (not --in-process)");
        }
        if let Some(flag) = args.parameters.in_process_conflict() {
            bail!("{flag}: recorded parameters are compared with live modules over DDS only (not --in-process; set the in-process modules' parameters with -p)");
        }
        (pipeline_modules(&parse_params(&args.params)?)?, None, None)
    } else {
        let (modules, live, parameters) = connect_live(&args, &recording, &records, &mut options)?;
        (modules, Some(live), Some(parameters))
    };
    let bar = progress_bar(args.quiet);
    let started = std::time::Instant::now();
    let outcome = replay_observed(&recording, &mut modules, &options, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    let wall = started.elapsed();
    let mut differences = Vec::new();
    for run in 2..=args.repeat {
        bar.set_position(0);
        let again = replay_observed(&recording, &mut modules, &options, &mut |done, _| {
            bar.set_position(done as u64);
        })?;
        differences.extend(crate::repeat::compare_runs(&outcome, &again, run));
    }
    bar.finish_and_clear();
    drop(modules);
    let repeat = (args.repeat > 1).then_some((args.repeat, differences));
    write_results(
        &args,
        &recording,
        &outcome,
        live.as_ref(),
        parameters.as_ref(),
        repeat.as_ref(),
        wall,
    )
}

/// The live modules to step, the rest of the live side, and their parameters against the recorded ones.
type Connected = (Vec<Box<dyn Module>>, LiveModules, ParameterReport);

/// The live modules over DDS (those of `--modules`, or all), with the options their live wiring sets, and
/// their parameters checked against the recorded ones before the first step.
fn connect_live(
    args: &ReplayArgs,
    recording: &Recording,
    records: &[MetadataRecord],
    options: &mut ReplayOptions,
) -> anyhow::Result<Connected> {
    if let Some(p) = args.params.first() {
        bail!(
            "-p {p}: parameters of live modules are theirs to take (--ros-args -p); -p is for --in-process"
        );
    }
    let dds = DdsOptions {
        step_timeout: Duration::from_millis(args.timeout_ms.max(1)),
        discovery: Duration::from_millis(args.discovery_ms),
        event_timeout: Duration::from_millis(args.event_timeout_ms.max(1)),
    };
    for m in &args.modules {
        if recording.topology.component(m).is_none() {
            bail!("--modules {m}: not a module of the recording");
        }
    }
    let mut connected = connect(recording, &args.modules, &args.new_modules, dds)?;
    options.live_reads = connected.live_reads.clone();
    options.new_modules = connected.new_modules.clone();
    if connected.modules.is_empty() {
        let services: Vec<String> = recording
            .topology
            .components
            .iter()
            .map(|c| lockstep_trace_ros::step::step_service_name(&c.module_name))
            .collect();
        bail!(
            "no module of the recording answered on its step service ({}) within {} ms: start them with -p lockstep_step_mode:=true (unmodified nodes under `lockstep trace --replay`), in the namespace they were recorded in (or use --in-process)",
            services.join(", "),
            args.discovery_ms
        );
    }
    let modules = std::mem::take(&mut connected.modules);
    for m in &modules {
        let warnings = recording.unmodified_warnings.get(m.name());
        let threads = warnings
            .into_iter()
            .flatten()
            .find(|w| w.contains("several threads"));
        if let (Some(warning), false) = (threads, args.allow_nondeterministic) {
            bail!(
                "`{}` cannot be replayed in lock-step: when recorded, {warning}. Spin it with a single-threaded \
                 executor, or pass --allow-nondeterministic",
                m.name()
            );
        }
    }
    // The live modules' parameters against the recorded ones, before the first step.
    let names: Vec<String> = modules.iter().map(|m| m.name().to_owned()).collect();
    let checked = crate::parameters::check(records, recording, &names, &args.parameters)?;
    Ok((modules, connected, checked))
}

/// Write the simulated bag, the plot of differences and `report.json` into `--output`, and print the
/// summary.
fn write_results(
    args: &ReplayArgs,
    recording: &Recording,
    outcome: &ReplayOutcome,
    live: Option<&LiveModules>,
    parameters: Option<&ParameterReport>,
    repeat: Option<&(usize, Vec<crate::repeat::RunDifference>)>,
    wall: Duration,
) -> anyhow::Result<()> {
    write_bag(recording, outcome, &args.output).context("cannot write the simulated bag")?;
    let evaluation = evaluate(recording, outcome);
    let drift = live.map(|l| &l.drift);
    let fed = live.map_or(&[][..], |l| &l.fed_channels[..]);
    let plot = args.output.join(PLOT_FILE);
    differences_figure(&evaluation)
        .write_png(&plot)
        .context("cannot plot the differences")?;
    let mut report = report_json(outcome, &evaluation, drift, fed, wall);
    if let Some(p) = parameters {
        report["parameters"] = ParameterReport::to_json(p);
    }
    if let Some((runs, differences)) = repeat {
        report["repeat"] = crate::repeat::to_json(*runs, differences);
    }
    // What the interceptor found it could not follow when it recorded the unmodified nodes.
    report["unmodified_nodes"]["recorded_warnings"] = serde_json::json!(recording.unmodified_warnings);
    // Where the module topology came from: the recorder's record, or rebuilt from the header topics.
    report["topology_source"] = serde_json::json!(recording.topology_source.to_string());
    let path = args.output.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    print!(
        "{}",
        summary(&args.bag, &args.output, outcome, &evaluation, drift, wall)
    );
    if recording.topology_source != lockstep_replay::lockstep::TopologySource::Record {
        println!("  module topology {}", recording.topology_source);
    }
    if let Some((runs, differences)) = repeat {
        if differences.is_empty() {
            println!("  {runs} runs: every output the same in every run");
        }
        for d in differences {
            println!(
                "  nondeterministic: `{}` {} #{} differs in run {} ({})",
                d.module, d.channel, d.sequence_num, d.run, d.reason
            );
        }
    }
    Ok(())
}

/// Recorded payloads held in memory during a replay; past this, each is read from the bag when a frame
/// needs it (so a recording with gigabytes of camera images replays in bounded memory).
const IN_MEMORY_BYTES: u64 = 64 << 20;

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
