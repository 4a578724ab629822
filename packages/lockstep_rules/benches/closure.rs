//! Transitive closure of a seeded random graph (10,000 edges over 1,000 nodes: one million `path` tuples).
//!
//! `scripts/bench/rules.sh` sets `LOCKSTEP_RULES_TC_FACTS` to the `edge(A,B).` file it also feeds to clingo,
//! so both engines solve the same instance; without it the bench generates its own graph of the same size.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use lockstep_rules::{Engine, Facts, RuleSet};

const PROGRAM: &str = "path(X, Y) :- edge(X, Y).\npath(X, Z) :- path(X, Y), edge(Y, Z).\n";

/// Distinct random edges from a fixed-seed xorshift generator (no dependency on a RNG crate's stream).
fn random_edges(nodes: u64, edges: usize, seed: u64) -> Vec<(i64, i64)> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < edges {
        seen.insert(((next() % nodes) as i64, (next() % nodes) as i64));
    }
    seen.into_iter().collect()
}

fn edges_from_env() -> Option<Vec<(i64, i64)>> {
    let path = std::env::var_os("LOCKSTEP_RULES_TC_FACTS")?;
    let text = std::fs::read_to_string(&path).ok()?;
    let rules = RuleSet::parse(&text, &path.to_string_lossy()).ok()?;
    let mut engine = Engine::new(rules);
    engine.evaluate().ok()?;
    let edges = engine.query("edge").ok()?;
    Some(
        edges
            .iter()
            .filter_map(|t| Some((t.first()?.as_i64()?, t.get(1)?.as_i64()?)))
            .collect(),
    )
}

fn bench_closure(c: &mut Criterion) {
    let edges = edges_from_env().unwrap_or_else(|| random_edges(1_000, 10_000, 42));
    let mut facts = Facts::new();
    for (a, b) in &edges {
        facts.add("edge", [*a, *b]);
    }
    let rules = match RuleSet::parse(PROGRAM, "closure.dl") {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    let mut engine = Engine::new(rules);
    let mut group = c.benchmark_group("closure");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15))
        .warm_up_time(Duration::from_secs(1));
    let mut paths = 0;
    group.bench_function(format!("{}_edges", edges.len()), |b| {
        b.iter(|| {
            engine.tick(black_box(&facts)).ok();
            paths = engine.count("path").unwrap_or(0);
        })
    });
    group.finish();
    eprintln!("closure: {} edges, {paths} path tuples", edges.len());
}

criterion_group!(benches, bench_closure);
criterion_main!(benches);
