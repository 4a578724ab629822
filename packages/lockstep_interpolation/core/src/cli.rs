//! `lockstep player ...` (feature `cli`).
//!
//! ```text
//! lockstep player generate waypoints.csv --limits joint_limits.yaml -o move.csv [--period-s 0.002]
//! lockstep player check move.csv --limits joint_limits.yaml [--output-period-s 0.002] [--interpolation auto]
//! ```
//!
//! `check`'s s_max is the node's: [`crate::speed_limit::speed_limit`] on the same interpolation.
//!
//! A waypoints file has the interpolation file's layout without the period: a header naming the joints,
//! then one waypoint per line.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::file::{InterpolationFile, Table};
use crate::limits::{AxisLimits, JointLimits};
use crate::monitor::Monitor;
use crate::speed_limit::{jerk_limited, Bound, InterpolationChoice};
use crate::spline::Interpolation;
use crate::stream::Stream;

/// Arguments of `lockstep player`.
#[derive(Debug, Clone, clap::Args)]
pub struct PlayerArgs {
    #[command(subcommand)]
    pub command: PlayerCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum PlayerCommand {
    /// Make an interpolation file through waypoints: rest-to-rest, time-optimal segments within every joint's
    /// velocity, acceleration and (where set) jerk limit (a simulated trajectory planner).
    Generate {
        /// Waypoints: a header naming the joints, then one line of positions per waypoint.
        waypoints: PathBuf,
        /// Joint limits (ros2_control's joint_limits YAML layout).
        #[arg(long)]
        limits: PathBuf,
        /// Interpolation period of the file (s), in [1e-5, 10].
        #[arg(long, default_value_t = 0.002, value_parser = lockstep_ranges::real_arg(crate::PERIOD_S))]
        period_s: f64,
        /// The interpolation file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Check an interpolation file against joint limits at speed 1 and print the largest speed factor it
    /// allows (s_max) at an output period: the s_max the player answers for the whole file.
    Check {
        file: PathBuf,
        /// Joint limits (ros2_control's joint_limits YAML layout).
        #[arg(long)]
        limits: PathBuf,
        /// The player's output period T_c (s), in [1e-5, 10]; default: the file's own period.
        #[arg(long, value_parser = lockstep_ranges::real_arg(crate::PERIOD_S))]
        output_period_s: Option<f64>,
        /// Between file points, as the player's `interpolation` parameter: `linear`, `cubic` or `auto`
        /// (cubic when a joint has a jerk limit).
        #[arg(long, value_enum, default_value_t = InterpolationChoice::Auto)]
        interpolation: InterpolationChoice,
    },
}

/// Run `lockstep player <command>`.
pub fn run(args: PlayerArgs) -> Result<()> {
    match args.command {
        PlayerCommand::Generate {
            waypoints,
            limits,
            period_s,
            output,
        } => generate(&waypoints, &limits, period_s, &output),
        PlayerCommand::Check {
            file,
            limits,
            output_period_s,
            interpolation,
        } => check(&file, &limits, output_period_s, interpolation),
    }
}

fn limits_for(path: &Path, joints: &[String]) -> Result<Vec<AxisLimits>> {
    let all = JointLimits::read(path)?;
    Ok(all.for_joints(joints, &path.display().to_string())?)
}

fn generate(waypoints: &Path, limits: &Path, period_s: f64, output: &Path) -> Result<()> {
    crate::PERIOD_S
        .check(period_s)
        .map_err(|e| anyhow::anyhow!("--period-s {e}"))?;
    let table = Table::read(waypoints)?;
    let axis_limits = limits_for(limits, &table.joints)?;
    let mut file = crate::generate::generate(&table.joints, &table.rows, &axis_limits, period_s)
        .with_context(|| format!("generating from {}", waypoints.display()))?;
    file.path = output.to_owned();
    // The result must pass the player's own check; anything else is a bug worth reporting, not a file.
    crate::validate::check_file(&file, &axis_limits).context("the generated file fails its own check")?;
    std::fs::write(output, file.to_text()).with_context(|| format!("writing {}", output.display()))?;
    println!(
        "wrote {}: {} joints, {} points at {} s, {:.3} s",
        output.display(),
        file.joints.len(),
        file.points.len(),
        file.period_secs,
        file.duration_secs()
    );
    let interpolation = InterpolationChoice::Auto.resolve(&axis_limits);
    print_peaks(&file, &axis_limits, file.period_secs, interpolation);
    Ok(())
}

fn check(
    path: &Path,
    limits: &Path,
    output_period_s: Option<f64>,
    choice: InterpolationChoice,
) -> Result<()> {
    let file = InterpolationFile::read(path)?;
    let axis_limits = limits_for(limits, &file.joints)?;
    crate::validate::check_file(&file, &axis_limits)?;
    let tc = output_period_s.unwrap_or(file.period_secs);
    // The parser checked the option; a caller of `run` may pass any number.
    crate::PERIOD_S
        .check(tc)
        .map_err(|e| anyhow::anyhow!("--output-period-s {e}"))?;
    println!(
        "{}: {} joints, {} points at {} s, {:.3} s at speed 1: within the limits",
        path.display(),
        file.joints.len(),
        file.points.len(),
        file.period_secs,
        file.duration_secs()
    );
    let jerk_joint = jerk_limited(&axis_limits).map(|axis| file.joints[axis].clone());
    let interpolation = choice.resolve(&axis_limits);
    let name = interpolation_name(interpolation);
    let why = match (choice, &jerk_joint) {
        (InterpolationChoice::Auto, Some(joint)) => format!("`auto`: joint `{joint}` has a jerk limit"),
        (InterpolationChoice::Auto, None) => "`auto`: no joint has a jerk limit".into(),
        (InterpolationChoice::Linear, Some(joint)) => format!(
            "as asked; the player refuses it: joint `{joint}` has a jerk limit, which the linear interpolation \
             breaks at any speed but 1"
        ),
        _ => "as asked".into(),
    };
    println!("interpolation: {name} ({why})");
    print_peaks(&file, &axis_limits, tc, interpolation);
    let end = file.points.len() - 1;
    let limited = match Bound::of(&axis_limits) {
        Bound::Acceleration => "velocity and acceleration limits",
        Bound::AccelerationJerk => "velocity, acceleration and jerk limits",
    };
    let limit = crate::speed_limit::speed_limit(Arc::new(file), axis_limits, tc, 0, end, choice);
    let player = if interpolation == Interpolation::Linear && jerk_joint.is_some() {
        String::new()
    } else {
        let setting = match choice {
            InterpolationChoice::Linear => "linear",
            InterpolationChoice::Cubic => "cubic",
            InterpolationChoice::Auto => "auto",
        };
        format!("; the player with period_s {tc} and interpolation `{setting}` answers it in SetSpeed for the whole file")
    };
    println!(
        "s_max at T_c = {tc} s: {:.4} ({name} interpolation, within the {limited}{player})",
        limit.s_max
    );
    Ok(())
}

fn interpolation_name(interpolation: Interpolation) -> &'static str {
    match interpolation {
        Interpolation::Linear => "linear",
        Interpolation::Cubic => "cubic",
    }
}

/// Per joint: the largest |v|, |a|, |j| of the file played at speed 1 at period `tc` with `interpolation`, as %
/// of the limits.
fn print_peaks(file: &InterpolationFile, limits: &[AxisLimits], tc: f64, interpolation: Interpolation) {
    let end = file.points.len() - 1;
    let mut stream =
        Stream::new(Arc::new(file.clone()), limits.to_vec(), tc, 0, end).interpolated(interpolation);
    let mut monitor = Monitor::new(tc, limits.to_vec());
    monitor.push(stream.position());
    if let Err(refusal) = crate::plan::start(&mut stream, 1.0, f64::INFINITY) {
        println!("at T_c = {tc} s it cannot start at speed 1: {refusal}");
        return;
    }
    while stream.phase() != crate::stream::Phase::Done {
        monitor.push(stream.step());
    }
    println!("joint: peak velocity / acceleration / jerk at speed 1, % of the limit");
    for (i, joint) in file.joints.iter().enumerate() {
        let [v, a, j] = monitor.peak[i];
        let jerk = if limits[i].max_jerk.is_some() {
            format!("{:.1} %", j * 100.0)
        } else {
            "no limit".into()
        };
        println!("  {joint}: {:.1} % / {:.1} % / {jerk}", v * 100.0, a * 100.0);
    }
}
