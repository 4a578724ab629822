//! Same seed, same everything; different seed, different SLAM noise but the same true trajectory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use lockstep_sim::{Pose2D, Simulator};

type Run = (Vec<Pose2D>, Vec<Pose2D>, Vec<Pose2D>, Vec<f64>);

/// Truth and odometry every step, SLAM samples and their distance to the truth.
fn record(mut sim: Simulator, secs: f64) -> Run {
    let (mut truth, mut odom, mut slam, mut errors) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    while sim.time_secs() < secs {
        let r = sim.step(DT);
        truth.push(sim.pose());
        odom.push(sim.odometry().pose);
        if r.slam_sample {
            let sample = sim.slam().unwrap().pose;
            errors.push(sample.distance_to(&sim.pose()));
            slam.push(sample);
        }
    }
    (truth, odom, slam, errors)
}

#[test]
fn same_seed_gives_an_identical_trajectory() {
    let a = record(sample_sim(), 40.0);
    let b = record(sample_sim(), 40.0);
    assert_eq!(a, b);
    assert!(a.2.len() >= 190, "5 Hz of SLAM samples");
}

#[test]
fn the_seed_only_changes_the_slam_noise() {
    let a = record(sample_sim(), 10.0);
    let mut config = sample_config();
    config.seed = 8;
    let b = record(
        Simulator::load(sample_scene(), &rule_files(), config).unwrap(),
        10.0,
    );
    assert_eq!(a.0, b.0);
    assert_eq!(a.1, b.1);
    assert_ne!(a.2, b.2);
    let error = a.3.iter().copied().fold(0.0, f64::max);
    assert!(error > 0.0 && error < 0.5, "{error}");
}
