//! Shared by the closure and same-generation benches: the fact files `scripts/bench/rules.sh` writes, the
//! seeded generators used without them, and criterion's settings for the ours-vs-ascent groups.

use std::time::Duration;

use criterion::{BenchmarkGroup, Criterion};
use lockstep_rules::{Engine, Facts, RuleSet};

/// A fixed-seed xorshift64 stream (no dependency on a RNG crate's stream).
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// The binary facts of `predicate` in the file named by the environment variable `var` (integers only),
/// `None` when the variable is unset. A file that is set but unusable stops the bench: silently falling back
/// to generated data would compare engines on different instances.
pub fn pairs_from_env(var: &str, predicate: &str) -> Option<Vec<(i64, i64)>> {
    let path = std::env::var_os(var)?;
    let name = path.to_string_lossy().into_owned();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{var}={name}: {e}"));
    let rules = RuleSet::parse(&text, &name).unwrap_or_else(|e| panic!("{e}"));
    let mut engine = Engine::new(rules);
    engine.evaluate().unwrap_or_else(|e| panic!("{e}"));
    let mut pairs = Vec::new();
    engine
        .query_into(predicate, |t| match (t[0].as_i64(), t[1].as_i64()) {
            (Some(a), Some(b)) => pairs.push((a, b)),
            _ => panic!("{name}: {predicate} fact with a non-integer argument"),
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    pairs.sort_unstable();
    Some(pairs)
}

/// `predicate(a, b)` for every pair.
pub fn facts(predicate: &str, pairs: &[(i64, i64)]) -> Facts {
    let mut facts = Facts::new();
    for (a, b) in pairs {
        facts.add(predicate, [*a, *b]);
    }
    facts
}

/// The rules of a bench, which are valid by construction.
pub fn rules(text: &str, origin: &str) -> RuleSet {
    RuleSet::parse(text, origin).unwrap_or_else(|e| panic!("{e}"))
}

/// A group of long-running samples: ten of them in about 15 s.
pub fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15))
        .warm_up_time(Duration::from_secs(1));
    group
}
