//! One simulator tick: assert the per-tick facts, evaluate `config/rules/surface.dl` +
//! `config/rules/behaviour.dl`, read `next_state` and `drive`. The goal is a median under 50 µs.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use lockstep_rules::{Engine, Facts, RuleSet};

fn tick_facts(front_m: f64, state: &str) -> Facts {
    let mut f = Facts::new();
    f.add("state", [state])
        .add("free_front", [front_m])
        .add("free_left", [1.4])
        .add("free_right", [0.9])
        .add("min_step", [0.5])
        .add("heading_error", [0.35])
        .add("backups", [0])
        .add("typecode", [3]);
    f
}

fn bench_tick(c: &mut Criterion) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/rules");
    let rules = match RuleSet::load_all(&[dir.join("surface.dl"), dir.join("behaviour.dl")]) {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    let mut engine = Engine::new(rules);
    // Alternate between two situations so that a tick never just repeats the previous one's work.
    let facts = [tick_facts(3.0, "explore"), tick_facts(0.3, "obstacle_ahead")];
    let mut i = 0;
    c.bench_function("behaviour_tick", |b| {
        b.iter(|| {
            i ^= 1;
            engine.tick(black_box(&facts[i])).ok();
            let next = engine.query("next_state").ok();
            let drive = engine.query("drive").ok();
            black_box((next, drive))
        })
    });
}

criterion_group!(benches, bench_tick);
criterion_main!(benches);
