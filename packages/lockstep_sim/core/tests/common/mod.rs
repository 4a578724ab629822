//! Shared helpers: the repository's config files and a sample-scene simulator.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use lockstep_sim::{Cell, SimConfig, Simulator};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

pub fn rules_dir() -> PathBuf {
    repo().join("config/rules")
}

pub fn rule_files() -> Vec<PathBuf> {
    vec![rules_dir().join("surface.dl"), rules_dir().join("behaviour.dl")]
}

pub fn sample_scene() -> PathBuf {
    repo().join("config/scenes/warehouse.scene")
}

/// The start and destination config/sim.yaml uses.
pub fn sample_config() -> SimConfig {
    SimConfig {
        start: Some(Cell { column: 2, row: 9 }),
        start_yaw_rad: 0.0,
        destination: Some(Cell { column: 17, row: 9 }),
        sensor_range_m: 10.0,
        seed: 7,
        ..SimConfig::default()
    }
}

pub fn sample_sim() -> Simulator {
    Simulator::load(sample_scene(), &rule_files(), sample_config()).unwrap()
}

pub const DT: f64 = 0.02;

/// Steps until the state is `arrived` or `limit_secs` pass; returns the arrival time.
pub fn run_until_arrived(sim: &mut Simulator, limit_secs: f64) -> Option<f64> {
    while sim.time_secs() < limit_secs {
        let report = sim.step(DT);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        if sim.state() == "arrived" {
            return Some(sim.time_secs());
        }
    }
    None
}
