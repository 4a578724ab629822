//! Hostile numbers for property tests of request fields (feature `proptest`): the values a message may
//! carry that break arithmetic written for sane ones (NaN, infinities, ±1e308, the extremes, subnormals, ±0,
//! seconds beyond what an `Instant` or `u64` nanoseconds hold), drawn often, next to any bit pattern and a
//! field's usual range. Shared by the request-number tests of every package.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;

/// A fixed-seed runner of `cases` cases that writes no regression files: the same run, the same values.
pub fn config(cases: u32, seed: u64) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The reals that break arithmetic, listed.
pub const EXTREME_F64: [f64; 21] = [
    f64::NAN,
    -f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    1e308,
    -1e308,
    f64::MAX,
    f64::MIN,
    f64::MIN_POSITIVE,
    5e-324,
    -5e-324,
    0.0,
    -0.0,
    1.0,
    -1.0,
    1e9,
    1e12,
    1.8446744073709552e19,
    9.3e18,
    1e20,
    -1e20,
];

/// Any f64: the extremes often, any value, any bit pattern, and `usual` (a field's sane range).
pub fn any_f64_around(usual: impl Strategy<Value = f64> + 'static) -> BoxedStrategy<f64> {
    prop_oneof![
        prop::sample::select(EXTREME_F64.to_vec()),
        proptest::num::f64::ANY,
        proptest::num::u64::ANY.prop_map(f64::from_bits),
        usual,
    ]
    .boxed()
}

/// Any i32: its edges often, any value, and `usual`.
pub fn any_i32_around(usual: impl Strategy<Value = i32> + 'static) -> BoxedStrategy<i32> {
    prop_oneof![
        prop::sample::select(vec![i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX - 1, i32::MAX]),
        any::<i32>(),
        usual,
    ]
    .boxed()
}

/// Any `sec` of a `builtin_interfaces` Time or Duration: its edges often, a few seconds, any value.
pub fn any_time_sec() -> BoxedStrategy<i32> {
    prop_oneof![
        Just(i32::MIN),
        Just(i32::MAX),
        Just(-1),
        Just(0),
        0..3i32,
        any::<i32>()
    ]
    .boxed()
}

/// Any `nanosec` of a `builtin_interfaces` Time or Duration, including the invalid ones (>= 1e9).
pub fn any_nanosec() -> BoxedStrategy<u32> {
    prop_oneof![Just(u32::MAX), Just(999_999_999u32), Just(0u32), any::<u32>()].boxed()
}
