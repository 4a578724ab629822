//! Shared by the tests: the shipped example configuration and goal parameters.
#![allow(dead_code)]

use std::path::PathBuf;

use lockstep_tasks::{Config, Params};

/// `config/tasks/warehouse.yaml` at the repository's top.
pub fn warehouse_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../config/tasks/warehouse.yaml")
}

pub fn warehouse() -> Config {
    Config::read(&warehouse_path()).unwrap_or_else(|e| panic!("{e}"))
}

pub fn warehouse_text() -> String {
    std::fs::read_to_string(warehouse_path()).unwrap_or_else(|e| panic!("{e}"))
}

/// Goal parameters from JSON.
pub fn goal(json: serde_json::Value) -> Params {
    serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"))
}
