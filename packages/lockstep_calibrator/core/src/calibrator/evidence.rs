//! What the calibrator keeps between steps: the disjoint windows of driving (fitted or held out), what they
//! determine together, and per-parameter series of single-window estimates that tell when the vehicle
//! changed.

use std::collections::VecDeque;

use crate::fit::predict;
use crate::history::{WheelStep, Window};
use crate::model::ModelParams;
use crate::observe::{Determined, Observability};

/// Windows whose mean is compared with the estimate before them to detect a change of the vehicle.
pub const CHANGE_WINDOWS: usize = 3;

/// One disjoint window of driving.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Its data.
    pub window: Window,
    /// Kept out of the fit, for validation only.
    pub held_out: bool,
    /// What it could determine alone.
    pub determined: Determined,
    /// The odometry steps that began before the window and ended inside it (a stretch of consecutive
    /// windows needs them not to lose the motion at the seam).
    pub seam: Vec<WheelStep>,
}

impl Segment {
    /// Whether it moved enough to validate anything.
    pub fn moved(&self, o: &Observability) -> bool {
        self.determined.distance_m >= o.min_distance_m || self.determined.rotation_rad >= o.min_rotation_rad
    }
}

/// Which shared parameters (radius, track width, beta, asymmetry, lateral slip) the fitted windows determine together,
/// and a sentence for each one they do not.
pub fn pooled(segments: &[&Segment], o: &Observability) -> ([bool; crate::batch::N], Vec<String>) {
    // Each kind of motion must happen within one window (as `Calibrator::needs` says): a slow creep adds up
    // to no straight run, noise on a standing robot to no turn. The levels of the turns are pooled: the
    // turns in place of one window and the arcs of another separate track width from beta together.
    let max = |f: fn(&Segment) -> f64| segments.iter().map(|s| f(s)).fold(0.0, f64::max);
    let distance = max(|s| s.determined.distance_m);
    let rotation = max(|s| s.determined.rotation_rad);
    let in_place = max(|s| s.determined.in_place_rotation_rad);
    let mut levels: Vec<(f64, f64)> = segments
        .iter()
        .filter(|s| s.determined.rotation_rad >= o.min_rotation_rad)
        .flat_map(|s| s.determined.turn_levels.iter().copied())
        .collect();
    levels.sort_by(|a, b| a.0.total_cmp(&b.0));
    // The |v*omega| below which 20 % of the turning happened, and above which 20 %.
    let total: f64 = levels.iter().map(|l| l.1).sum();
    let quantile = |q: f64| {
        let mut sum = 0.0;
        for (level, turn) in &levels {
            sum += turn;
            if sum >= q * total {
                return *level;
            }
        }
        levels.last().map_or(0.0, |l| l.0)
    };
    let gap = if levels.len() >= 10 {
        quantile(0.8) - quantile(0.2)
    } else {
        0.0
    };
    let mut refused = Vec::new();
    if distance < o.min_distance_m && rotation < o.min_rotation_rad {
        refused.push(format!(
            "nothing determined: standing still or too little motion (the farthest any window went was {distance:.3} m, the most it turned {rotation:.3} rad)"
        ));
        return ([false; crate::batch::N], refused);
    }
    let radius = distance >= o.min_distance_m;
    if !radius {
        refused.push(format!(
            "wheel radius refused: the farthest any window went was {distance:.3} m along the path, {} m needed",
            o.min_distance_m
        ));
    }
    let turned = rotation >= o.min_rotation_rad;
    let beta = turned && gap >= o.min_level_gap;
    let track = turned && (beta || in_place >= o.min_rotation_rad);
    if !turned {
        refused.push(format!(
            "track width and beta refused: straight driving (the most any window turned was {rotation:.3} rad, {} rad needed)",
            o.min_rotation_rad
        ));
    } else if !track {
        refused.push(format!(
            "track width and beta refused, correlated: the turns are at one |v*omega| level (spread {gap:.3}, {} needed) and none in place",
            o.min_level_gap
        ));
    } else if !beta {
        refused.push(format!(
            "beta refused, correlated with track width: one |v*omega| level in the turns (spread {gap:.3}, {} needed); turns in place pin the track width",
            o.min_level_gap
        ));
    }
    // Unequal wheels show as a heading drift along straight runs; the radius's evidence is theirs too. A
    // sideways slide shows in arcs, which beta needs too.
    ([radius, track, beta, radius, beta], refused)
}

/// Inverse-variance mean and its standard deviation of `(value, std)` pairs.
fn combine<'a>(values: impl Iterator<Item = &'a (f64, f64)> + Clone) -> Option<(f64, f64)> {
    let weight: f64 = values.clone().map(|(_, s)| 1.0 / (s * s)).sum();
    (weight > 0.0).then(|| {
        let mean = values.map(|(v, s)| v / (s * s)).sum::<f64>() / weight;
        (mean, 1.0 / weight.sqrt())
    })
}

/// Single-window estimates of one parameter.
#[derive(Debug, Clone, Default)]
pub struct Series {
    values: VecDeque<(f64, f64)>,
}

impl Series {
    /// Inverse-variance mean and its standard deviation.
    pub fn combined(&self) -> Option<(f64, f64)> {
        combine(self.values.iter())
    }

    /// Forgets all but the newest `n` estimates.
    pub fn keep_newest(&mut self, n: usize) {
        while self.values.len() > n {
            self.values.pop_front();
        }
    }

    /// Adds a window's estimate, keeping the newest `keep`. When the newest `CHANGE_WINDOWS` together
    /// differ from the estimate before them by more than `change_sigmas` (of both uncertainties), the
    /// vehicle changed (wear, a new load): only they are kept, and the answer is `true`. One window alone is
    /// too noisy to tell.
    pub fn add(&mut self, value: f64, std: f64, keep: usize, change_sigmas: f64) -> bool {
        self.values.push_back((value, std.max(1e-9)));
        self.keep_newest(keep.max(1));
        let n = self.values.len();
        if n >= 2 * CHANGE_WINDOWS {
            let split = n - CHANGE_WINDOWS;
            let old = combine(self.values.iter().take(split));
            let recent = combine(self.values.iter().skip(split));
            if let (Some((m_old, s_old)), Some((m_new, s_new))) = (old, recent) {
                if (m_new - m_old).abs() > change_sigmas * s_old.hypot(s_new) {
                    self.keep_newest(CHANGE_WINDOWS);
                    return true;
                }
            }
        }
        false
    }
}

/// The first observed pose that moves more than `jump_m` beyond what the wheels say, as a sentence.
pub fn jump(w: &Window, params: &ModelParams, jump_m: f64) -> Option<String> {
    for pair in w.poses.windows(2) {
        let times = [pair[0].t_secs, pair[1].t_secs];
        let predicted = predict(w, params, pair[0].pose, &times);
        let Some(p) = predicted.get(1) else { continue };
        let size = (p.x_m - pair[1].pose.x_m).hypot(p.y_m - pair[1].pose.y_m);
        if size > jump_m {
            return Some(format!(
                "window not used: the observed pose jumps {size:.2} m at t={:.3} s (more than {jump_m} m beyond the wheels' motion)",
                pair[1].t_secs
            ));
        }
    }
    None
}

/// Consecutive windows joined into stretches of at most `max_secs`, each to be fitted from one start pose:
/// the longer the stretch, the more a small radius error adds up against the observed poses. The held-out
/// windows' wheel motion carries the prediction across them, their observed poses are left out.
pub fn stretches(segments: &[&Segment], max_secs: f64) -> Vec<Window> {
    let mut out: Vec<Window> = Vec::new();
    for s in segments {
        let w = &s.window;
        let joins = out.last().is_some_and(|last| {
            (last.t1_secs - w.t0_secs).abs() < 1e-6 && w.t1_secs - last.t0_secs <= max_secs + 1e-6
        });
        if !joins {
            out.push(Window {
                t0_secs: w.t0_secs,
                t1_secs: w.t0_secs,
                commands: Vec::new(),
                steps: Vec::new(),
                poses: Vec::new(),
                nominal: w.nominal,
            });
        } else if let Some(last) = out.last_mut() {
            last.steps.extend(s.seam.iter().filter(|x| x.t0_secs < w.t0_secs));
        }
        let Some(last) = out.last_mut() else { continue };
        last.t1_secs = w.t1_secs;
        last.steps.extend(w.steps.iter().copied());
        if !s.held_out {
            last.poses.extend(w.poses.iter().copied());
        }
    }
    out.retain(|w| w.poses.len() >= 6);
    out
}
