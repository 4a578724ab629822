//! `lockstep calibrate <bag>` (feature `cli`): the online calibrator run offline over a rosbag2 bag (MCAP
//! or sqlite3).
//!
//! ```text
//! lockstep calibrate recording/ --cmd-topic /cmd_vel --odom-topic /odom --pose-topic /slam_pose
//! ```
//!
//! The commands (`geometry_msgs/msg/Twist`, stamped with their log time, or `TwistStamped`), the odometry
//! (`nav_msgs/msg/Odometry`) and the observed poses (`PoseStamped` or `PoseWithCovarianceStamped`) are
//! decoded with the definitions stored in the bag, put in time order (stamp, then stream, then bag order)
//! and fed into the calibrator's [`History`](crate::History), which drops and counts NaN and out-of-order
//! samples. The calibrator is stepped as the node steps it: each time the data is complete `window_secs`
//! further than at the last step. Writes `<output>/calibration.yaml` (a ROS 2 parameter file for
//! `lockstep_sim_node`'s `nominal_vehicle`, with the statistics as comments),
//! `<output>/diff_drive_controller.yaml` (the same calibration as ros2_controllers' `diff_drive_controller`
//! multipliers of the nominal wheel separation and radius) and `<output>/trajectories.png` (dead reckoning
//! with the nominal and the calibrated parameters against the observed poses).
//!
//! The last `--holdout-secs` of the bag (20 s) are not given to the calibrator when the bag is at least
//! twice as long: the same dead reckoning over that stretch, from its first observed pose, checks the
//! calibration on driving it never saw (`<output>/holdout.png`, the `held-out` line of the report).
//!
//! Every parameter that stayed nominal is named with the driving that would determine it
//! ([`Calibrator::needs`]). When no window of the drive determined any parameter, the report starts with
//! `nothing could be estimated` and the command exits with [`EXIT_NOTHING_ESTIMATED`].

mod controller;
mod evaluation;
mod holdout;
mod input;
mod output;
mod report;
mod stepping;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use lockstep_bag::BagReader;
use lockstep_ranges::{real_arg, real_arg_or_zero, Real};

use crate::calibrator::{Calibrator, Config};
use crate::fit::PoseNoise;
use crate::history::Stream;
use crate::model::ModelParams;
use crate::ranges;
pub use evaluation::Evaluation;
pub use holdout::HeldOut;
use input::Sample;
pub use report::{Report, WindowCounts, EXIT_NOTHING_ESTIMATED};

/// `--holdout-secs` when not 0 (off): a held-out stretch needs a few observed poses.
const HOLDOUT_SECS: Real = Real::closed(1.0, 86_400.0, "s");

/// Arguments of `lockstep calibrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct CalibrateArgs {
    /// Bag directory, or a single MCAP or sqlite3 file.
    pub bag: PathBuf,
    /// Velocity commands: geometry_msgs/msg/Twist (stamped with the log time) or TwistStamped.
    #[arg(long, default_value = "/cmd_vel")]
    pub cmd_topic: String,
    /// Odometry: nav_msgs/msg/Odometry, computed with the nominal parameters.
    #[arg(long, default_value = "/odom")]
    pub odom_topic: String,
    /// Observed poses (SLAM): geometry_msgs/msg/PoseStamped or PoseWithCovarianceStamped.
    #[arg(long, default_value = "/slam_pose")]
    pub pose_topic: String,
    /// Output directory [default: <bag>_calibration beside the bag, or ./calibration].
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Wheel radius the odometry was computed with (m).
    #[arg(long, default_value_t = 0.05, value_parser = real_arg(ranges::WHEEL_RADIUS_M))]
    pub nominal_radius_m: f64,
    /// Track width the odometry was computed with (m).
    #[arg(long, default_value_t = 0.40, value_parser = real_arg(ranges::TRACK_WIDTH_M))]
    pub nominal_track_m: f64,
    /// Length of a calibration window, and the data time between two steps (s).
    #[arg(long, default_value_t = 3.0, value_parser = real_arg(ranges::WINDOW_SECS))]
    pub window_secs: f64,
    /// Standard deviation of the observed poses' x and y (m): the residuals' unit.
    #[arg(long, default_value_t = 0.02, value_parser = real_arg(ranges::POSE_SIGMA_XY_M))]
    pub pose_sigma_xy_m: f64,
    /// Standard deviation of the observed poses' heading (rad).
    #[arg(long, default_value_t = 0.0087, value_parser = real_arg(ranges::POSE_SIGMA_YAW_RAD))]
    pub pose_sigma_yaw_rad: f64,
    /// Length of the stretch at the end of the bag kept from the calibrator to check the result on
    /// (holdout.png); used when the bag is at least twice as long. 0: calibrate on all of it.
    #[arg(long, default_value_t = 20.0, value_parser = real_arg_or_zero(HOLDOUT_SECS))]
    pub holdout_secs: f64,
    /// Node name of the diff_drive_controller in diff_drive_controller.yaml (with its namespace if any).
    #[arg(long, default_value = "diff_drive_controller", value_parser = controller::name_arg)]
    pub controller_name: String,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// `<bag>_calibration` beside the bag, or `./calibration`.
pub fn default_output(bag: &Path) -> PathBuf {
    let name = if bag.is_dir() {
        bag.file_name()
    } else {
        bag.file_stem()
    };
    match (name, bag.file_name()) {
        (Some(name), Some(_)) => {
            let mut dir = name.to_os_string();
            dir.push("_calibration");
            bag.with_file_name(dir)
        }
        _ => PathBuf::from("calibration"),
    }
}

fn progress_bar(quiet: bool, total: u64) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template("{msg:12} {bar:40} {pos}/{len} messages, {eta} left") {
        bar.set_style(style);
    }
    bar
}

/// Runs `lockstep calibrate`: calibrates, writes the files, prints the summary; exits the process with
/// [`EXIT_NOTHING_ESTIMATED`] when the drive determined nothing.
pub fn run(args: CalibrateArgs) -> Result<()> {
    let report = calibrate(&args)?;
    print!("{}", report.summary());
    let code = report.exit_code();
    if code != 0 {
        use std::io::Write as _;
        // `exit` runs no destructors: the summary must be out first.
        std::io::stdout().flush().context("cannot write the summary")?;
        std::process::exit(code);
    }
    Ok(())
}

/// Calibrates over the bag (but its held-out stretch) and writes `calibration.yaml`,
/// `diff_drive_controller.yaml`, `trajectories.png` and `holdout.png`.
pub fn calibrate(args: &CalibrateArgs) -> Result<Report> {
    check_numbers(args)?;
    controller::check_name(&args.controller_name)?;
    let reader = BagReader::open(&args.bag).context("cannot open bag")?;
    let sources = [
        input::source(&reader, Stream::Command, &args.cmd_topic)?,
        input::source(&reader, Stream::Odometry, &args.odom_topic)?,
        input::source(&reader, Stream::Pose, &args.pose_topic)?,
    ];
    let total: u64 = reader
        .topics()
        .iter()
        .filter(|t| sources.iter().any(|s| s.topic == t.metadata.name))
        .map(|t| t.message_count)
        .sum();
    let bar = progress_bar(args.quiet, total);
    bar.set_message("reading");
    let inputs = input::read(&reader, &sources, || bar.inc(1))?;

    let (nominal, config) = nominal_and_config(args);
    let bag_secs = inputs.samples.last().map_or(0.0, Sample::t_secs);
    let plan = holdout::Plan::new(args.holdout_secs, bag_secs);
    let before = plan.calibrate_before();
    let calibration_samples = &inputs.samples[..inputs.samples.partition_point(|s| s.t_secs() < before)];
    let mut calibrator = Calibrator::new(config, nominal);
    bar.set_message("calibrating");
    bar.set_length(calibration_samples.len() as u64);
    bar.set_position(0);
    let tally = stepping::step_windows(&mut calibrator, calibration_samples, args.window_secs, &bar);
    bar.finish_and_clear();
    tally.ensure_stepped(args.window_secs, &plan)?;
    let report = make_report(
        args,
        sources,
        &inputs,
        (nominal, config),
        &calibrator,
        plan,
        tally,
    )?;
    write_outputs(&report, &args.controller_name)?;
    Ok(report)
}

/// The parser checked the options; a caller of [`calibrate`] may pass any number.
fn check_numbers(args: &CalibrateArgs) -> Result<()> {
    for (name, value, range) in [
        ("--window-secs", args.window_secs, ranges::WINDOW_SECS),
        (
            "--nominal-radius-m",
            args.nominal_radius_m,
            ranges::WHEEL_RADIUS_M,
        ),
        ("--nominal-track-m", args.nominal_track_m, ranges::TRACK_WIDTH_M),
        ("--pose-sigma-xy-m", args.pose_sigma_xy_m, ranges::POSE_SIGMA_XY_M),
        (
            "--pose-sigma-yaw-rad",
            args.pose_sigma_yaw_rad,
            ranges::POSE_SIGMA_YAW_RAD,
        ),
    ] {
        if let Err(e) = range.check(value) {
            bail!("{name} {e}");
        }
    }
    if args.holdout_secs != 0.0 {
        if let Err(e) = HOLDOUT_SECS.check(args.holdout_secs) {
            bail!("--holdout-secs {e} (or 0: off)");
        }
    }
    Ok(())
}

/// The parameters the odometry was computed with, and the calibrator's configuration.
fn nominal_and_config(args: &CalibrateArgs) -> (ModelParams, Config) {
    let nominal = ModelParams {
        wheel_radius_m: args.nominal_radius_m,
        track_width_m: args.nominal_track_m,
        ..ModelParams::default()
    };
    let config = Config {
        window_secs: args.window_secs,
        noise: PoseNoise {
            sigma_xy_m: args.pose_sigma_xy_m,
            sigma_yaw_rad: args.pose_sigma_yaw_rad,
        },
        ..Config::default()
    };
    (nominal, config)
}

/// The report of a calibration: the result, its evaluation over the whole bag (and the held-out stretch),
/// what the steps did, and where its files go (the output directory is created).
fn make_report(
    args: &CalibrateArgs,
    sources: [input::Source; 3],
    inputs: &input::Inputs,
    (nominal, config): (ModelParams, Config),
    calibrator: &Calibrator,
    plan: holdout::Plan,
    tally: stepping::Tally,
) -> Result<Report> {
    let params = calibrator.current();
    let std = calibrator.std();
    let whole = evaluation::history(&inputs.samples, nominal);
    let everything = (f64::NEG_INFINITY, f64::INFINITY);
    let evaluation = evaluation::evaluate(&whole, everything, nominal, params, &config);
    let output_dir = args.output.clone().unwrap_or_else(|| default_output(&args.bag));
    std::fs::create_dir_all(&output_dir)
        .with_context(|| format!("cannot create the output directory {}", output_dir.display()))?;
    let held_out = match plan {
        holdout::Plan::Stretch { t0_secs, t1_secs } => Some(HeldOut {
            t0_secs,
            t1_secs,
            evaluation: evaluation::evaluate(&whole, (t0_secs, t1_secs), nominal, params, &config),
            png_path: output_dir.join("holdout.png"),
        }),
        _ => None,
    };
    let mut notes = inputs.notes.clone();
    if let Some(first) = &inputs.first_undecodable {
        notes.push(format!("not decodable: {first}"));
    }
    notes.extend(plan.note());
    Ok(Report {
        bag: args.bag.clone(),
        topics: sources.map(|s| (s.topic, s.type_name)),
        nominal,
        params,
        std,
        time_origin_ns: inputs.origin_ns,
        window_secs: args.window_secs,
        windows: tally.windows,
        refusals: tally.refusals,
        last_accepted: tally.last_accepted,
        last_rejection: tally.last_rejection,
        drive: calibrator.drive().clone(),
        needs: calibrator.needs(),
        read: inputs.read,
        undecodable: inputs.undecodable,
        dropped: calibrator.history().dropped(),
        evaluation,
        holdout: held_out,
        notes,
        yaml_path: output_dir.join("calibration.yaml"),
        controller_path: output_dir.join(controller::FILE),
        png_path: output_dir.join("trajectories.png"),
    })
}

/// Write the report's files: calibration.yaml, diff_drive_controller.yaml and the plots.
fn write_outputs(report: &Report, controller_name: &str) -> Result<()> {
    std::fs::write(&report.yaml_path, output::yaml(report))
        .with_context(|| format!("cannot write {}", report.yaml_path.display()))?;
    std::fs::write(&report.controller_path, controller::yaml(report, controller_name))
        .with_context(|| format!("cannot write {}", report.controller_path.display()))?;
    output::figure(report)
        .write_png(&report.png_path)
        .context("cannot write the trajectory plot")?;
    if let Some(h) = &report.holdout {
        output::holdout_figure(report, h)
            .write_png(&h.png_path)
            .context("cannot write the held-out plot")?;
    }
    Ok(())
}
