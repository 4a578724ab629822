//! Accuracy and speed of the online calibrator, next to the closed-form
//! least-squares baseline of Censi et al. 2013 and the Cramer-Rao bound, on the same simulated runs.
//!
//! Per noise level and seed: the simulator's core (tests/common, commanded mode, asphalt) drives the mixed
//! drive with the test's true vehicle (radius +5 %, track -4 %, delay 80 ms, beta 0.3) at 100 Hz, SLAM
//! at 20 Hz as tests/online.rs; the calibrator runs online exactly as there (a step every second of data,
//! `Config::default()` with the pose noise set to the level's), and its final parameters are compared with
//! the truth. The baseline gets the wheel angle increments (recovered from the odometry by the library's
//! `History`) and the SLAM pose increments of the same run. Fit time: the library's `fit` on disjoint 3 s
//! windows of every run, started from the nominal parameters.
//!
//! `cargo bench -p lockstep_calibrator --bench accuracy [-- --seeds 20 --secs 150 --straight-seeds 5]`
//! prints markdown tables on stdout and exits with 1 when a fit takes 50 ms or more (`--fit-goal-ms`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "accuracy/censi.rs"]
mod censi;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "accuracy/crb.rs"]
mod crb;
#[path = "accuracy/table.rs"]
mod table;

use std::time::{Duration, Instant};

use common::{mixed_drive, model, nominal, simulate, straight_drive, true_vehicle, Run};
use lockstep_calibrator::{
    determined, fit, Calibrator, Config, History, ModelParams, Observability, Outcome, PoseNoise,
};

/// A SLAM noise level.
#[derive(Debug, Clone, Copy)]
pub struct Level {
    /// Position noise (m).
    pub sigma_xy_m: f64,
    /// Heading noise (deg).
    pub sigma_yaw_deg: f64,
}

impl Level {
    fn noise(&self) -> PoseNoise {
        PoseNoise {
            sigma_xy_m: self.sigma_xy_m,
            sigma_yaw_rad: self.sigma_yaw_deg.to_radians(),
        }
    }

    fn name(&self) -> String {
        format!("{:.0} cm / {} deg", self.sigma_xy_m * 100.0, self.sigma_yaw_deg)
    }
}

const LEVELS: [Level; 2] = [
    Level {
        sigma_xy_m: 0.02,
        sigma_yaw_deg: 0.5,
    },
    Level {
        sigma_xy_m: 0.05,
        sigma_yaw_deg: 1.5,
    },
];
const SURFACE: u8 = 1;
const SLAM_HZ: f64 = 20.0;
const WINDOW_SECS: f64 = 3.0;

/// What one run gave.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Our final parameters (the last accepted; nominal if none).
    pub ours: ModelParams,
    /// Their standard deviations as the last accepted update reported them.
    pub ours_std: [f64; 4],
    /// Accepted updates.
    pub accepted: usize,
    /// Our final parameters and accepted updates with `significance_sigmas` 0 (the residual gate alone):
    /// the ablation.
    pub gate_off: Option<(ModelParams, usize)>,
    /// The baseline.
    pub censi: Result<censi::Estimate, censi::Failure>,
}

/// Bench settings.
struct Args {
    seeds: u64,
    secs: f64,
    straight_seeds: u64,
    fit_goal_ms: f64,
}

fn args() -> Args {
    let mut a = Args {
        seeds: 20,
        secs: 150.0,
        straight_seeds: 5,
        fit_goal_ms: 50.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| -> f64 {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} needs a number"))
        };
        match flag.as_str() {
            "--seeds" => a.seeds = value("--seeds") as u64,
            "--secs" => a.secs = value("--secs"),
            "--straight-seeds" => a.straight_seeds = value("--straight-seeds") as u64,
            "--fit-goal-ms" => a.fit_goal_ms = value("--fit-goal-ms"),
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

/// Every sample of the run in one history (no age limit).
fn full_history(run: &Run) -> History {
    let mut h = History::new(model(&nominal()), 1e9);
    run.feed(&mut h);
    h
}

/// The baseline over the whole run.
fn run_censi(h: &History, secs: f64) -> Result<censi::Estimate, censi::Failure> {
    let all = h.window(-1.0, secs + 1.0, 0.0);
    censi::calibrate(&censi::intervals(&all.steps, &all.poses))
}

/// The calibrator's settings at a noise level: the defaults with the level's pose noise, and
/// `significance_sigmas` as given (`None`: the default).
fn config(level: &Level, significance_sigmas: Option<f64>) -> Config {
    let mut c = Config {
        noise: level.noise(),
        ..Config::default()
    };
    if let Some(s) = significance_sigmas {
        c.significance_sigmas = s;
    }
    c
}

/// Our calibrator online, as tests/online.rs runs it (`Run::online`), with each step timed; the times of
/// the steps that fitted and validated (accepted or rejected) go to `step_times`.
fn run_ours(run: &Run, config: Config, step_times: &mut Vec<Duration>) -> RunResult {
    let mut c = Calibrator::new(config, model(&nominal()));
    let mut next = 1.0;
    let mut accepted = 0;
    let mut ours_std = [0.0; 4];
    for e in run.times() {
        if e.0 >= next {
            let t = Instant::now();
            let outcome = c.step();
            let took = t.elapsed();
            match &outcome {
                Outcome::Accepted(a) => {
                    accepted += 1;
                    ours_std = a.std;
                    step_times.push(took);
                }
                Outcome::Rejected { .. } => step_times.push(took),
                _ => {}
            }
            next += 1.0;
        }
        run.push(c.history_mut(), e);
    }
    RunResult {
        ours: c.current(),
        ours_std,
        accepted,
        gate_off: None,
        censi: Err(censi::Failure::NoTranslation),
    }
}

/// The library's `fit` on disjoint windows, from the nominal parameters, timed.
fn time_fits(h: &History, level: &Level, secs: f64, fit_times: &mut Vec<Duration>) {
    let start = model(&nominal());
    let mut t0 = 0.5;
    while t0 + WINDOW_SECS <= secs {
        let w = h.window(t0, t0 + WINDOW_SECS, 0.5);
        t0 += WINDOW_SECS;
        let d = determined(&w, &Observability::default());
        if !(d.fit.radius || d.fit.track_width || d.fit.beta) {
            continue;
        }
        let t = Instant::now();
        let f = fit(&w, &start, d.fit, level.noise());
        let took = t.elapsed();
        std::hint::black_box(f);
        fit_times.push(took);
    }
}

/// Straight driving: how often the baseline's matrix is almost singular, and whether ours kept the track
/// width (nominal) and said why.
fn straight(level: &Level, seeds: u64) -> table::Straight {
    let mut s = table::Straight::default();
    for seed in 1..=seeds {
        let run = simulate(
            true_vehicle(),
            &straight_drive(),
            40.0,
            SURFACE,
            SLAM_HZ,
            noise_pair(level),
            seed,
        );
        let h = full_history(&run);
        match run_censi(&h, 40.0) {
            Err(censi::Failure::AlmostSingular { cond }) => {
                s.censi_singular += 1;
                s.censi_cond.push(cond);
            }
            Err(censi::Failure::NoTranslation) => {}
            Ok(e) => {
                s.censi_cond.push(e.cond);
                s.censi_track_err
                    .push(100.0 * (e.track_width_m / model(&true_vehicle()).track_width_m - 1.0));
            }
        }
        let mut c = Calibrator::new(config(level, None), model(&nominal()));
        let outcomes = run.online(&mut c, 1.0);
        let kept = c.current().track_width_m == model(&nominal()).track_width_m;
        let said = outcomes.iter().any(|(_, o)| match o {
            Outcome::Accepted(a) => a.refused.iter().any(|r| r.contains("straight driving")),
            Outcome::Unchanged { refused, .. } => refused.iter().any(|r| r.contains("straight driving")),
            _ => false,
        });
        if kept && said {
            s.ours_refused += 1;
        }
        s.runs += 1;
    }
    s
}

fn noise_pair(level: &Level) -> (f64, f64) {
    (level.sigma_xy_m, level.sigma_yaw_deg.to_radians())
}

fn progress(total: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} runs {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

fn main() {
    let a = args();
    censi::self_check();
    let began = Instant::now();
    let truth = model(&true_vehicle());
    let mut fit_times = Vec::new();
    let mut step_times = Vec::new();
    let mut levels = Vec::new();
    let bar = progress(a.seeds * LEVELS.len() as u64);
    for level in &LEVELS {
        bar.set_message(level.name());
        let level_began = Instant::now();
        let mut runs = Vec::new();
        let mut bound = None;
        let mut bound_run = None;
        for seed in 1..=a.seeds {
            let run = simulate(
                true_vehicle(),
                &mixed_drive(),
                a.secs,
                SURFACE,
                SLAM_HZ,
                noise_pair(level),
                seed,
            );
            let mut r = run_ours(&run, config(level, None), &mut step_times);
            let off = run_ours(&run, config(level, Some(0.0)), &mut Vec::new());
            r.gate_off = Some((off.ours, off.accepted));
            let h = full_history(&run);
            r.censi = run_censi(&h, a.secs);
            time_fits(&h, level, a.secs, &mut fit_times);
            if seed == 1 {
                // The bound depends on the drive and the noise level, not on the noise draw.
                let t_start = run.poses.get(1).map_or(0.0, |p| p.t_secs);
                let ws = crb::windows(t_start, a.secs, WINDOW_SECS, WINDOW_SECS);
                let noise = level.noise();
                bound = crb::bound(&h, &run.truth, &truth, noise, &ws);
                bound_run = crb::bound(&h, &run.truth, &truth, noise, &[(t_start, a.secs)]);
            }
            runs.push(r);
            bar.inc(1);
        }
        let straight = straight(level, a.straight_seeds);
        bar.suspend(|| {
            eprintln!(
                "{}: {} runs of {} s in {:.1} s",
                level.name(),
                runs.len(),
                a.secs,
                level_began.elapsed().as_secs_f64()
            );
        });
        levels.push(table::LevelResult {
            name: level.name(),
            runs,
            bound,
            bound_run,
            straight,
        });
    }
    bar.finish_and_clear();
    let timing = table::Timing::new(&fit_times, &step_times, a.fit_goal_ms);
    print!(
        "{}",
        table::report(&levels, &truth, &timing, a.secs, began.elapsed())
    );
    if !timing.goal_met() {
        eprintln!(
            "fit time goal missed: the slowest window fit took {:.1} ms (goal < {} ms)",
            timing.fit_max_ms, a.fit_goal_ms
        );
        std::process::exit(1);
    }
}
