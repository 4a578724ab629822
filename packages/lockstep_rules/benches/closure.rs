//! Transitive closure of a seeded random graph (10,000 edges over 1,000 nodes: one million `path` tuples),
//! by this engine (rules loaded at run time) and by `ascent` (sequential `ascent!`: the same rules compiled
//! into specialised Rust), on the same edges in the same run.
//!
//! `scripts/bench/rules.sh` sets `LOCKSTEP_RULES_TC_FACTS` to the `edge(A,B).` file it also feeds to clingo,
//! so every engine solves the same instance; without it the bench generates its own graph of the same size.
//! Both engines must derive the same number of `path` tuples, or the bench panics.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use lockstep_rules::Engine;

mod common;

const PROGRAM: &str = "path(X, Y) :- edge(X, Y).\npath(X, Z) :- path(X, Y), edge(Y, Z).\n";

ascent::ascent! {
    // The same program as `PROGRAM`, compiled.
    struct Closure;
    relation edge(i64, i64);
    relation path(i64, i64);
    path(x, y) <-- edge(x, y);
    path(x, z) <-- path(x, y), edge(y, z);
}

/// Distinct random edges from a fixed-seed xorshift generator.
fn random_edges(nodes: u64, edges: usize, seed: u64) -> Vec<(i64, i64)> {
    let mut next = common::xorshift(seed);
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < edges {
        seen.insert(((next() % nodes) as i64, (next() % nodes) as i64));
    }
    seen.into_iter().collect()
}

/// Evaluates the compiled program from scratch over `edges`; the number of `path` tuples.
fn ascent_paths(edges: &[(i64, i64)]) -> usize {
    let mut program = Closure {
        edge: edges.to_vec(),
        ..Default::default()
    };
    program.run();
    program.path.len()
}

fn bench_closure(c: &mut Criterion) {
    let edges = common::pairs_from_env("LOCKSTEP_RULES_TC_FACTS", "edge")
        .unwrap_or_else(|| random_edges(1_000, 10_000, 42));
    let facts = common::facts("edge", &edges);
    let mut engine = Engine::new(common::rules(PROGRAM, "closure.dl"));
    let mut group = common::group(c, "closure");
    let mut ours = 0;
    group.bench_function("ours", |b| {
        b.iter(|| {
            engine.tick(black_box(&facts)).ok();
            ours = engine.count("path").unwrap_or(0);
        })
    });
    let mut theirs = 0;
    group.bench_function("ascent", |b| b.iter(|| theirs = ascent_paths(black_box(&edges))));
    group.finish();
    eprintln!(
        "closure: {} edges, {ours} path tuples (ascent: {theirs})",
        edges.len()
    );
    // A filter (`cargo bench -- ascent`) may have run only one of them.
    if ours > 0 && theirs > 0 {
        assert_eq!(
            ours, theirs,
            "closure: ours and ascent disagree on the number of path tuples"
        );
    }
}

criterion_group!(benches, bench_closure);
criterion_main!(benches);
