//! `lockstep player generate|check` on files in a temporary directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lockstep_player::cli::{run, PlayerArgs, PlayerCommand};
use lockstep_player::validate::check_file;
use lockstep_player::{InterpolationFile, JointLimits};

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
