//! Interpolation files and joint-limits files as a bad editor or an attacker would write them: random and
//! mutated text, hostile numbers, deep YAML. Parsing returns a value or an error naming the file, never
//! panics, and what parses can be checked and sampled without a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use lockstep_interpolation::validate::check_file;
use lockstep_interpolation::{InterpolationFile, JointLimits};
use proptest::prelude::*;

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("nan".to_owned()),
        Just("inf".to_owned()),
        Just("-inf".to_owned()),
        Just("1e999".to_owned()),
        Just("1e308".to_owned()),
        Just("-1e308".to_owned()),
        Just("1e-300".to_owned()),
        Just("4.9e-324".to_owned()),
        Just("0".to_owned()),
        Just("".to_owned()),
        Just("x".to_owned()),
        any::<f64>().prop_map(|x| x.to_string()),
        (-10.0f64..10.0).prop_map(|x| x.to_string()),
    ]
}

fn interpolation_text() -> impl Strategy<Value = String> {
    (
        number(),
        prop::collection::vec("[a-z]{0,4}", 0..4),
        prop::collection::vec(prop::collection::vec(number(), 0..4), 0..30),
    )
        .prop_map(|(period, joints, rows)| {
            let mut text = format!("# period_s: {period}\n{}\n", joints.join(","));
            for row in rows {
                text += &row.join(",");
                text.push('\n');
            }
            text
        })
}

fn limits_text() -> impl Strategy<Value = String> {
    prop::collection::vec(("[a-z]{1,3}", number(), number(), number(), any::<bool>()), 0..4).prop_map(|joints| {
        let mut text = "joint_limits:\n".to_owned();
        for (name, v, a, j, has_jerk) in joints {
            text += &format!(
                "  {name}: {{max_velocity: {v}, max_acceleration: {a}, has_jerk_limits: {has_jerk}, max_jerk: {j}}}\n"
            );
        }
        text
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn files_and_limits_parse_or_are_refused_naming_the_file(
        file in interpolation_text(),
        limits in limits_text(),
        tau in any::<f64>(),
    ) {
        let parsed = InterpolationFile::parse(Path::new("move.csv"), &file);
        if let Err(e) = &parsed {
            prop_assert!(e.to_string().contains("move.csv"), "{e}");
        }
        let joint_limits = JointLimits::parse("limits.yaml", &limits);
        if let Err(e) = &joint_limits {
            prop_assert!(e.to_string().contains("limits.yaml"), "{e}");
        }
        if let (Ok(file), Ok(limits)) = (parsed, joint_limits) {
            let mut out = Vec::new();
            file.position_at(tau, &mut out);
            let _ = file.duration_secs();
            if let Ok(axes) = limits.for_joints(&file.joints, "limits.yaml") {
                let _ = check_file(&file, &axes);
            }
        }
    }

    #[test]
    fn random_text_never_panics(text in "\\PC{0,400}") {
        let _ = InterpolationFile::parse(Path::new("random.csv"), &text);
        let _ = JointLimits::parse("random.yaml", &text);
    }
}

#[test]
fn limits_nested_ten_thousand_deep_are_an_error_not_a_stack_overflow() {
    let result = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            let deep = format!("joint_limits: {}0{}\n", "[".repeat(10_000), "]".repeat(10_000));
            JointLimits::parse("deep.yaml", &deep)
                .err()
                .map(|e| e.to_string())
        })
        .unwrap()
        .join();
    let message = result.expect("no stack overflow").expect("refused");
    assert!(message.contains("deep.yaml"), "{message}");
}
