//! The bench's summary statistics and markdown tables.

use std::fmt::Write;
use std::time::Duration;

use lockstep_calibrator::ModelParams;

use crate::crb::Bound;
use crate::RunResult;

/// Straight-drive runs: the baseline's singular matrix and our refusal.
#[derive(Debug, Clone, Default)]
pub struct Straight {
    /// Runs.
    pub runs: usize,
    /// Runs where the baseline's step-1 matrix was almost singular.
    pub censi_singular: usize,
    /// Its condition numbers.
    pub censi_cond: Vec<f64>,
    /// The baseline's track width error (%) where it solved anyway.
    pub censi_track_err: Vec<f64>,
    /// Runs where ours kept the nominal track width and said "straight driving".
    pub ours_refused: usize,
}

/// One noise level's results.
#[derive(Debug, Clone)]
pub struct LevelResult {
    /// Its name.
    pub name: String,
    /// The mixed-drive runs.
    pub runs: Vec<RunResult>,
    /// The Cramer-Rao bound over one run's disjoint 3 s windows.
    pub bound: Option<Bound>,
    /// The Cramer-Rao bound over one run as a single window.
    pub bound_run: Option<Bound>,
    /// The straight-drive runs.
    pub straight: Straight,
}

/// Fit and step times (ms).
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Fits timed.
    pub fits: usize,
    /// Median fit time.
    pub fit_median_ms: f64,
    /// 99th percentile.
    pub fit_p99_ms: f64,
    /// Slowest fit.
    pub fit_max_ms: f64,
    /// Steps timed.
    pub steps: usize,
    /// Median step time.
    pub step_median_ms: f64,
    /// 99th percentile.
    pub step_p99_ms: f64,
    /// Slowest step.
    pub step_max_ms: f64,
    /// The goal for every fit (ms).
    pub goal_ms: f64,
}

fn percentiles(d: &[Duration]) -> (f64, f64, f64) {
    let mut ms: Vec<f64> = d.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    if ms.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99), ms[ms.len() - 1])
}

impl Timing {
    /// Every fit under the goal.
    pub fn goal_met(&self) -> bool {
        self.fit_max_ms < self.goal_ms
    }

    /// Summarizes the measured times.
    pub fn new(fits: &[Duration], steps: &[Duration], goal_ms: f64) -> Self {
        let (fit_median_ms, fit_p99_ms, fit_max_ms) = percentiles(fits);
        let (step_median_ms, step_p99_ms, step_max_ms) = percentiles(steps);
        Self {
            fits: fits.len(),
            fit_median_ms,
            fit_p99_ms,
            fit_max_ms,
            steps: steps.len(),
            step_median_ms,
            step_p99_ms,
            step_max_ms,
            goal_ms,
        }
    }
}

/// Errors of radius (%), track width (%), delay (ms), beta.
fn errors<'a>(params: impl Iterator<Item = &'a ModelParams>, truth: &ModelParams) -> [Vec<f64>; 4] {
    let mut out: [Vec<f64>; 4] = Default::default();
    for p in params {
        out[0].push(100.0 * (p.wheel_radius_m / truth.wheel_radius_m - 1.0));
        out[1].push(100.0 * (p.track_width_m / truth.track_width_m - 1.0));
        out[2].push(1e3 * (p.delay_secs - truth.delay_secs));
        out[3].push(p.centripetal_factor - truth.centripetal_factor);
    }
    out
}

/// The test tolerance: radius and track width within 0.5 %, delay within 10 ms.
pub fn within_tolerance(p: &ModelParams, truth: &ModelParams) -> bool {
    (p.wheel_radius_m / truth.wheel_radius_m - 1.0).abs() < 0.005
        && (p.track_width_m / truth.track_width_m - 1.0).abs() < 0.005
        && (p.delay_secs - truth.delay_secs).abs() <= 0.010
}

const NAMES: [&str; 4] = ["radius (%)", "track width (%)", "delay (ms)", "beta"];
const DIGITS: [usize; 4] = [3, 3, 1, 4];

/// Mean |e|, worst |e|, mean e.
fn stats(errors: &[f64]) -> Option<(f64, f64, f64)> {
    if errors.is_empty() {
        return None;
    }
    let n = errors.len() as f64;
    let mean_abs = errors.iter().map(|e| e.abs()).sum::<f64>() / n;
    let worst = errors.iter().fold(0.0_f64, |m, e| m.max(e.abs()));
    let bias = errors.iter().sum::<f64>() / n;
    Some((mean_abs, worst, bias))
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

fn cells(s: Option<(f64, f64, f64)>, digits: usize) -> [String; 3] {
    match s {
        Some((m, w, b)) => [
            format!("{m:.digits$}"),
            format!("{w:.digits$}"),
            format!("{b:+.digits$}"),
        ],
        None => ["n/a".into(), "n/a".into(), "n/a".into()],
    }
}

/// The whole report in markdown.
pub fn report(
    levels: &[LevelResult],
    truth: &ModelParams,
    timing: &Timing,
    secs: f64,
    took: Duration,
) -> String {
    let mut out = String::new();
    accuracy(&mut out, levels, truth, secs);
    ablation(&mut out, levels, truth);
    straight(&mut out, levels);
    time(&mut out, timing);
    let _ = writeln!(out, "\nWhole bench: {:.1} s.", took.as_secs_f64());
    out
}

/// The main table: ours, the baseline and the bounds per level and parameter.
fn accuracy(out: &mut String, levels: &[LevelResult], truth: &ModelParams, secs: f64) {
    let seeds = levels.first().map_or(0, |l| l.runs.len());
    let _ = writeln!(
        out,
        "### Accuracy: {seeds} seeded runs per noise level, {secs:.0} s mixed drive at 100 Hz, SLAM 20 Hz\n"
    );
    let _ = writeln!(
        out,
        "True vehicle: radius {:.4} m (+5 %), track width {:.3} m (-4 %), delay {:.0} ms, beta {}; asphalt. \
         Errors: radius and track width relative (%), delay in ms, beta absolute; mean and worst |error| over \
         the runs, bias = mean signed error. Ours: `Config::default()` with the level's pose noise, stepped \
         every second of data. CRB: Cramer-Rao standard deviation at the true parameters and the known noise, \
         over one run's disjoint 3 s windows (each with its own start pose, as the window fit) and over the \
         whole run as one window. Ours sigma: the standard deviation the last accepted update reported \
         (median over runs). The target tolerance: radius and track width within 0.5 %, delay within 10 ms.\n",
        truth.wheel_radius_m,
        truth.track_width_m,
        truth.delay_secs * 1e3,
        truth.centripetal_factor
    );
    out.push_str(
        "| SLAM noise | parameter | ours mean | ours worst | ours bias | ours sigma | Censi 2013 mean | Censi 2013 worst | Censi 2013 bias | CRB sigma, 3 s windows | CRB sigma, whole run |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for l in levels {
        let censi_ok: Vec<&crate::censi::Estimate> =
            l.runs.iter().filter_map(|r| r.censi.as_ref().ok()).collect();
        let ours = errors(l.runs.iter().map(|r| &r.ours), truth);
        let censi = [
            Some(
                censi_ok
                    .iter()
                    .map(|e| 100.0 * (e.radius_m() / truth.wheel_radius_m - 1.0))
                    .collect::<Vec<_>>(),
            ),
            Some(
                censi_ok
                    .iter()
                    .map(|e| 100.0 * (e.track_width_m / truth.track_width_m - 1.0))
                    .collect(),
            ),
            None,
            None,
        ];
        // The bound and our reported sigma in the errors' units.
        let scale = [
            100.0 / truth.wheel_radius_m,
            100.0 / truth.track_width_m,
            1e3,
            1.0,
        ];
        let crb = |b: Option<Bound>, i: usize| -> String {
            let s = b.and_then(|b| [Some(b.std[0]), Some(b.std[1]), None, Some(b.std[2])][i]);
            s.map_or("n/a".into(), |s| format!("{:.*}", DIGITS[i], s * scale[i]))
        };
        for i in 0..4 {
            let digits = DIGITS[i];
            let [om, ow, ob] = cells(stats(&ours[i]), digits);
            let [cm, cw, cb] = match &censi[i] {
                Some(c) => cells(stats(c), digits),
                None => ["no such parameter".into(), String::new(), String::new()],
            };
            let (crb3, crb_run) = (crb(l.bound, i), crb(l.bound_run, i));
            let sig = median(&l.runs.iter().map(|r| r.ours_std[i]).collect::<Vec<_>>()) * scale[i];
            let level = if i == 0 { l.name.as_str() } else { "" };
            let _ = writeln!(
                out,
                "| {level} | {} | {om} | {ow} | {ob} | {sig:.digits$} | {cm} | {cw} | {cb} | {crb3} | {crb_run} |",
                NAMES[i]
            );
        }
        let n = l.runs.len();
        let accepted = l.runs.iter().filter(|r| r.accepted > 0).count();
        let within = l.runs.iter().filter(|r| within_tolerance(&r.ours, truth)).count();
        let censi_within = censi_ok
            .iter()
            .filter(|e| {
                (e.radius_m() / truth.wheel_radius_m - 1.0).abs() < 0.005
                    && (e.track_width_m / truth.track_width_m - 1.0).abs() < 0.005
            })
            .count();
        let updates = median(&l.runs.iter().map(|r| r.accepted as f64).collect::<Vec<_>>());
        let failures: Vec<String> = l
            .runs
            .iter()
            .filter_map(|r| r.censi.as_ref().err().map(|f| f.to_string()))
            .collect();
        let cond_max = censi_ok.iter().map(|e| e.cond).fold(0.0_f64, f64::max);
        let censi_cell = if failures.is_empty() {
            format!(
                "{}/{} solved (condition number <= {cond_max:.0}, {} pose intervals)",
                censi_ok.len(),
                l.runs.len(),
                censi_ok.first().map_or(0, |e| e.intervals)
            )
        } else {
            format!(
                "{}/{} solved; failed: {}",
                censi_ok.len(),
                l.runs.len(),
                failures.join(", ")
            )
        };
        let _ = writeln!(
            out,
            "| | runs | {accepted}/{n} ended with accepted values (median {updates:.0} updates); {within}/{n} within the target tolerance | | | | {censi_cell}; {censi_within}/{n} within 0.5 % | | | {} windows | 1 window |",
            l.bound.map_or(0, |b| b.windows)
        );
    }
}

/// Ours with threshold 1 at 0.
fn ablation(out: &mut String, levels: &[LevelResult], truth: &ModelParams) {
    out.push_str(
        "\n### Ablation: ours with `significance_sigmas` 0 (the residual gate alone: an update only when a window's residual is over threshold 1; by default also when the joint estimate is significantly off the parameters in use or markedly more certain)\n\n",
    );
    out.push_str("| SLAM noise | parameter | mean | worst | bias | runs with accepted values | runs within the target tolerance |\n|---|---|---|---|---|---|---|\n");
    for l in levels {
        let off: Vec<&(ModelParams, usize)> = l.runs.iter().filter_map(|r| r.gate_off.as_ref()).collect();
        let e = errors(off.iter().map(|(p, _)| p), truth);
        let accepted = off.iter().filter(|(_, n)| *n > 0).count();
        let within = off.iter().filter(|(p, _)| within_tolerance(p, truth)).count();
        for (i, e) in e.iter().enumerate() {
            let [m, w, b] = cells(stats(e), DIGITS[i]);
            let (level, runs, ok) = if i == 0 {
                (
                    l.name.as_str(),
                    format!("{accepted}/{}", off.len()),
                    format!("{within}/{}", off.len()),
                )
            } else {
                ("", String::new(), String::new())
            };
            let _ = writeln!(
                out,
                "| {level} | {} | {m} | {w} | {b} | {runs} | {ok} |",
                NAMES[i]
            );
        }
    }
}

/// The straight-drive runs.
fn straight(out: &mut String, levels: &[LevelResult]) {
    out.push_str("\n### Straight driving (40 s, straight runs and stops only)\n\n");
    out.push_str(
        "| SLAM noise | runs | Censi 2013: matrix almost singular | ours: track width kept, reason given |\n",
    );
    out.push_str("|---|---|---|---|\n");
    for l in levels {
        let s = &l.straight;
        let solved = if s.censi_track_err.is_empty() {
            String::new()
        } else {
            let worst = s.censi_track_err.iter().fold(0.0_f64, |m, e| m.max(e.abs()));
            format!(" (solved anyway: track width off by up to {worst:.1} %)")
        };
        let lowest = s.censi_cond.iter().copied().fold(f64::INFINITY, f64::min);
        let lowest = if lowest.is_finite() {
            format!("condition number >= {lowest:.1e}")
        } else {
            "exactly singular".into()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {}/{} ({lowest}){solved} | {}/{} |",
            l.name, s.runs, s.censi_singular, s.runs, s.ours_refused, s.runs
        );
    }
}

/// Fit and step times.
fn time(out: &mut String, timing: &Timing) {
    out.push_str("\n### Time (release build)\n\n");
    out.push_str("| what | count | median | p99 | max | goal |\n|---|---|---|---|---|---|\n");
    let _ = writeln!(
        out,
        "| `fit()` of one 3 s window (300 odometry steps, 60 poses), from the nominal parameters | {} | {:.2} ms | {:.2} ms | {:.2} ms | every fit < {} ms: **{}** |",
        timing.fits,
        timing.fit_median_ms,
        timing.fit_p99_ms,
        timing.fit_max_ms,
        timing.goal_ms,
        if timing.goal_met() { "met" } else { "missed" }
    );
    let _ = writeln!(
        out,
        "| `Calibrator::step()` that fitted (gate residual, delay, fit, 2 validation segments) | {} | {:.2} ms | {:.2} ms | {:.2} ms | |",
        timing.steps, timing.step_median_ms, timing.step_p99_ms, timing.step_max_ms
    );
}
