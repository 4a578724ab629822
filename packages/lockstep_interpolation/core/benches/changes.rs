//! 100 random pause / resume / speed changes on one generated file: the largest |v| and |a| per axis as a
//! fraction of its limit, ours (ramps planned and checked by simulation) against the naive baseline (s jumps
//! to the requested factor at the next tick, like the joint_trajectory_controller's speed scaling), same
//! file, same requests at the same ticks, same output period. Also the time one plan takes. Run twice:
//! without jerk limits (linear interpolation), then with jerk limits (the cubic spline, for both,
//! and |j| in the table).
//!
//!   cargo bench -p lockstep_interpolation --bench changes [-- --requests N --seed S]
#![allow(clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Instant;

use lockstep_interpolation::generate::generate;
use lockstep_interpolation::speed_limit::{self, InterpolationChoice};
use lockstep_interpolation::{plan, AxisLimits, Phase};
use rand::{Rng, SeedableRng};

const PERIOD: f64 = 0.002;

enum Request {
    Pause,
    Resume(f64),
    Speed(f64),
}

fn main() {
    let requests = common::arg("--requests", 100) as usize;
    let seed = common::arg("--seed", 7);
    let over = run(requests, seed, false) | run(requests, seed, true);
    if over {
        eprintln!("changes: ours went over a limit");
        std::process::exit(1);
    }
}

/// One comparison; true if ours went over a limit.
fn run(requests: usize, seed: u64, jerk: bool) -> bool {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let joints: Vec<String> = (1..=6).map(|i| format!("joint_{i}")).collect();
    let limits: Vec<AxisLimits> = (0..6)
        .map(|i| AxisLimits {
            max_velocity: 1.0 + 0.25 * i as f64,
            max_acceleration: 3.0 + i as f64,
            max_jerk: jerk.then_some(30.0 + 10.0 * i as f64),
        })
        .collect();
    let waypoints: Vec<Vec<f64>> = (0..12)
        .map(|_| (0..6).map(|_| rng.gen_range(-1.5..1.5)).collect())
        .collect();
    // Planned at 70 % of the limits, so speeding up is possible.
    let planned: Vec<AxisLimits> = limits
        .iter()
        .map(|l| AxisLimits {
            max_velocity: 0.7 * l.max_velocity,
            max_acceleration: 0.7 * l.max_acceleration,
            max_jerk: l.max_jerk.map(|j| 0.7 * j),
        })
        .collect();
    let file = Arc::new(generate(&joints, &waypoints, &planned, PERIOD).expect("generate"));
    let end = file.points.len() - 1;
    // As the node plays it (`interpolation:=auto`): the cubic spline where a joint has a jerk limit.
    let interpolation = InterpolationChoice::Auto.resolve(&limits);
    let fresh = || speed_limit::section(file.clone(), limits.clone(), PERIOD, 0, end, interpolation);
    let s_max = speed_limit::s_max(&fresh());
    let schedule: Vec<(u32, Request)> = (0..requests)
        .map(|_| {
            let ticks = rng.gen_range(20..400);
            let request = match rng.gen_range(0..3) {
                0 => Request::Pause,
                1 => Request::Resume(rng.gen_range(0.3..s_max)),
                _ => Request::Speed(rng.gen_range(0.3..s_max)),
            };
            (ticks, request)
        })
        .collect();

    let mut ours = fresh();
    plan::start(&mut ours, 1.0, s_max).expect("start");
    let mut naive = fresh();
    naive.set_speed_instantly(1.0);
    let (mut accepted, mut refused) = (0, 0);
    let mut plan_times = Vec::new();
    for (ticks, request) in &schedule {
        for _ in 0..*ticks {
            ours.step();
            naive.step();
        }
        let started = Instant::now();
        let outcome = match request {
            Request::Pause => plan::pause(&mut ours, None),
            Request::Resume(f) => plan::resume(&mut ours, None, Some(*f), s_max),
            Request::Speed(f) => plan::set_speed(&mut ours, *f, s_max),
        };
        plan_times.push(started.elapsed().as_secs_f64() * 1e3);
        match outcome {
            Ok(_) => accepted += 1,
            Err(_) => refused += 1,
        }
        // The baseline applies the same request at once (a resume or speed change while paused resumes).
        naive.set_speed_instantly(match request {
            Request::Pause => 0.0,
            Request::Resume(f) | Request::Speed(f) => *f,
        });
    }
    while ours.phase() != Phase::Done || naive.phase() != Phase::Done {
        if ours.phase() == Phase::Paused {
            let _ = plan::resume(&mut ours, None, Some(1.0), s_max);
        }
        if naive.phase() == Phase::Paused || naive.speed() == 0.0 {
            naive.set_speed_instantly(1.0);
        }
        ours.step();
        naive.step();
    }
    plan_times.sort_by(f64::total_cmp);
    let median = plan_times[plan_times.len() / 2];
    let max = plan_times[plan_times.len() - 1];

    let title = if jerk {
        "with jerk limits (cubic spline between points, for both)"
    } else {
        "without jerk limits (linear interpolation)"
    };
    println!("### Player: {requests} random pause / resume / speed changes (seed {seed}), {title}\n");
    println!(
        "File: 6 joints through 12 random waypoints, generated at 70 % of the limits, {} points at {} ms \
         ({:.1} s); output period {} ms; s_max {:.3}. Requests every 20-400 ticks: pause, resume at a random \
         factor, or set_speed to a random factor in [0.3, s_max). Ours: {accepted} accepted, {refused} refused \
         (a resume while playing, a pause while paused). Peak |v|, |a| (and |j|) per joint as a fraction of \
         its limit (finite differences at the output period); alarms = ticks over any limit.\n",
        file.points.len(),
        PERIOD * 1e3,
        file.duration_secs(),
        PERIOD * 1e3,
        s_max
    );
    let slots = if jerk { 3 } else { 2 };
    let over = common::print_peaks(&joints, &ours, &naive, slots);
    println!(
        "Planning one change (release build, simulation search included): median {median:.2} ms, max {max:.2} ms \
         over {} requests.\n",
        plan_times.len()
    );
    over
}
