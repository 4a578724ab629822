//! Shared helpers: the repository's config files and a sample-scene simulator.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use lockstep_rules::RuleSet;
use lockstep_sim::{Cell, DiffDriveParams, Mode, Scene, SimConfig, Simulator};

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

/// A 30 x 5 open floor of asphalt (code 1) with a wall (code 0) at column 25.
pub fn floor() -> Scene {
    let mut text = String::from("30 5\n");
    for _ in 0..5 {
        let row: Vec<&str> = (0..30).map(|c| if c == 25 { "0" } else { "1" }).collect();
        text.push_str(&row.join(" "));
        text.push('\n');
    }
    Scene::parse(&text, "floor.scene").unwrap()
}

/// A commanded-mode simulator on [`floor`] at cell (2, 2) facing east, with no command timeout.
pub fn commanded(true_vehicle: DiffDriveParams, nominal_vehicle: DiffDriveParams) -> Simulator {
    commanded_with(SimConfig {
        true_vehicle,
        nominal_vehicle,
        cmd_timeout_secs: 0.0,
        ..SimConfig::default()
    })
}

/// A commanded-mode simulator on [`floor`] at cell (2, 2) facing east, otherwise configured by `config`.
pub fn commanded_with(config: SimConfig) -> Simulator {
    let rules = RuleSet::load(rules_dir().join("surface.dl")).unwrap();
    let config = SimConfig {
        mode: Mode::Commanded,
        start: Some(Cell { column: 2, row: 2 }),
        ..config
    };
    Simulator::new(floor(), rules, config).unwrap()
}

/// Steps for `secs`, asserting that no step warns.
pub fn run(sim: &mut Simulator, secs: f64) {
    let steps = (secs / DT).round() as usize;
    for _ in 0..steps {
        let r = sim.step(DT);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }
}

/// [`commanded`], driven at `(v, w)` for `secs`.
pub fn driven(
    true_vehicle: DiffDriveParams,
    nominal_vehicle: DiffDriveParams,
    (v, w): (f64, f64),
    secs: f64,
) -> Simulator {
    let mut sim = commanded(true_vehicle, nominal_vehicle);
    sim.set_command(v, w).unwrap();
    run(&mut sim, secs);
    sim
}
