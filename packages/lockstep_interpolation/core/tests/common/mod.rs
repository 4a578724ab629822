//! Files and limits for the tests: synchronized rest-to-rest minimum-jerk moves between waypoints.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use lockstep_interpolation::{AxisLimits, InterpolationFile, Phase, Stream};

/// Three joints through `waypoints`, each move a quintic 10u^3 - 15u^4 + 6u^5 over `move_secs`, sampled
/// every `period_secs`, with `hold_secs` at rest before, between and after the moves.
pub fn quintic_file(
    period_secs: f64,
    waypoints: &[[f64; 3]],
    move_secs: f64,
    hold_secs: f64,
) -> InterpolationFile {
    let mut points = Vec::new();
    let hold = (hold_secs / period_secs).round() as usize;
    let steps = (move_secs / period_secs).round() as usize;
    let push_hold = |points: &mut Vec<Vec<f64>>, p: &[f64; 3]| {
        for _ in 0..hold {
            points.push(p.to_vec());
        }
    };
    push_hold(&mut points, &waypoints[0]);
    for pair in waypoints.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        for k in 0..steps {
            let u = k as f64 / steps as f64;
            let shape = u * u * u * (10.0 - 15.0 * u + 6.0 * u * u);
            points.push((0..3).map(|i| a[i] + (b[i] - a[i]) * shape).collect());
        }
        push_hold(&mut points, &b);
    }
    points.push(waypoints[waypoints.len() - 1].to_vec());
    let lines = (0..points.len()).map(|k| k + 3).collect();
    InterpolationFile {
        path: PathBuf::from("quintic.csv"),
        joints: vec!["shoulder".into(), "elbow".into(), "wrist".into()],
        period_secs,
        points,
        lines,
    }
}

/// The waypoints of most tests: every joint moves, by different amounts and directions.
pub const WAYPOINTS: [[f64; 3]; 4] = [
    [0.0, 0.0, 0.0],
    [0.6, -0.4, 0.9],
    [0.1, 0.3, -0.2],
    [0.8, -0.5, 0.4],
];

/// Limits with the quintic moves of `quintic_file(_, WAYPOINTS, move_secs, _)` at `fraction` of each axis's
/// velocity and acceleration limit at s = 1 (the largest move, 1.1 rad, sets them).
pub fn limits_for(move_secs: f64, fraction: f64, jerk: bool) -> Vec<AxisLimits> {
    let delta = 1.1;
    let v = 1.875 * delta / move_secs / fraction;
    let a = 5.7735 * delta / (move_secs * move_secs) / fraction;
    let j = 60.0 * delta / move_secs.powi(3) / fraction;
    vec![
        AxisLimits {
            max_velocity: v,
            max_acceleration: a,
            max_jerk: jerk.then_some(j),
        };
        3
    ]
}

/// A stream of the whole file at output period `tc`.
pub fn stream(file: InterpolationFile, limits: Vec<AxisLimits>, tc: f64) -> Stream {
    let end = file.points.len() - 1;
    Stream::new(Arc::new(file), limits, tc, 0, end)
}

/// Step until the phase is `phase` (at most `max` ticks); the ticks taken.
pub fn run_until(stream: &mut Stream, phase: Phase, max: u64) -> u64 {
    for n in 1..=max {
        stream.step();
        if stream.phase() == phase {
            return n;
        }
    }
    panic!(
        "not {phase:?} after {max} ticks: {:?} at tau {}",
        stream.phase(),
        stream.tau()
    );
}
