//! Same generation on a seeded random tree, by this engine (rules loaded at run time) and by `ascent`
//! (sequential `ascent!`), on the same tree in the same run.
//!
//! The tree is a random recursive tree: node 0 is the root and node `c` (1..n) hangs under a node drawn
//! uniformly from `0..c`. Two distinct nodes are of the same generation when they are at the same depth, so
//! with 4,000 nodes `sg` has about two million tuples: 2,000,652 for the tree `scripts/bench/rules.sh`
//! draws with Python's `random.Random(42)` (depth 15, at most 705 nodes on a level), 1,904,992 for the one
//! generated here (depth 16, at most 671 nodes on a level).
//!
//! `scripts/bench/rules.sh` sets `LOCKSTEP_RULES_SG_FACTS` to the `parent(Child,Parent).` file it also feeds
//! to clingo; without it the bench generates its own tree of `LOCKSTEP_RULES_SG_NODES` nodes (default 4000)
//! with the same shape. Both engines must derive the same number of `sg` tuples, or the bench panics.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use lockstep_rules::Engine;

mod common;

const PROGRAM: &str = "sg(X, Y) :- parent(X, P), parent(Y, P), X != Y.\n\
                       sg(X, Y) :- parent(X, A), sg(A, B), parent(Y, B).\n";

ascent::ascent! {
    // The same program as `PROGRAM`, compiled.
    struct SameGeneration;
    relation parent(i64, i64);
    relation sg(i64, i64);
    sg(x, y) <-- parent(x, p), parent(y, p), if x != y;
    sg(x, y) <-- parent(x, a), sg(a, b), parent(y, b);
}

/// `(child, parent)` of a random recursive tree of `nodes` nodes, from a fixed-seed xorshift generator.
fn random_tree(nodes: u64, seed: u64) -> Vec<(i64, i64)> {
    let mut next = common::xorshift(seed);
    (1..nodes)
        .map(|child| (child as i64, (next() % child) as i64))
        .collect()
}

/// Evaluates the compiled program from scratch over `parent`; the number of `sg` tuples.
fn ascent_sg(parent: &[(i64, i64)]) -> usize {
    let mut program = SameGeneration {
        parent: parent.to_vec(),
        ..Default::default()
    };
    program.run();
    program.sg.len()
}

fn bench_same_generation(c: &mut Criterion) {
    let parent = common::pairs_from_env("LOCKSTEP_RULES_SG_FACTS", "parent").unwrap_or_else(|| {
        let nodes = std::env::var("LOCKSTEP_RULES_SG_NODES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(4_000);
        random_tree(nodes, 42)
    });
    let facts = common::facts("parent", &parent);
    let mut engine = Engine::new(common::rules(PROGRAM, "same_generation.dl"));
    let mut group = common::group(c, "same_generation");
    let mut ours = 0;
    group.bench_function("ours", |b| {
        b.iter(|| {
            engine.tick(black_box(&facts)).ok();
            ours = engine.count("sg").unwrap_or(0);
        })
    });
    let mut theirs = 0;
    group.bench_function("ascent", |b| b.iter(|| theirs = ascent_sg(black_box(&parent))));
    group.finish();
    eprintln!(
        "same_generation: {} parent facts, {ours} sg tuples (ascent: {theirs})",
        parent.len()
    );
    // A filter (`cargo bench -- ascent`) may have run only one of them.
    if ours > 0 && theirs > 0 {
        assert_eq!(
            ours, theirs,
            "same_generation: ours and ascent disagree on the number of sg tuples"
        );
    }
}

criterion_group!(benches, bench_same_generation);
criterion_main!(benches);
