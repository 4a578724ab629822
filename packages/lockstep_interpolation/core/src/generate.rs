//! Making interpolation files from waypoints (a simulated trajectory planner):
//! rest-to-rest motions between consecutive waypoints, each time-optimal within every axis's velocity,
//! acceleration and (where set) jerk limit, all axes reaching the waypoint together (Ruckig, through the
//! rsruckig port), sampled at the file's period. Chaining state-to-state segments stands in for
//! intermediate waypoints, a paid feature of the original library.

use rsruckig::prelude::*;

use crate::file::InterpolationFile;
use crate::limits::AxisLimits;

/// Why a file could not be generated.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GenerateError {
    #[error("need at least two waypoints, got {0}")]
    TooFewWaypoints(usize),
    #[error("waypoint {index} has {got} positions for {joints} joints")]
    Ragged { index: usize, got: usize, joints: usize },
    #[error("period {0}")]
    Period(lockstep_ranges::OutOfRange),
    #[error("segment from waypoint {from} to {to}: {reason}")]
    Ruckig { from: usize, to: usize, reason: String },
}

/// An interpolation file through `waypoints` (each one position per joint), at rest at every waypoint.
pub fn generate(
    joints: &[String],
    waypoints: &[Vec<f64>],
    limits: &[AxisLimits],
    period_secs: f64,
) -> Result<InterpolationFile, GenerateError> {
    if waypoints.len() < 2 {
        return Err(GenerateError::TooFewWaypoints(waypoints.len()));
    }
    crate::PERIOD_S
        .check(period_secs)
        .map_err(GenerateError::Period)?;
    let n = joints.len();
    if let Some((index, w)) = waypoints.iter().enumerate().find(|(_, w)| w.len() != n) {
        return Err(GenerateError::Ragged {
            index,
            got: w.len(),
            joints: n,
        });
    }
    let mut points = vec![waypoints[0].clone()];
    for (i, pair) in waypoints.windows(2).enumerate() {
        let failed = |reason: String| GenerateError::Ruckig {
            from: i,
            to: i + 1,
            reason,
        };
        let mut otg = Ruckig::<0, ThrowErrorHandler>::new(Some(n), period_secs);
        let mut input = InputParameter::new(Some(n));
        input.duration_discretization = DurationDiscretization::Discrete;
        // All joints on one profile shape: a straight line in joint space between the waypoints.
        input.synchronization = Synchronization::Phase;
        for (axis, l) in limits.iter().enumerate() {
            input.current_position[axis] = pair[0][axis];
            input.target_position[axis] = pair[1][axis];
            input.max_velocity[axis] = l.max_velocity;
            input.max_acceleration[axis] = l.max_acceleration;
            input.max_jerk[axis] = l.max_jerk.unwrap_or(f64::INFINITY);
        }
        let mut trajectory = Trajectory::new(Some(n));
        otg.calculate(&input, &mut trajectory)
            .map_err(|e| failed(e.to_string()))?;
        let steps = (trajectory.get_duration() / period_secs).round() as usize;
        let mut position = DataArrayOrVec::<f64, 0>::new(Some(n), 0.0);
        for k in 1..=steps {
            let t = (k as f64 * period_secs).min(trajectory.get_duration());
            trajectory.at_time(
                t,
                &mut Some(&mut position),
                &mut None,
                &mut None,
                &mut None,
                &mut None,
            );
            points.push((0..n).map(|axis| position[axis]).collect());
        }
        // Exactly on the waypoint (sampling may leave rounding).
        if let Some(last) = points.last_mut() {
            last.clone_from(&pair[1]);
        }
    }
    let lines = (0..points.len()).map(|k| k + 3).collect();
    Ok(InterpolationFile {
        path: std::path::PathBuf::from("generated.csv"),
        joints: joints.to_vec(),
        period_secs,
        points,
        lines,
    })
}
