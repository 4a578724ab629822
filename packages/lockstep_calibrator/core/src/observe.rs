//! What a window can determine, decided before fitting, with the reason for each parameter refused.
//!
//! - Standing still (little travel, little rotation): nothing.
//! - Wheel radius: needs travel along the path.
//! - Track width: needs rotation. Turns in place pin it (no |v * omega|, so no slip); turns at a single
//!   nonzero |v * omega| level do not (a slip factor and a wider track explain the same turn), so such a
//!   window refuses both.
//! - Beta: needs the track width and at least two distinct |v * omega| levels among the turning samples
//!   (a turn in place is level 0).

use crate::fit::Free;
use crate::history::Window;

/// Thresholds of the observability checks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observability {
    /// Travel along the path needed for the radius (m).
    pub min_distance_m: f64,
    /// Rotation needed for the track width (rad).
    pub min_rotation_rad: f64,
    /// Gap between the low and high |v * omega| levels needed for beta (m rad / s^2).
    pub min_level_gap: f64,
}

impl Default for Observability {
    fn default() -> Self {
        Self {
            min_distance_m: 0.3,
            min_rotation_rad: 0.5,
            min_level_gap: 0.05,
        }
    }
}

/// What a window determines, and why not the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct Determined {
    /// The parameters the window determines (taken from its fit).
    pub free: Free,
    /// The parameters free in the fit: `free`, plus the track width where turns at one |v*omega| level
    /// determine only its product with the slip (fitted so that the radius is not biased, then dropped).
    pub fit: Free,
    /// One sentence per refused parameter, e.g. `track width refused: straight driving (turned 0.01 rad, 0.5 needed)`.
    pub refused: Vec<String>,
    /// Travel along the path (m).
    pub distance_m: f64,
    /// Rotation (rad).
    pub rotation_rad: f64,
    /// Rotation of the samples turning in place, |v * omega| below half `min_level_gap` (rad).
    pub in_place_rotation_rad: f64,
    /// Spread of the turning samples' |v * omega| (80th minus 20th percentile; 0 when the window turned
    /// less than `min_rotation_rad` or in fewer than 10 samples).
    pub level_gap: f64,
    /// |v*omega| of each turning odometry step with its rotation (rad): windows pool these to tell
    /// whether the drive as a whole turned at two levels.
    pub turn_levels: Vec<(f64, f64)>,
}

/// The motion of a window as the nominal parameters see it.
struct Motion {
    /// Travel along the path (m).
    distance: f64,
    /// Rotation (rad).
    rotation: f64,
    /// |v * omega| of each turning step.
    levels: Vec<f64>,
    /// Rotation of the steps turning in place (rad).
    in_place_rotation: f64,
    /// (|v * omega|, rotation) of each turning step.
    turn_levels: Vec<(f64, f64)>,
}

/// Sums the travel and rotation of `w`'s odometry steps and lists the turning steps' |v * omega| levels.
fn motion(w: &Window, o: &Observability) -> Motion {
    let nominal = w.nominal;
    let mut distance = 0.0;
    let mut rotation = 0.0;
    let mut levels = Vec::new();
    let mut in_place_rotation = 0.0;
    let mut turn_levels = Vec::new();
    for s in &w.steps {
        let l = s.d_left_rad * nominal.wheel_radius_m;
        let r = s.d_right_rad * nominal.wheel_radius_m;
        let ds = 0.5 * (l + r);
        let dtheta = (r - l) / nominal.track_width_m;
        distance += ds.abs();
        rotation += dtheta.abs();
        let dt = s.t1_secs - s.t0_secs;
        if dt > 0.0 && (dtheta / dt).abs() > 0.05 {
            let level = (ds / dt * dtheta / dt).abs();
            levels.push(level);
            turn_levels.push((level, dtheta.abs()));
            if level < 0.5 * o.min_level_gap {
                in_place_rotation += dtheta.abs();
            }
        }
    }
    Motion {
        distance,
        rotation,
        levels,
        in_place_rotation,
        turn_levels,
    }
}

/// Decides what `w` can determine.
pub fn determined(w: &Window, o: &Observability) -> Determined {
    let Motion {
        distance,
        rotation,
        mut levels,
        in_place_rotation,
        turn_levels,
    } = motion(w, o);
    let mut refused = Vec::new();
    let mut free = Free::default();
    if distance < o.min_distance_m && rotation < o.min_rotation_rad {
        refused.push(format!(
            "nothing determined: standing still or too little motion (travelled {distance:.3} m, turned {rotation:.3} rad)"
        ));
        return Determined {
            free,
            fit: free,
            refused,
            distance_m: distance,
            rotation_rad: rotation,
            in_place_rotation_rad: in_place_rotation,
            level_gap: 0.0,
            turn_levels,
        };
    }
    free.radius = distance >= o.min_distance_m;
    if !free.radius {
        refused.push(format!(
            "wheel radius refused: travelled {distance:.3} m along the path, {} m needed",
            o.min_distance_m
        ));
    }
    let mut level_gap = 0.0;
    if rotation < o.min_rotation_rad {
        refused.push(format!(
            "track width and beta refused: straight driving (turned {rotation:.3} rad, {} rad needed)",
            o.min_rotation_rad
        ));
    } else {
        level_gap = turns(&mut levels, in_place_rotation, o, &mut free, &mut refused);
    }
    let fit = Free {
        track_width: free.track_width || rotation >= o.min_rotation_rad,
        ..free
    };
    Determined {
        free,
        fit,
        refused,
        distance_m: distance,
        rotation_rad: rotation,
        in_place_rotation_rad: in_place_rotation,
        level_gap,
        turn_levels,
    }
}

/// For a window that turned enough: whether its turns determine the track width and beta (two |v * omega|
/// levels, or turns in place for the track width alone), with the reason for what they do not. Returns
/// the spread of the levels.
fn turns(
    levels: &mut [f64],
    in_place_rotation: f64,
    o: &Observability,
    free: &mut Free,
    refused: &mut Vec<String>,
) -> f64 {
    levels.sort_by(f64::total_cmp);
    let quantile = |q: f64| levels[((levels.len() - 1) as f64 * q).round() as usize];
    let gap = if levels.len() >= 10 {
        quantile(0.8) - quantile(0.2)
    } else {
        0.0
    };
    free.beta = gap >= o.min_level_gap;
    free.track_width = free.beta || in_place_rotation >= o.min_rotation_rad;
    if !free.track_width {
        refused.push(format!(
            "track width and beta refused, correlated: the turns are at one |v*omega| level (spread {gap:.3}, {} needed) and none in place",
            o.min_level_gap
        ));
    } else if !free.beta {
        refused.push(format!(
            "beta refused, correlated with track width: one |v*omega| level in the turns (spread {gap:.3}, {} needed); turns in place pin the track width",
            o.min_level_gap
        ));
    }
    gap
}
