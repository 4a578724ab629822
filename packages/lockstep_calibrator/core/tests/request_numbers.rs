#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The calibrator's requests with any numbers (NaN, infinities, ±1e308, subnormals, -0.0): refused with a
//! message naming the field, or an answer whose numbers are all finite and in range; never a panic (debug
//! build: an overflow panics too).
//!
//! - `~/predict` (PredictMotion: start, command_v_mps[], command_w_radps[], command_duration_s[],
//!   sample_period_s): `commands_from_arrays` then `predict_commands`, as the node's `predict` calls them.
//! - `~/drive_pattern` (DrivePattern: max_radius_m, max_speed_mps, max_turn_rate_radps): `Pattern::new`
//!   and the commands it gives (timeout_s and the defaults for 0 are the node's `pattern_of`, tested there).

use lockstep_calibrator::{commands_from_arrays, predict_commands, ModelParams, Pattern, Pose};
use lockstep_ranges::hostile::{any_f64_around, config};
use proptest::prelude::*;

/// Any f64, the hostile ones often (see `lockstep_ranges::hostile`).
fn any_f64() -> BoxedStrategy<f64> {
    any_f64_around(-5.0..5.0f64)
}

/// A command value: mostly one a client sends, else any f64.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![3 => -2.0..2.0f64, 1 => any_f64()]
}

proptest! {
    #![proptest_config(config(256, 0x5EED_0005))]

    #[test]
    fn predict_motion_numbers_are_refused_naming_the_field_or_predicted_finite(
        start in (value(), value(), value()),
        v in prop::collection::vec(value(), 0..4),
        w in prop::collection::vec(value(), 0..4),
        durations in prop::collection::vec(prop_oneof![3 => 0.0..3.0f64, 1 => any_f64()], 0..4),
        sample_period_s in prop_oneof![Just(0.0), 0.01..1.0f64, any_f64()],
        same_lengths in any::<bool>(),
    ) {
        let n = v.len().min(w.len()).min(durations.len());
        let (v, w, durations) = if same_lengths {
            (&v[..n], &w[..n], &durations[..n])
        } else {
            (&v[..], &w[..], &durations[..])
        };
        let start = Pose { x_m: start.0, y_m: start.1, yaw_rad: start.2 };
        let nominal = ModelParams::default();
        let actual = ModelParams { delay_secs: 0.1, ..nominal };
        let predicted = commands_from_arrays(v, w, durations)
            .and_then(|commands| predict_commands(&nominal, &actual, start, &commands, sample_period_s));
        match predicted {
            Ok(samples) => {
                prop_assert!(!samples.is_empty());
                let mut last = -1.0;
                for (t, p) in &samples {
                    prop_assert!(t.is_finite() && *t > last, "time {} after {}", t, last);
                    last = *t;
                    prop_assert!(p.x_m.is_finite() && p.y_m.is_finite() && p.yaw_rad.is_finite(), "{:?}", p);
                }
                let total: f64 = durations.iter().sum::<f64>() + actual.delay_secs;
                prop_assert!((last - total).abs() <= 1e-6, "ends at {} of {}", last, total);
            }
            Err(e) => {
                let e = e.to_string();
                let fields = ["command_v_mps", "command_w_radps", "command_duration_s", "sample_period_s", "start."];
                prop_assert!(fields.iter().any(|f| e.contains(f)), "{}", e);
            }
        }
    }

    #[test]
    fn drive_pattern_numbers_are_refused_naming_the_field_or_give_finite_commands_within_them(
        max_radius_m in prop_oneof![2 => 0.1..10.0f64, 1 => any_f64()],
        max_speed_mps in prop_oneof![2 => 0.01..2.0f64, 1 => any_f64()],
        max_turn_rate_radps in prop_oneof![2 => 0.01..3.0f64, 1 => any_f64()],
    ) {
        match Pattern::new(max_radius_m, max_speed_mps, max_turn_rate_radps) {
            Ok(mut pattern) => {
                for x in [max_radius_m, max_speed_mps, max_turn_rate_radps] {
                    prop_assert!(x.is_finite() && x > 0.0, "{} taken", x);
                }
                // A unicycle driven by the commands at 20 Hz for a minute.
                let mut pose = Pose::default();
                for i in 0..1200 {
                    let (v, w, phase) = pattern.command(f64::from(i) * 0.05, pose);
                    prop_assert!(v.is_finite() && (0.0..=max_speed_mps).contains(&v), "v {} in {}", v, phase);
                    prop_assert!(w.is_finite() && w.abs() <= max_turn_rate_radps, "w {} in {}", w, phase);
                    let (v, w) = (v.min(2.0), w.clamp(-3.0, 3.0));
                    pose = Pose {
                        x_m: pose.x_m + v * 0.05 * pose.yaw_rad.cos(),
                        y_m: pose.y_m + v * 0.05 * pose.yaw_rad.sin(),
                        yaw_rad: pose.yaw_rad + w * 0.05,
                    };
                }
            }
            Err(e) => {
                let (field, value) = (e.field, e.value);
                let given = match field {
                    "max_radius_m" => max_radius_m,
                    "max_speed_mps" => max_speed_mps,
                    "max_turn_rate_radps" => max_turn_rate_radps,
                    other => return Err(TestCaseError::fail(format!("unknown field {other}"))),
                };
                prop_assert!(value.to_bits() == given.to_bits() && !(given.is_finite() && given > 0.0));
                prop_assert!(e.to_string().starts_with(field), "{}", e);
            }
        }
    }
}
