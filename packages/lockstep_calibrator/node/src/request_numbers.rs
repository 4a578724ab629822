//! `~/drive_pattern` goals (DrivePattern: max_radius_m, max_speed_mps, max_turn_rate_radps, timeout_s) with
//! any numbers (NaN, infinities, ±1e308, subnormals, -0.0), through [`crate::drive::pattern_of`], which the
//! action server calls on each goal: refused with a message starting with the field, or a pattern and a
//! timeout that are finite and above zero (0 turn rate: 1 rad/s; 0 timeout: 300 s); never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lockstep_ranges::hostile::{any_f64_around, config};
use proptest::prelude::*;
use r2r::lockstep_interfaces::action::DrivePattern;

use crate::drive::pattern_of;

/// Any f64, the hostile ones often (see `lockstep_ranges::hostile`).
fn any_f64() -> BoxedStrategy<f64> {
    any_f64_around(prop_oneof![-1.0..0.0f64, 0.01..10.0f64])
}

proptest! {
    #![proptest_config(config(256, 0x5EED_0006))]

    #[test]
    fn drive_pattern_goal_numbers_are_refused_naming_the_field_or_finite_and_positive(
        max_radius_m in any_f64(),
        max_speed_mps in any_f64(),
        max_turn_rate_radps in any_f64(),
        timeout_s in any_f64(),
    ) {
        let goal = DrivePattern::Goal { max_radius_m, max_speed_mps, max_turn_rate_radps, timeout_s };
        let positive = |x: f64| x.is_finite() && x > 0.0;
        match pattern_of(&goal) {
            Ok((_, timeout)) => {
                prop_assert!(positive(timeout), "timeout {}", timeout);
                if timeout_s == 0.0 {
                    prop_assert_eq!(timeout, 300.0);
                } else {
                    prop_assert_eq!(timeout.to_bits(), timeout_s.to_bits());
                }
                prop_assert!(positive(max_radius_m) && positive(max_speed_mps));
                prop_assert!(max_turn_rate_radps == 0.0 || positive(max_turn_rate_radps));
            }
            Err(e) => {
                let fields = ["max_radius_m", "max_speed_mps", "max_turn_rate_radps", "timeout_s"];
                prop_assert!(fields.iter().any(|f| e.starts_with(&format!("{f}: "))), "{}", e);
                let bad = [
                    !positive(max_radius_m),
                    !positive(max_speed_mps),
                    !(max_turn_rate_radps == 0.0 || positive(max_turn_rate_radps)),
                    !(timeout_s == 0.0 || positive(timeout_s)),
                ];
                prop_assert!(bad.iter().any(|b| *b), "refused a good goal: {}", e);
            }
        }
    }
}
