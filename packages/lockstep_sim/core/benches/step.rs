//! One simulator step (`Simulator::step`, 20 ms of simulated time) on the sample warehouse with the shipped
//! rules: autonomous (one behaviour evaluation, the surface under the vehicle decoded in it, the carried
//! values read back, sensing, physics) and commanded (the per-tick surface decoding, cached while its facts
//! do not change). Each measured step continues one run from the start to the arrival; a run that has
//! arrived is replaced, outside the measured time, so that every step measured is a step of a moving vehicle.
//!
//! `bash scripts/bench/sim_step.sh` runs it and prints the medians; the goal is a median under 50 us.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use lockstep_sim::{Cell, Mode, SimConfig, Simulator};

const DT: f64 = 0.02;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

fn sim(mode: Mode) -> Simulator {
    let rules = [
        repo().join("config/rules/surface.dl"),
        repo().join("config/rules/behaviour.dl"),
    ];
    let config = SimConfig {
        mode,
        start: Some(Cell { column: 2, row: 9 }),
        destination: Some(Cell { column: 17, row: 9 }),
        cmd_timeout_secs: 0.0,
        seed: 42,
        ..SimConfig::default()
    };
    match Simulator::load(repo().join("config/scenes/warehouse.scene"), &rules, config) {
        Ok(sim) => sim,
        Err(e) => panic!("{e}"),
    }
}

/// Times `iters` steps of runs made by `fresh`, replacing a run (untimed) when `done` says it is over.
fn timed_steps(iters: u64, fresh: &dyn Fn() -> Simulator, done: &dyn Fn(&Simulator) -> bool) -> Duration {
    let mut sim = fresh();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        if done(&sim) {
            sim = fresh();
        }
        let start = Instant::now();
        black_box(sim.step(black_box(DT)));
        total += start.elapsed();
    }
    total
}

fn bench_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim_step");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("autonomous", |b| {
        b.iter_custom(|iters| {
            timed_steps(iters, &|| sim(Mode::Autonomous), &|s| {
                s.arrived_at_secs().is_some()
            })
        })
    });
    group.bench_function("commanded", |b| {
        let fresh = || {
            let mut s = sim(Mode::Commanded);
            if let Err(e) = s.set_command(0.8, 0.3) {
                panic!("{e}");
            }
            s
        };
        // Circles on the open floor north of the start, crossing asphalt, concrete and grass.
        b.iter_custom(|iters| timed_steps(iters, &fresh, &|s| s.time_secs() > 20.0))
    });
    group.finish();
}

criterion_group!(benches, bench_step);
criterion_main!(benches);
