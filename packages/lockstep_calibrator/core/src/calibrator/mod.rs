//! The online calibrator. The history is cut into disjoint windows as it comes in; every
//! `holdout_every`-th window is held out for validation and never fitted. The others are fitted jointly
//! (module `batch`): each parameter is determined by all the evidence of the recent drive, the turns in
//! place of one window with the arcs of another, and keeps its own verdict and uncertainty.
//!
//! Each step looks at the latest window: when the parameters in use explain it worse than threshold 1 (the
//! residual gate), or the joint estimate differs from them significantly (`Config::significance_sigmas`),
//! the joint estimate is a candidate. It must explain the windows it was fitted on (threshold 1) and then
//! the held-out windows (threshold 2) before it is accepted; an accepted parameter far from nominal raises a
//! drift alarm.

mod candidate;
mod evidence;
// Visible in the crate so that module `needs` takes `Config` from where it is defined: taking it through
// this module would make the two modules import each other.
pub(crate) mod types;

use std::collections::VecDeque;

pub use types::{Accepted, Config, Gate, Outcome, SegmentCheck};

use crate::batch::{fit_windows, BatchFit, N, NAMES};
use crate::delay::estimate_delay;
use crate::fit::{fit, residual};
use crate::history::{History, Window};
use crate::model::ModelParams;
use crate::needs::{needs, DriveSummary, Need};
use crate::observe::determined;
use evidence::{jump, pooled, stretches, Segment, Series, CHANGE_WINDOWS};

/// Fits `stretches` jointly from `init`; each stretch starts from the pose `from` gave the window it
/// begins with, else from its first observed pose.
fn fit_stretches(
    stretches: &[Window],
    init: &ModelParams,
    from: Option<&BatchFit>,
    free: [bool; N],
    noise: crate::fit::PoseNoise,
    warm: bool,
) -> Option<BatchFit> {
    let starts: Vec<_> = stretches
        .iter()
        .map(|w| {
            from.and_then(|p| {
                p.stretches
                    .iter()
                    .position(|t| (t - w.t0_secs).abs() < 1e-9)
                    .map(|i| p.starts[i])
            })
            .unwrap_or(w.poses[0].pose)
        })
        .collect();
    let windows: Vec<&Window> = stretches.iter().collect();
    fit_windows(&windows, init, Some(&starts), free, noise, warm)
}

/// A fitted parameter whose standard deviation is above this (relative for radius and track width) is not
/// determined: the drive did not pin it, whatever the windows' kinds of motion suggested.
const MAX_STD: [f64; N] = [0.02, 0.05, 0.5, 0.02, 0.1];

/// A joint fit whose RMS normalized residual is above this lost its way (a wrong start far from linear).
const LOST_RMS: f64 = 1.5;

/// A standard deviation this fraction of the one in use makes the estimate worth publishing.
const SHARPER: f64 = 0.7;

/// The online calibrator.
#[derive(Debug, Clone)]
pub struct Calibrator {
    config: Config,
    history: History,
    reference: ModelParams,
    current: ModelParams,
    std: [f64; 4],
    /// Standard deviations of the asymmetry and the lateral slip in use (0 = not estimated).
    extra_std: [f64; 2],
    /// Single-window estimates: radius, track width, delay, beta. The delay's mean is its estimate; the
    /// others only tell when the vehicle changed.
    series: [Series; 4],
    drive: DriveSummary,
    segments: VecDeque<Segment>,
    /// Start of the next disjoint window.
    next_segment_secs: Option<f64>,
    /// Disjoint windows cut so far (the held-out ones are counted by it).
    cut: u64,
    estimate: Option<BatchFit>,
    refused: Vec<String>,
    stale: bool,
}

impl Calibrator {
    /// Starts from `nominal` (the parameters the base and its odometry use, and the drift reference).
    pub fn new(config: Config, nominal: ModelParams) -> Self {
        Self {
            config,
            history: History::new(nominal, config.history_limit_secs),
            reference: nominal,
            current: nominal,
            std: [0.0; 4],
            extra_std: [0.0; 2],
            series: Default::default(),
            drive: DriveSummary::default(),
            segments: VecDeque::new(),
            next_segment_secs: None,
            cut: 0,
            estimate: None,
            refused: Vec::new(),
            stale: false,
        }
    }

    /// The inputs (push samples here).
    pub fn history_mut(&mut self) -> &mut History {
        &mut self.history
    }

    /// The inputs.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The parameters in use.
    pub fn current(&self) -> ModelParams {
        self.current
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Standard deviations of the parameters in use: radius, track width, delay, beta (0 = not estimated,
    /// still nominal).
    pub fn std(&self) -> [f64; 4] {
        self.std
    }

    /// The current uncertainty (standard deviation) of each parameter given all the evidence gathered so
    /// far, accepted or not: radius (m), track width (m), delay (s), beta; infinite for a parameter no
    /// driving has determined yet. What a calibration drive watches to know when to stop.
    pub fn uncertainty(&self) -> [f64; 4] {
        let mut out = [f64::INFINITY; 4];
        if let Some(e) = &self.estimate {
            for (slot, k) in [(0, 0), (1, 1), (3, 2)] {
                if e.free[k] && e.std[k] < MAX_STD[k] * scale(k, &e.params) {
                    out[slot] = e.std[k];
                }
            }
        }
        if let Some((_, s)) = self.series[2].combined() {
            out[2] = s;
        }
        out
    }

    /// The latest joint estimate (accepted or not), if any window determined something.
    pub fn estimate(&self) -> Option<&BatchFit> {
        self.estimate.as_ref()
    }

    /// The disjoint windows kept, `(start, end, held out)` in seconds: the held-out ones are only ever used
    /// to validate, the others only to fit.
    pub fn windows(&self) -> Vec<(f64, f64, bool)> {
        self.segments
            .iter()
            .map(|s| (s.window.t0_secs, s.window.t1_secs, s.held_out))
            .collect()
    }

    /// What the windows looked at since start or reset had of the driving each parameter needs.
    pub fn drive(&self) -> &DriveSummary {
        &self.drive
    }

    /// The parameters still nominal (not estimated), each with the driving that would determine it and
    /// what the drive had of that.
    pub fn needs(&self) -> Vec<Need> {
        needs(&self.config, &self.drive, &self.std)
    }

    /// Forgets the estimates (back to nominal) and what the drive had, keeping the history.
    pub fn reset(&mut self) {
        let fresh = Self::new(self.config, self.reference);
        let history = std::mem::replace(&mut self.history, fresh.history.clone());
        *self = Self { history, ..fresh };
    }

    /// Cuts the disjoint windows complete by `t1` and records what each one had.
    fn ingest(&mut self, t1: f64) {
        let c = self.config;
        let next = match self.next_segment_secs {
            Some(t) => t,
            None => match self.history.complete_from() {
                Some(t) => t,
                None => return,
            },
        };
        let mut t0 = next.max(t1 - c.history_limit_secs);
        while t0 + c.window_secs <= t1 + 1e-9 {
            let w = self.history.window(t0, t0 + c.window_secs, c.max_delay_secs);
            t0 += c.window_secs;
            self.cut += 1;
            let held_out = c.holdout_every > 1 && self.cut % c.holdout_every as u64 == 0;
            if w.poses.len() < 6 || w.steps.len() < 10 || jump(&w, &self.current, c.jump_m).is_some() {
                continue;
            }
            let seam = self
                .history
                .window(w.t0_secs - 0.5, w.t1_secs, 0.0)
                .steps
                .into_iter()
                .filter(|s| s.t0_secs < w.t0_secs - 1e-9 && s.t1_secs > w.t0_secs + 1e-9)
                .collect();
            self.add_segment(w, held_out, seam);
        }
        self.next_segment_secs = Some(t0);
    }

    fn add_segment(&mut self, w: Window, held_out: bool, seam: Vec<crate::history::WheelStep>) {
        let c = self.config;
        let d = determined(&w, &c.observability);
        let delay = estimate_delay(&w, c.max_delay_secs);
        self.drive.record(&d, &delay);
        if !held_out {
            let keep = c.accumulate_windows;
            let mut changed = false;
            if let Ok(e) = &delay {
                // The delay grid's resolution stands for its uncertainty.
                changed |= self.series[2].add(e.delay_secs, 0.002, keep, c.change_sigmas);
            }
            if d.fit.radius || d.fit.track_width {
                if let Some(f) = fit(&w, &self.current, d.fit, c.noise) {
                    for (i, on, value, std) in [
                        (0, d.free.radius, f.params.wheel_radius_m, f.std[0]),
                        (1, d.free.track_width, f.params.track_width_m, f.std[1]),
                        (3, d.free.beta, f.params.centripetal_factor, f.std[2]),
                    ] {
                        if on {
                            changed |= self.series[i].add(value, std, keep, c.change_sigmas);
                        }
                    }
                }
            }
            if changed {
                // The vehicle changed: the windows before the newest few describe another vehicle.
                while self.segments.len() > CHANGE_WINDOWS - 1 {
                    self.segments.pop_front();
                }
                for s in &mut self.series {
                    s.keep_newest(CHANGE_WINDOWS);
                }
            }
        }
        self.segments.push_back(Segment {
            window: w,
            held_out,
            determined: d,
            seam,
        });
        let fitted = self.segments.iter().filter(|s| !s.held_out).count();
        if fitted > c.accumulate_windows {
            while let Some(s) = self.segments.pop_front() {
                if !s.held_out {
                    break;
                }
            }
        }
        self.stale = true;
    }

    /// Fits the windows jointly again: over long stretches, warm-started from the previous fit. A long
    /// stretch's prediction is far from linear in the parameters (a 3 % track-width error turns the heading
    /// by a tenth of a radian over 15 s of turning), so when there is no previous fit, or the warm one does
    /// not explain its windows (`LOST_RMS`), each window is first fitted from its own start pose, and the
    /// long stretches start from that; if they still do not explain their windows, the windows' fit stands.
    fn refit(&mut self) {
        let c = self.config;
        let fitted: Vec<&Segment> = self.segments.iter().filter(|s| !s.held_out).collect();
        let (free, mut refused) = pooled(&fitted, &c.observability);
        let previous = self.estimate.take();
        if free.iter().any(|f| *f) {
            let all: Vec<&Segment> = self.segments.iter().collect();
            let long = stretches(&all, c.stretch_secs);
            let init = self.estimate_start(previous.as_ref());
            let mut e = previous
                .as_ref()
                .and_then(|p| fit_stretches(&long, &init, Some(p), free, c.noise, true))
                .filter(|e| e.rms < LOST_RMS);
            if e.is_none() {
                let short = stretches(&all, c.window_secs);
                let windows = fit_stretches(&short, &init, None, free, c.noise, false);
                let again = windows
                    .as_ref()
                    .and_then(|w| fit_stretches(&long, &w.params, Some(w), free, c.noise, false))
                    .filter(|e| e.rms < LOST_RMS);
                e = again.or(windows);
            }
            if let Some(e) = &e {
                for (k, name) in NAMES.iter().enumerate() {
                    let limit = MAX_STD[k] * scale(k, &e.params);
                    if e.free[k] && (e.std[k].is_nan() || e.std[k] >= limit) {
                        refused.push(format!(
                            "{name} not determined: its uncertainty over the windows is {:.3e}, more than {limit:.3e}",
                            e.std[k]
                        ));
                    }
                }
            }
            self.estimate = e;
        }
        self.refused = refused;
        self.stale = false;
    }

    /// Where the joint fit starts: the latest estimate, else the parameters in use.
    fn estimate_start(&self, previous: Option<&BatchFit>) -> ModelParams {
        let mut p = previous.map_or(self.current, |e| e.params);
        p.delay_secs = self.current.delay_secs;
        if !(p.wheel_radius_m > 0.0 && p.track_width_m > 0.0) {
            p = self.current;
        }
        p
    }

    /// Calibrates on the latest complete window.
    pub fn step(&mut self) -> Outcome {
        let c = self.config;
        let (w, before) = match self.window_to_step() {
            Ok(ready) => ready,
            Err(waiting) => return waiting,
        };
        if self.stale {
            self.refit();
        }
        let mut refused = self.refused.clone();
        let delay = self.series[2].combined();
        if delay.is_none() {
            refused.push("delay refused: no window held a command step followed by driving".into());
        }
        let unchanged = |threshold1, refused: Vec<String>| Outcome::Unchanged {
            residual: before,
            threshold1,
            refused,
        };
        let determined = self.determined();
        if determined.iter().all(|d| !d) && delay.is_none() {
            return unchanged(f64::NAN, refused);
        }
        let threshold1 = match c.gate {
            Gate::Fixed(t) => t,
            Gate::BestOfCandidates => self.best_window_candidate(&w) * 1.05,
        };
        let gated = before < threshold1;
        if gated && c.significance_sigmas <= 0.0 {
            return unchanged(threshold1, refused);
        }
        let (candidate, std, extra_std, beta_wants_negative) = self.candidate(determined, delay);
        if gated && !self.significant(&candidate, &std, &extra_std) {
            return unchanged(threshold1, refused);
        }
        if let Some(rejected) = self.batch_rejection(candidate) {
            return rejected;
        }
        let validation = match self.validate(candidate) {
            Ok(validation) => validation,
            Err(rejected) => return rejected,
        };
        let after = residual(&w, &candidate, c.noise).unwrap_or(f64::NAN);
        self.current = candidate;
        self.std = std;
        self.extra_std = extra_std;
        Outcome::Accepted(Accepted {
            params: candidate,
            std,
            asymmetry_std: extra_std[0],
            lateral_slip_std: extra_std[1],
            residual_before: before,
            residual_after: after,
            validation,
            refused,
            beta_wants_negative,
            alarms: self.alarms(),
        })
    }

    /// The latest complete window and the current parameters' residual on it, once it holds enough data,
    /// there is history to validate against and no observed pose jumped (the window is ingested then);
    /// otherwise the outcome that says why not.
    // The outcome goes back to `step` as it is, once per window: boxing it would only add an allocation.
    #[allow(clippy::result_large_err)]
    fn window_to_step(&mut self) -> Result<(Window, f64), Outcome> {
        let c = self.config;
        let Some(t1) = self.history.complete_until() else {
            return Err(Outcome::Waiting("no odometry and observed pose yet".into()));
        };
        let t0 = t1 - c.window_secs;
        let w = self.history.window(t0, t1, c.max_delay_secs);
        if w.poses.len() < 6 || w.steps.len() < 10 {
            return Err(Outcome::Waiting(format!(
                "the window holds {} observed poses and {} odometry steps (6 and 10 needed)",
                w.poses.len(),
                w.steps.len()
            )));
        }
        self.ingest(t1);
        let held = self.validation_segments();
        if held.is_empty() {
            // One held-out window is enough to validate; the newest `validation_segments` are used.
            return Err(Outcome::Waiting(format!(
                "no history to validate against yet: a held-out window of {} s is needed (every {} window is kept out of the fit)",
                c.window_secs,
                ordinal(c.holdout_every),
            )));
        }
        if let Some(jump) = jump(&w, &self.current, c.jump_m) {
            return Err(Outcome::Skipped(jump));
        }
        let Some(before) = residual(&w, &self.current, c.noise) else {
            return Err(Outcome::Waiting(
                "the residual cannot be computed on this window".into(),
            ));
        };
        Ok((w, before))
    }

    /// The rejection of `candidate` when the joint estimate does not explain the windows it was fitted on
    /// (threshold 1; the segment then spans those windows).
    fn batch_rejection(&mut self, candidate: ModelParams) -> Option<Outcome> {
        let c = self.config;
        let e = self.estimate.as_ref()?;
        let limit = match c.gate {
            Gate::Fixed(t) => t,
            Gate::BestOfCandidates => self.best_batch_candidate() * 1.05,
        };
        if !(e.rms.is_nan() || e.rms >= limit) {
            return None;
        }
        let rms = e.rms;
        self.drive.rejected += 1;
        let fitted = self.segments.iter().filter(|s| !s.held_out);
        let t0 = fitted
            .clone()
            .map(|s| s.window.t0_secs)
            .fold(f64::INFINITY, f64::min);
        let t1 = fitted.map(|s| s.window.t1_secs).fold(f64::NEG_INFINITY, f64::max);
        Some(Outcome::Rejected {
            params: candidate,
            segment: SegmentCheck {
                t0_secs: t0,
                t1_secs: t1,
                residual: rms,
            },
            threshold2: limit,
        })
    }

    /// `candidate`'s residual on each validation segment, or the rejection at the first over threshold 2.
    #[allow(clippy::result_large_err)]
    fn validate(&mut self, candidate: ModelParams) -> Result<Vec<SegmentCheck>, Outcome> {
        let c = self.config;
        let mut validation = Vec::new();
        for s in self.validation_segments() {
            let r = residual(&s.window, &candidate, c.noise).unwrap_or(f64::INFINITY);
            let check = SegmentCheck {
                t0_secs: s.window.t0_secs,
                t1_secs: s.window.t1_secs,
                residual: r,
            };
            if r.is_nan() || r >= c.threshold2 {
                self.drive.rejected += 1;
                return Err(Outcome::Rejected {
                    params: candidate,
                    segment: check,
                    threshold2: c.threshold2,
                });
            }
            validation.push(check);
        }
        Ok(validation)
    }

    /// Which shared parameters the joint estimate determines (radius, track width, beta, asymmetry, lateral
    /// slip).
    fn determined(&self) -> [bool; N] {
        let Some(e) = &self.estimate else {
            return [false; N];
        };
        std::array::from_fn(|k| e.free[k] && e.std[k] < MAX_STD[k] * scale(k, &e.params))
    }

    /// The newest held-out windows to validate on, preferring those that moved.
    fn validation_segments(&self) -> Vec<&Segment> {
        let o = &self.config.observability;
        let n = self.config.validation_segments.max(1);
        let held = self.segments.iter().rev().filter(|s| s.held_out);
        let mut out: Vec<&Segment> = held.clone().filter(|s| s.moved(o)).take(n).collect();
        for s in held {
            if out.len() >= n {
                break;
            }
            if !s.moved(o) {
                out.push(s);
            }
        }
        out
    }

    fn alarms(&self) -> Vec<String> {
        let limit = self.config.drift_alarm_percent;
        let mut out = Vec::new();
        for (name, now, nominal) in [
            (
                "wheel radius",
                self.current.wheel_radius_m,
                self.reference.wheel_radius_m,
            ),
            (
                "track width",
                self.current.track_width_m,
                self.reference.track_width_m,
            ),
        ] {
            let percent = 100.0 * (now / nominal - 1.0);
            if percent.abs() > limit {
                out.push(format!(
                    "{name} drifted {percent:+.1} % from nominal ({nominal} m -> {now:.5} m), more than {limit} %"
                ));
            }
        }
        out
    }
}

/// The scale of shared parameter `k`'s uncertainty limit: radius and track width relative to their value.
fn scale(k: usize, p: &ModelParams) -> f64 {
    match k {
        0 => p.wheel_radius_m,
        1 => p.track_width_m,
        _ => 1.0,
    }
}

fn ordinal(n: usize) -> String {
    match n {
        1 => "single".into(),
        2 => "2nd".into(),
        3 => "3rd".into(),
        n => format!("{n}th"),
    }
}
