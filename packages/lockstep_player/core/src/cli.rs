//! `lockstep player ...` (feature `cli`).
//!
//! ```text
//! lockstep player generate waypoints.csv --limits joint_limits.yaml -o move.csv [--period-s 0.002]
//! lockstep player check move.csv --limits joint_limits.yaml [--output-period-s 0.002]
//! ```
//!
//! A waypoints file has the interpolation file's layout without the period: a header naming the joints,
//! then one waypoint per line.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::file::{InterpolationFile, Table};
use crate::limits::{AxisLimits, JointLimits};
use crate::monitor::Monitor;
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
    /// allows (s_max) at an output period.
    Check {
        file: PathBuf,
        /// Joint limits (ros2_control's joint_limits YAML layout).
        #[arg(long)]
        limits: PathBuf,
        /// The player's output period T_c (s), in [1e-5, 10]; default: the file's own period.
        #[arg(long, value_parser = lockstep_ranges::real_arg(crate::PERIOD_S))]
        output_period_s: Option<f64>,
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
        } => check(&file, &limits, output_period_s),
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
    print_peaks(&file, &axis_limits, file.period_secs);
    Ok(())
}

fn check(path: &Path, limits: &Path, output_period_s: Option<f64>) -> Result<()> {
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
    print_peaks(&file, &axis_limits, tc);
    let end = file.points.len() - 1;
    let stream = Stream::new(Arc::new(file), axis_limits, tc, 0, end);
    println!("s_max at T_c = {tc} s: {:.4}", crate::plan::s_max(&stream));
    Ok(())
}

/// Per joint: the largest |v|, |a|, |j| of the file played at speed 1 at period `tc`, as % of the limits.
fn print_peaks(file: &InterpolationFile, limits: &[AxisLimits], tc: f64) {
    let end = file.points.len() - 1;
    let mut stream = Stream::new(Arc::new(file.clone()), limits.to_vec(), tc, 0, end);
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
