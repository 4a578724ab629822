//! The calibrator against a naive windowed baseline on drives neither was tuned on, side by side on the
//! same data.
//!
//! Two designs, each driven with new random drive scripts (`--drives N` each, 20 by default; the scripts,
//! the SLAM noise and nothing else depend on the drive's number):
//! - **centripetal**: 76 s, SLAM at 10 Hz with 2 cm / 0.5 deg noise; straight runs, arcs at several speeds,
//!   turns in place of 4-5 s each way, stops; true wheel radius +3 %, track width -6 %, delay 70 ms,
//!   centripetal factor 0.08 (the simulator's slip model, the one the calibrator's model has).
//! - **lateral**: 89 s, the same noise; the simulator's other slip model, which the calibrator does not
//!   have: the body slides sideways in turns (v_y = -0.05 v omega) and the wheels slip while speeding up or
//!   braking (2 % per m/s^2); true radius -2.5 %, track +4.5 %, delay 55 ms.
//!
//! Both get the nominal parameters (5 cm, 40 cm, no delay, no slip). Ours runs online (a step every second
//! of data, `Config::default()`); its final parameters are compared with the truth, and every step is timed.
//! The goal: radius and track width within 0.1 %, delay within 10 ms, the centripetal factor's truth within
//! 2 sigma of the estimate on at least 19 of 20 drives, a better median than the baseline on every
//! parameter, and every step under 50 ms. Prints markdown tables; exits 1 when a goal is missed.
//!
//! `cargo bench -p lockstep_calibrator --bench heldout [-- --drives 20]`
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "heldout/naive.rs"]
mod naive;

use std::time::{Duration, Instant};

use common::{model, nominal, simulate_setup, Segment, Setup};
use lockstep_calibrator::{Calibrator, Config, History, Outcome};
use lockstep_sim::{DiffDriveParams, SlipModel};

/// A small seeded generator (splitmix64): the drive scripts depend on the drive's number only.
struct Random(u64);

impl Random {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn between(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.next()
    }

    fn sign(&mut self) -> f64 {
        if self.next() < 0.5 {
            -1.0
        } else {
            1.0
        }
    }
}

/// A drive script of `secs`: blocks of a turn in place each way, a straight run, arcs at a slow and a fast
/// speed, with stops between, in an order and at speeds drawn from `seed`.
fn drive(seed: u64, secs: f64) -> Vec<Segment> {
    let mut r = Random(seed.wrapping_mul(7919).wrapping_add(17));
    let mut out = Vec::new();
    let mut total = 0.0;
    while total < secs {
        let mut block: Vec<Segment> = Vec::new();
        let spin = r.between(0.5, 0.9) * r.sign();
        let spin_secs = r.between(4.0, 5.0);
        block.push((0.0, spin, spin_secs));
        block.push((0.0, 0.0, r.between(0.5, 1.0)));
        block.push((0.0, -spin, spin_secs));
        block.push((0.0, 0.0, r.between(0.5, 1.0)));
        block.push((r.between(0.3, 0.6), 0.0, r.between(3.0, 5.0)));
        block.push((0.0, 0.0, r.between(0.5, 1.0)));
        let slow = r.between(0.15, 0.3);
        block.push((slow, r.between(0.4, 0.8) * r.sign(), r.between(3.0, 4.0)));
        let fast = r.between(0.5, 0.7);
        block.push((fast, r.between(0.6, 0.9) * r.sign(), r.between(3.0, 4.0)));
        block.push((0.0, 0.0, r.between(0.5, 1.0)));
        if r.next() < 0.5 {
            block.swap(4, 6);
        }
        for s in block {
            total += s.2;
            out.push(s);
        }
    }
    out
}

/// One design of the benchmark.
struct Design {
    name: &'static str,
    truth: DiffDriveParams,
    slip: SlipModel,
    secs: f64,
    /// Whether the truth has a centripetal factor (the lateral model has none).
    has_beta: bool,
}

fn designs() -> [Design; 2] {
    let n = nominal();
    [
        Design {
            name: "centripetal",
            truth: DiffDriveParams {
                wheel_radius_m: n.wheel_radius_m * 1.03,
                track_width_m: n.track_width_m * 0.94,
                delay_secs: 0.07,
                centripetal_factor: 0.08,
            },
            slip: SlipModel::Centripetal,
            secs: 76.0,
            has_beta: true,
        },
        Design {
            name: "lateral",
            truth: DiffDriveParams {
                wheel_radius_m: n.wheel_radius_m * 0.975,
                track_width_m: n.track_width_m * 1.045,
                delay_secs: 0.055,
                centripetal_factor: 0.0,
            },
            slip: SlipModel::Lateral {
                lateral_slip_s: 0.05,
                longitudinal_slip_s2pm: 0.02,
            },
            secs: 89.0,
            has_beta: false,
        },
    ]
}

/// One drive's errors: radius %, track %, delay ms, beta, beta's sigma, for ours and the baseline.
#[derive(Debug, Clone, Copy)]
struct Errors {
    ours: [f64; 4],
    ours_beta_std: f64,
    naive: [f64; 4],
    /// Ours: the joint fit's own standard deviation of radius and track width (%).
    fit_std: [f64; 2],
    /// Ours: the fitted lateral slip (s).
    lateral_slip_s: f64,
    /// Ours: the RMS normalized residual of the final joint fit (about 1 when the model fits the vehicle).
    rms: f64,
}

fn errors(p: &[f64; 4], truth: &DiffDriveParams) -> [f64; 4] {
    [
        100.0 * (p[0] / truth.wheel_radius_m - 1.0),
        100.0 * (p[1] / truth.track_width_m - 1.0),
        1000.0 * (p[2] - truth.delay_secs),
        p[3] - truth.centripetal_factor,
    ]
}

fn run_drive(d: &Design, seed: u64, step_times: &mut Vec<Duration>) -> Errors {
    let setup = Setup {
        surface: 1,
        slam_hz: 10.0,
        noise: (0.02, 0.5_f64.to_radians()),
        seed,
        slip: d.slip,
        floor_cells: 400,
    };
    let run = simulate_setup(d.truth, None, &drive(seed, d.secs), d.secs, &setup);
    let mut c = Calibrator::new(Config::default(), model(&nominal()));
    let mut next = 1.0;
    for e in run.times() {
        if e.0 >= next {
            let t = Instant::now();
            let outcome = c.step();
            step_times.push(t.elapsed());
            std::hint::black_box(matches!(outcome, Outcome::Accepted(_)));
            next += 1.0;
        }
        run.push(c.history_mut(), e);
    }
    let p = c.current();
    let mut h = History::new(model(&nominal()), 1e9);
    run.feed(&mut h);
    let nv = naive::calibrate(&h, &model(&nominal()), d.secs);
    Errors {
        ours: errors(
            &[
                p.wheel_radius_m,
                p.track_width_m,
                p.delay_secs,
                p.centripetal_factor,
            ],
            &d.truth,
        ),
        ours_beta_std: c.std()[3],
        naive: errors(
            &[
                nv.wheel_radius_m,
                nv.track_width_m,
                nv.delay_secs,
                nv.centripetal_factor,
            ],
            &d.truth,
        ),
        rms: c.estimate().map_or(f64::NAN, |e| e.rms),
        fit_std: c.estimate().map_or([f64::NAN; 2], |e| {
            [
                100.0 * e.std[0] / e.params.wheel_radius_m,
                100.0 * e.std[1] / e.params.track_width_m,
            ]
        }),
        lateral_slip_s: p.lateral_slip_s,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| !x.is_nan());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

fn drives_arg() -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--drives")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

fn main() {
    let drives = drives_arg();
    let began = Instant::now();
    let mut step_times = Vec::new();
    let mut missed = Vec::new();
    println!("## Calibrator vs the naive windowed baseline ({drives} drives per design, new scripts)\n");
    for d in designs() {
        let results: Vec<Errors> = (1..=drives)
            .map(|seed| {
                let e = run_drive(&d, 1000 + seed, &mut step_times);
                eprintln!(
                    "{} drive {seed}: ours radius {:+.3} % track {:+.3} % delay {:+.1} ms beta {:+.3} (sigma {:.3}), rms {:.2}; naive {:+.3} % {:+.3} % {:+.1} ms {:+.3}",
                    d.name, e.ours[0], e.ours[1], e.ours[2], e.ours[3], e.ours_beta_std, e.rms,
                    e.naive[0], e.naive[1], e.naive[2], e.naive[3]
                );
                e
            })
            .collect();
        let abs = |f: &dyn Fn(&Errors) -> f64| median(results.iter().map(|e| f(e).abs()).collect());
        let within =
            |f: &dyn Fn(&Errors) -> f64, limit: f64| results.iter().filter(|e| f(e).abs() <= limit).count();
        println!(
            "### {} ({} s per drive, truth: radius {:.5} m, track {:.5} m, delay {} ms, beta {})\n",
            d.name,
            d.secs,
            d.truth.wheel_radius_m,
            d.truth.track_width_m,
            d.truth.delay_secs * 1000.0,
            if d.has_beta {
                format!("{}", d.truth.centripetal_factor)
            } else {
                "none (lateral slip)".into()
            }
        );
        println!("| | ours: median abs error | ours: drives within goal | naive: median abs error | naive: within goal |");
        println!("|---|---|---|---|---|");
        let n = results.len();
        let rows: [(&str, usize, f64, &str); 3] = [
            ("wheel radius", 0, 0.1, "%"),
            ("track width", 1, 0.1, "%"),
            ("delay", 2, 10.0, "ms"),
        ];
        for (name, k, limit, unit) in rows {
            let ours = abs(&|e: &Errors| e.ours[k]);
            let base = abs(&|e: &Errors| e.naive[k]);
            let ok = within(&|e: &Errors| e.ours[k], limit);
            println!(
                "| {name} | {ours:.3} {unit} | {ok}/{n} within {limit} {unit} | {base:.3} {unit} | {}/{n} |",
                within(&|e: &Errors| e.naive[k], limit)
            );
            if ok + n / 20 < n {
                missed.push(format!("{}: {name} within {limit} {unit} on {ok}/{n}", d.name));
            }
            if ours.is_nan() || ours >= base {
                missed.push(format!(
                    "{}: {name} median {ours:.3} {unit}, not better than the baseline's {base:.3}",
                    d.name
                ));
            }
        }
        let ours_beta = abs(&|e: &Errors| e.ours[3]);
        let base_beta = abs(&|e: &Errors| e.naive[3]);
        if d.has_beta {
            let covered = results
                .iter()
                .filter(|e| e.ours[3].abs() <= 2.0 * e.ours_beta_std)
                .count();
            println!("| beta | {ours_beta:.4} | truth within 2 sigma on {covered}/{n} | {base_beta:.4} | |");
            if covered + n / 20 < n {
                missed.push(format!("{}: beta within 2 sigma on {covered}/{n}", d.name));
            }
            if ours_beta.is_nan() || ours_beta >= base_beta {
                missed.push(format!(
                    "{}: beta median {ours_beta:.4}, not better than the baseline's {base_beta:.4}",
                    d.name
                ));
            }
        } else {
            println!(
                "| beta (no true value: the slip is lateral) | median fitted {:.4} | | median fitted {:.4} | |",
                median(results.iter().map(|e| e.ours[3]).collect()),
                median(results.iter().map(|e| e.naive[3]).collect())
            );
        }
        println!(
            "\nThe joint fit's own standard deviation at the end of a drive (median): radius {:.3} %, track width {:.3} %: the 0.1 % goal is {:.1} and {:.1} of them.",
            median(results.iter().map(|e| e.fit_std[0]).collect()),
            median(results.iter().map(|e| e.fit_std[1]).collect()),
            0.1 / median(results.iter().map(|e| e.fit_std[0]).collect()),
            0.1 / median(results.iter().map(|e| e.fit_std[1]).collect()),
        );
        println!(
            "Ours: median RMS normalized residual of the final joint fit {:.3} (1 when the model fits the vehicle; above it, model mismatch); median fitted lateral slip {:.4} s (truth {}).\n",
            median(results.iter().map(|e| e.rms).collect()),
            median(results.iter().map(|e| e.lateral_slip_s).collect()),
            match d.slip {
                SlipModel::Lateral { lateral_slip_s, .. } => lateral_slip_s,
                SlipModel::Centripetal => 0.0,
            }
        );
    }
    let max_ms = step_times.iter().max().map_or(0.0, |t| t.as_secs_f64() * 1000.0);
    let med_ms = median(step_times.iter().map(|t| t.as_secs_f64() * 1000.0).collect());
    println!(
        "Online step: median {med_ms:.2} ms, max {max_ms:.2} ms over {} steps (goal < 50 ms). Bench took {:.0} s.",
        step_times.len(),
        began.elapsed().as_secs_f64()
    );
    if max_ms >= 50.0 {
        missed.push(format!("an online step took {max_ms:.1} ms"));
    }
    if !missed.is_empty() {
        eprintln!("goals missed:\n  {}", missed.join("\n  "));
        std::process::exit(1);
    }
}
