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
mod holdout;
mod input;
mod output;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use lockstep_bag::BagReader;
use lockstep_ranges::{real_arg, real_arg_or_zero, Real};

use crate::calibrator::{Accepted, Calibrator, Config, Outcome};
use crate::fit::PoseNoise;
use crate::history::{DropCounts, Stream};
use crate::model::ModelParams;
use crate::needs::{DriveSummary, Need, Parameter};
use crate::ranges;
pub use holdout::HeldOut;
use input::Sample;
pub use output::Evaluation;

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

/// Exit code of `lockstep calibrate` when no window of the drive determined any parameter (the files are
/// still written, with the nominal values).
pub const EXIT_NOTHING_ESTIMATED: i32 = 2;

/// Windows by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowCounts {
    /// New parameters.
    pub accepted: usize,
    /// Failed validation on a held-out segment.
    pub rejected: usize,
    /// Already explained (threshold 1), or nothing determinable.
    pub unchanged: usize,
    /// An observed pose jumped.
    pub skipped: usize,
    /// Not enough data yet.
    pub waiting: usize,
}

/// What a calibration run found and wrote.
#[derive(Debug, Clone)]
pub struct Report {
    /// The bag read.
    pub bag: PathBuf,
    /// Topic and type of the commands, odometry and poses.
    pub topics: [(String, String); 3],
    /// The parameters the odometry used (the starting point).
    pub nominal: ModelParams,
    /// The final accepted parameters (the nominal ones when none was accepted).
    pub params: ModelParams,
    /// Their standard deviations: radius, track width, delay, beta (0 = never estimated).
    pub std: [f64; 4],
    /// Time zero of the sample times: the first sample's stamp (ns, the header stamps' clock).
    pub time_origin_ns: i64,
    /// Length of a window (s).
    pub window_secs: f64,
    /// Windows by outcome.
    pub windows: WindowCounts,
    /// Refusals by kind (the text before its colon): how many windows, and the latest full sentence.
    pub refusals: BTreeMap<String, (usize, String)>,
    /// The last accepted update.
    pub last_accepted: Option<Accepted>,
    /// The last rejection, as a sentence.
    pub last_rejection: Option<String>,
    /// What the windows had of the driving each parameter needs.
    pub drive: DriveSummary,
    /// The parameters that stayed nominal, each with the driving that would determine it.
    pub needs: Vec<Need>,
    /// Messages read per stream (cmd_vel, odom, pose).
    pub read: [u64; 3],
    /// Messages that did not decode, per stream.
    pub undecodable: [u64; 3],
    /// Samples the history dropped (NaN, out of order).
    pub dropped: DropCounts,
    /// Nominal vs calibrated over the whole bag.
    pub evaluation: Evaluation,
    /// Nominal vs calibrated over the held-out stretch (none when off or the bag is too short).
    pub holdout: Option<HeldOut>,
    /// Remarks (a clock shift, an undecodable message).
    pub notes: Vec<String>,
    /// `calibration.yaml`.
    pub yaml_path: PathBuf,
    /// `diff_drive_controller.yaml`.
    pub controller_path: PathBuf,
    /// `trajectories.png`.
    pub png_path: PathBuf,
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
    // The parser checked the options; a caller of this function may pass any number.
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
    let bag_secs = inputs.samples.last().map_or(0.0, Sample::t_secs);
    let plan = holdout::Plan::new(args.holdout_secs, bag_secs);
    let before = plan.calibrate_before();
    let calibration_samples = &inputs.samples[..inputs.samples.partition_point(|s| s.t_secs() < before)];
    let mut calibrator = Calibrator::new(config, nominal);
    bar.set_message("calibrating");
    bar.set_length(calibration_samples.len() as u64);
    bar.set_position(0);
    let mut last_step: Option<f64> = None;
    let mut windows = WindowCounts::default();
    let mut refusals: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut last_accepted = None;
    let mut last_rejection = None;
    let mut last_waiting = None;
    for sample in calibration_samples {
        // A dropped sample is counted by the history.
        let h = calibrator.history_mut();
        let _ = match *sample {
            Sample::Command(c) => h.push_command(c),
            Sample::Odometry(o) => h.push_odom(o),
            Sample::Pose(p) => h.push_pose(p),
        };
        bar.inc(1);
        let Some(until) = calibrator.history().complete_until() else {
            continue;
        };
        let base = *last_step.get_or_insert(until);
        if until - base < args.window_secs - 1e-9 {
            continue;
        }
        last_step = Some(until);
        let outcome = calibrator.step();
        let refused: &[String] = match &outcome {
            Outcome::Accepted(a) => &a.refused,
            Outcome::Unchanged { refused, .. } => refused,
            _ => &[],
        };
        for r in refused {
            let kind = r.split(':').next().unwrap_or(r).to_string();
            let entry = refusals.entry(kind).or_insert((0, String::new()));
            entry.0 += 1;
            entry.1.clone_from(r);
        }
        match outcome {
            Outcome::Waiting(why) => {
                windows.waiting += 1;
                last_waiting = Some(why);
            }
            Outcome::Unchanged { .. } => windows.unchanged += 1,
            Outcome::Skipped(_) => windows.skipped += 1,
            Outcome::Rejected {
                segment, threshold2, ..
            } => {
                windows.rejected += 1;
                last_rejection = Some(format!(
                    "at t={until:.1} s: the update did not explain the earlier, held-out driving of {:.1}-{:.1} s (residual {:.2}, below {threshold2} needed)",
                    segment.t0_secs, segment.t1_secs, segment.residual
                ));
            }
            Outcome::Accepted(a) => {
                windows.accepted += 1;
                last_accepted = Some(a);
            }
        }
    }
    bar.finish_and_clear();
    let stepped = windows.accepted + windows.rejected + windows.unchanged + windows.skipped;
    if stepped == 0 {
        match last_waiting {
            Some(why) => bail!(
                "no usable data: no window could be calibrated: the calibrator waited at each of its {} steps, the last time because {why}{}",
                windows.waiting,
                plan.hint()
            ),
            None => bail!(
                "no usable data: no window could be calibrated: the complete data (odometry and poses both) spans less than one window of {} s{}",
                args.window_secs,
                plan.hint()
            ),
        }
    }
    let params = calibrator.current();
    let std = calibrator.std();
    let whole = output::history(&inputs.samples, nominal);
    let everything = (f64::NEG_INFINITY, f64::INFINITY);
    let evaluation = output::evaluate(&whole, everything, nominal, params, &config);
    let output_dir = args.output.clone().unwrap_or_else(|| default_output(&args.bag));
    std::fs::create_dir_all(&output_dir)
        .with_context(|| format!("cannot create the output directory {}", output_dir.display()))?;
    let held_out = match plan {
        holdout::Plan::Stretch { t0_secs, t1_secs } => Some(HeldOut {
            t0_secs,
            t1_secs,
            evaluation: output::evaluate(&whole, (t0_secs, t1_secs), nominal, params, &config),
            png_path: output_dir.join("holdout.png"),
        }),
        _ => None,
    };
    let mut notes = inputs.notes.clone();
    if let Some(first) = &inputs.first_undecodable {
        notes.push(format!("not decodable: {first}"));
    }
    notes.extend(plan.note());
    let report = Report {
        bag: args.bag.clone(),
        topics: sources.map(|s| (s.topic, s.type_name)),
        nominal,
        params,
        std,
        time_origin_ns: inputs.origin_ns,
        window_secs: args.window_secs,
        windows,
        refusals,
        last_accepted,
        last_rejection,
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
    };
    std::fs::write(&report.yaml_path, output::yaml(&report))
        .with_context(|| format!("cannot write {}", report.yaml_path.display()))?;
    std::fs::write(
        &report.controller_path,
        controller::yaml(&report, &args.controller_name),
    )
    .with_context(|| format!("cannot write {}", report.controller_path.display()))?;
    output::figure(&report)
        .write_png(&report.png_path)
        .context("cannot write the trajectory plot")?;
    if let Some(h) = &report.holdout {
        output::holdout_figure(&report, h)
            .write_png(&h.png_path)
            .context("cannot write the held-out plot")?;
    }
    Ok(report)
}

/// Decimals and unit `p` is printed with.
fn print_format(p: Parameter) -> (usize, &'static str) {
    match p {
        Parameter::WheelRadius => (6, " m"),
        Parameter::TrackWidth => (5, " m"),
        Parameter::Delay => (4, " s"),
        Parameter::CentripetalFactor => (3, ""),
    }
}

/// `p`'s value in `params` with its unit.
fn value_text(p: Parameter, params: &ModelParams) -> String {
    let (decimals, unit) = print_format(p);
    format!("{:.decimals$}{unit}", p.value(params))
}

/// `value ± std unit`, or `value unit (nominal, not estimated)` when the std is 0.
fn with_std(p: Parameter, params: &ModelParams, std: &[f64; 4]) -> String {
    let (decimals, _) = print_format(p);
    let s = std[p.index()];
    let value = value_text(p, params);
    if s > 0.0 {
        let (number, unit) = value.split_at(value.len() - print_format(p).1.len());
        format!("{number} ± {s:.decimals$}{unit}")
    } else {
        format!("{value} (nominal, not estimated)")
    }
}

impl Report {
    /// Whether no window of the drive determined any parameter (every value is the nominal one).
    pub fn nothing_estimated(&self) -> bool {
        self.drive.nothing_determined()
    }

    /// The exit code of `lockstep calibrate`: 0, or [`EXIT_NOTHING_ESTIMATED`].
    pub fn exit_code(&self) -> i32 {
        if self.nothing_estimated() {
            EXIT_NOTHING_ESTIMATED
        } else {
            0
        }
    }

    /// One line per parameter that stayed nominal: `track width stays nominal at 0.40000 m: needs ...`.
    pub fn need_lines(&self) -> Vec<String> {
        self.needs
            .iter()
            .map(|n| {
                format!(
                    "{} stays nominal at {}: {}",
                    n.parameter,
                    value_text(n.parameter, &self.params),
                    n.advice
                )
            })
            .collect()
    }

    /// What `lockstep calibrate` prints: when the drive determined nothing, `nothing could be estimated` and
    /// what would determine each parameter; then notes, counts, refusals, alarms; then the parameters and
    /// the files, and what would determine each parameter that stayed nominal.
    pub fn summary(&self) -> String {
        let d = &self.dropped;
        let w = &self.windows;
        let nothing = self.nothing_estimated();
        let mut out = String::new();
        if nothing {
            out.push_str("nothing could be estimated\n");
            out.push_str(&format!(
                "no window of the drive determined any parameter ({} looked at); {} keeps the nominal values:\n",
                match self.drive.windows {
                    1 => "1 window".to_string(),
                    n => format!("{n} windows"),
                },
                self.yaml_path.display()
            ));
            for line in self.need_lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        for note in &self.notes {
            out.push_str(&format!("note: {note}\n"));
        }
        out.push_str(&format!(
            "read {} cmd_vel, {} odom, {} pose messages; dropped (not finite / out of order): cmd_vel {}/{}, odom {}/{}, pose {}/{}; not decodable: {}\n",
            self.read[0], self.read[1], self.read[2],
            d.not_finite[0], d.out_of_order[0], d.not_finite[1], d.out_of_order[1], d.not_finite[2], d.out_of_order[2],
            self.undecodable.iter().sum::<u64>()
        ));
        out.push_str(&format!(
            "windows: {} accepted, {} rejected, {} unchanged, {} skipped, {} waiting\n",
            w.accepted, w.rejected, w.unchanged, w.skipped, w.waiting
        ));
        for (count, text) in self.refusals.values() {
            out.push_str(&format!("refused in {count} windows: {text}\n"));
        }
        if let Some(rejection) = &self.last_rejection {
            out.push_str(&format!(
                "rejected in {} windows, the last {rejection}\n",
                w.rejected
            ));
        }
        for alarm in self.last_accepted.iter().flat_map(|a| &a.alarms) {
            out.push_str(&format!("alarm: {alarm}\n"));
        }
        let e = &self.evaluation;
        let values = Parameter::ALL
            .map(|p| {
                let name = match p {
                    Parameter::CentripetalFactor => "beta",
                    _ => p.name(),
                };
                format!("{name} {}", with_std(p, &self.params, &self.std))
            })
            .join(", ");
        let mut written = vec![&self.yaml_path, &self.controller_path, &self.png_path];
        written.extend(self.holdout.as_ref().map(|h| &h.png_path));
        out.push_str(&format!(
            "{}: {values}; dead-reckoning RMS error {:.3} m -> {:.3} m; wrote {}\n",
            if nothing { "kept nominal" } else { "calibrated" },
            e.rms_error_nominal_m,
            e.rms_error_calibrated_m,
            written
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if let Some(h) = &self.holdout {
            out.push_str(&format!("{}\n", h.line()));
        }
        if !nothing && !self.needs.is_empty() {
            out.push_str("not estimated, kept nominal:\n");
            for line in self.need_lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out
    }
}
