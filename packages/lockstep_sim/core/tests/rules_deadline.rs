//! A rule that never reaches a fixpoint (`runaway(N + 1) :- runaway(N).`): each evaluation stops at
//! `rules_max_seconds`, the step goes on without the rules (the vehicle holds still) with a warning naming
//! the rule files and the limit, and the simulator keeps stepping.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Instant;

use common::*;
use lockstep_sim::{SimConfig, Simulator, DEFAULT_RULES_MAX_SECONDS};

#[test]
fn a_rule_without_a_fixpoint_stops_at_the_limit_and_the_simulator_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let runaway = dir.path().join("runaway.dl");
    // Only while driving (the behaviour asserts `state`): decoding the scene at start still works.
    std::fs::write(
        &runaway,
        "runaway(0) :- state(_).\nrunaway(N + 1) :- runaway(N).\n",
    )
    .unwrap();
    let mut files = rule_files();
    files.push(runaway.clone());
    let config = SimConfig {
        rules_max_seconds: 0.2,
        ..sample_config()
    };
    let mut sim = Simulator::load(sample_scene(), &files, config).unwrap();
    let start = sim.pose();
    for _ in 0..3 {
        let began = Instant::now();
        let report = sim.step(DT);
        let took = began.elapsed().as_secs_f64();
        assert!(report.over_time, "{:?}", report.warnings);
        assert!((0.2..10.0).contains(&took), "a step took {took} s");
        let warning = report.warnings.join("\n");
        assert!(
            warning.contains(&runaway.display().to_string())
                && warning.contains("time limit of 0.2 s (rules_max_seconds)")
                && warning.contains("holding still"),
            "{warning}"
        );
    }
    assert!((sim.time_secs() - 3.0 * DT).abs() < 1e-9, "the steps ran");
    assert_eq!(sim.pose(), start, "the vehicle held still");
}

#[test]
fn rules_that_reach_a_fixpoint_are_not_stopped() {
    assert_eq!(SimConfig::default().rules_max_seconds, DEFAULT_RULES_MAX_SECONDS);
    let mut sim = sample_sim();
    for _ in 0..50 {
        let report = sim.step(DT);
        assert!(
            !report.over_time && report.warnings.is_empty(),
            "{:?}",
            report.warnings
        );
    }
}
