//! `lockstep player generate|check` on files in a temporary directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use lockstep_interpolation::cli::{run, PlayerArgs, PlayerCommand};
use lockstep_interpolation::validate::check_file;
use lockstep_interpolation::{InterpolationFile, JointLimits};

const LIMITS: &str = "joint_limits:\n  a: {max_velocity: 1.0, max_acceleration: 2.0, max_jerk: 20.0}\n  b: {max_velocity: 0.5, max_acceleration: 1.0}\n";

#[test]
fn generate_writes_a_file_that_checks_and_bad_limits_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let waypoints = dir.path().join("wp.csv");
    let limits = dir.path().join("limits.yaml");
    let output = dir.path().join("move.csv");
    std::fs::write(&waypoints, "# three waypoints\na,b\n0,0\n0.5,-0.2\n-0.3,0.1\n").unwrap();
    std::fs::write(&limits, LIMITS).unwrap();
    let generate = |limits: &std::path::Path| {
        run(PlayerArgs {
            command: PlayerCommand::Generate {
                waypoints: waypoints.clone(),
                limits: limits.to_owned(),
                period_s: 0.004,
                output: output.clone(),
            },
        })
    };
    generate(&limits).unwrap();
    let file = InterpolationFile::read(&output).unwrap();
    assert_eq!(file.period_secs, 0.004);
    assert_eq!(file.points.last().unwrap(), &vec![-0.3, 0.1]);
    let axis = JointLimits::parse("l", LIMITS)
        .unwrap()
        .for_joints(&file.joints, "l")
        .unwrap();
    check_file(&file, &axis).unwrap();
    run(PlayerArgs {
        command: PlayerCommand::Check {
            file: output.clone(),
            limits: limits.clone(),
            output_period_s: None,
            interpolation: lockstep_interpolation::InterpolationChoice::Auto,
        },
    })
    .unwrap();

    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "joint_limits:\n  a: {max_velocity: 1.0, max_acceleration: 2.0}\n  b: {max_velocity: 0}\n",
    )
    .unwrap();
    let e = format!("{:#}", generate(&bad).unwrap_err());
    assert!(
        e.contains("joint_limits.b.max_velocity: 0 must be a positive finite number"),
        "{e}"
    );
    let missing = dir.path().join("missing.yaml");
    std::fs::write(
        &missing,
        "joint_limits:\n  a: {max_velocity: 1.0, max_acceleration: 2.0}\n",
    )
    .unwrap();
    let e = format!("{:#}", generate(&missing).unwrap_err());
    assert!(e.contains("joint `b` has no limits"), "{e}");
}

/// `lockstep player ...` as the `lockstep` binary parses it.
#[derive(clap::Parser, Debug)]
struct Lockstep {
    #[command(flatten)]
    player: PlayerArgs,
}

/// Parses and runs `lockstep player <args>`: Ok(()) or the error's text; never a panic.
fn lockstep_interpolation(args: &[&str]) -> Result<(), String> {
    use clap::Parser as _;
    let parsed = Lockstep::try_parse_from(std::iter::once("player").chain(args.iter().copied()))
        .map_err(|e| e.to_string())?;
    run(parsed.player).map_err(|e| format!("{e:#}"))
}

/// A short file (10 ms at 1 ms) and its limits, in `dir`.
fn small_file(dir: &std::path::Path) -> (String, String) {
    let file = dir.join("move.csv");
    let limits = dir.join("limits.yaml");
    std::fs::write(
        &file,
        "# period_s: 0.001\na,b\n0,0\n0.0001,0\n0.0002,0\n0.0003,0\n",
    )
    .unwrap();
    std::fs::write(&limits, LIMITS).unwrap();
    (file.display().to_string(), limits.display().to_string())
}

#[test]
fn a_tiny_output_period_is_refused_with_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let (file, limits) = small_file(dir.path());
    for bad in ["1e-300", "0", "-0.002", "NaN", "inf", "5e-324", "1e308", "soon"] {
        let option = format!("--output-period-s={bad}");
        let e = lockstep_interpolation(&["check", &file, "--limits", &limits, &option]).unwrap_err();
        assert!(e.contains("must be finite and in [1e-5, 10] s"), "{bad}: {e}");
        assert!(e.contains("--output-period-s"), "{bad}: {e}");
    }
    lockstep_interpolation(&["check", &file, "--limits", &limits, "--output-period-s", "0.002"]).unwrap();
    // A caller of `run` is checked too (the parser is not the only way in).
    let e = run(PlayerArgs {
        command: PlayerCommand::Check {
            file: file.clone().into(),
            limits: limits.clone().into(),
            output_period_s: Some(1e-300),
            interpolation: lockstep_interpolation::InterpolationChoice::Auto,
        },
    })
    .unwrap_err();
    assert!(format!("{e:#}").contains("[1e-5, 10] s"), "{e:#}");
}

/// Any f64, and the special ones, in the shortest text and in exponent form.
fn any_number() -> impl proptest::strategy::Strategy<Value = f64> {
    use proptest::prelude::*;
    prop_oneof![
        proptest::num::f64::ANY,
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        Just(1e-300),
        1e-6..20.0,
        proptest::num::u64::ANY.prop_map(f64::from_bits),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    /// `player check --output-period-s X` and `player generate --period-s X`: a result or a clear error with
    /// the range, never a panic.
    #[test]
    fn any_period_on_the_command_line_runs_or_is_refused_with_the_range(x in any_number(), exp in proptest::bool::ANY) {
        let dir = tempfile::tempdir().unwrap();
        let (file, limits) = small_file(dir.path());
        let text = if exp { format!("{x:e}") } else { format!("{x}") };
        let inside = lockstep_interpolation::PERIOD_S.contains(x);
        let checked = lockstep_interpolation(&["check", &file, "--limits", &limits, &format!("--output-period-s={text}")]);
        match &checked {
            Ok(()) => proptest::prop_assert!(inside, "{} was taken", text),
            Err(e) => proptest::prop_assert!(
                !inside && e.contains("must be finite and in [1e-5, 10] s"),
                "{}: {}", text, e
            ),
        }
        let waypoints = dir.path().join("wp.csv");
        std::fs::write(&waypoints, "a,b\n0,0\n0.01,0\n").unwrap();
        let out = dir.path().join("out.csv");
        let generated = lockstep_interpolation(&[
            "generate", &waypoints.display().to_string(), "--limits", &limits, &format!("--period-s={text}"),
            "-o", &out.display().to_string(),
        ]);
        if let Err(e) = &generated {
            proptest::prop_assert!(!inside && e.contains("[1e-5, 10] s"), "{}: {}", text, e);
        }
    }
}

/// `check`'s s_max is the one a MovePlay session (the node's `s_max`) computes: the same interpolation
/// (`auto`: cubic under a jerk limit), the same section, the same number.
#[test]
fn check_and_the_session_agree_on_s_max_under_jerk_limits() {
    use lockstep_interpolation::session::{Options, Session};
    use lockstep_interpolation::speed_limit::speed_limit;
    use lockstep_interpolation::{Interpolation, InterpolationChoice};
    let dir = tempfile::tempdir().unwrap();
    let waypoints = dir.path().join("wp.csv");
    let planned = dir.path().join("planned.yaml");
    let limits = dir.path().join("limits.yaml");
    let output = dir.path().join("move.csv");
    std::fs::write(&waypoints, "a,b\n0,0\n0.5,-0.2\n-0.3,0.1\n").unwrap();
    // Generated at half the played limits, so s_max is above 1.
    let half = "joint_limits:\n  a: {max_velocity: 0.5, max_acceleration: 1.0, max_jerk: 10.0}\n  b: {max_velocity: 0.25, max_acceleration: 0.5}\n";
    std::fs::write(&planned, half).unwrap();
    std::fs::write(&limits, LIMITS).unwrap();
    let p = |p: &std::path::Path| p.display().to_string();
    lockstep_interpolation(&[
        "generate",
        &p(&waypoints),
        "--limits",
        &p(&planned),
        "-o",
        &p(&output),
    ])
    .unwrap();
    for choice in ["linear", "cubic", "auto"] {
        lockstep_interpolation(&[
            "check",
            &p(&output),
            "--limits",
            &p(&limits),
            "--interpolation",
            choice,
        ])
        .unwrap();
    }
    let e = lockstep_interpolation(&[
        "check",
        &p(&output),
        "--limits",
        &p(&limits),
        "--interpolation",
        "spline",
    ])
    .unwrap_err();
    assert!(e.contains("linear, cubic, auto"), "{e}");

    let file = Arc::new(InterpolationFile::read(&output).unwrap());
    let axis = JointLimits::parse("l", LIMITS)
        .unwrap()
        .for_joints(&file.joints, "l")
        .unwrap();
    let end = file.points.len() - 1;
    let at = |choice| speed_limit(file.clone(), axis.clone(), 0.002, 0, end, choice);
    let (auto, linear, cubic) = (
        at(InterpolationChoice::Auto),
        at(InterpolationChoice::Linear),
        at(InterpolationChoice::Cubic),
    );
    assert_eq!(auto, cubic);
    assert_eq!(
        (auto.interpolation, linear.interpolation),
        (Interpolation::Cubic, Interpolation::Linear)
    );
    // The two interpolations differ in s_max, so agreeing below is not a coincidence of the file.
    assert!(
        (cubic.s_max - linear.s_max).abs() > 1e-3 && cubic.s_max > 1.0,
        "{cubic:?} {linear:?}"
    );
    let options = Options {
        period_secs: 0.002,
        factor: 1.0,
        align: false,
        tolerance: 1e-4,
        settle_timeout_secs: 1.0,
        interpolation: InterpolationChoice::Auto.resolve(&axis),
    };
    let session = Session::new(file.clone(), axis.clone(), -1, -1, None, options).unwrap();
    assert_eq!(session.s_max(), auto.s_max);
}
