//! Shared by the tests: the shipped example configuration and goal parameters.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use lockstep_tasks::config::{Actuator, Child, Template};
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

/// A configuration with `fanouts.len() + 1` levels; each subtask at level i has `fanouts[i]` children, run
/// in parallel where `parallel[i]` is true. Its task type is `t0`.
pub fn config(fanouts: &[usize], parallel: &[bool]) -> Config {
    let levels: Vec<String> = (0..=fanouts.len()).map(|i| format!("l{i}")).collect();
    let mut templates = BTreeMap::new();
    for (i, level) in levels.iter().enumerate() {
        let last = i == fanouts.len();
        templates.insert(
            format!("t{i}"),
            Template {
                level: level.clone(),
                parameters: BTreeMap::new(),
                required: Vec::new(),
                children: if last {
                    Vec::new()
                } else {
                    (0..fanouts[i])
                        .map(|_| Child {
                            template: format!("t{}", i + 1),
                            parameters: BTreeMap::new(),
                            attributes: Vec::new(),
                        })
                        .collect()
                },
                parallel: parallel.get(i).copied().unwrap_or(false),
                attributes: Vec::new(),
                actuator: last.then(|| "a".to_owned()),
            },
        );
    }
    let actuators = BTreeMap::from([(
        "a".to_owned(),
        Actuator {
            server: "/a".into(),
            action_type: "x/action/A".into(),
            goal: BTreeMap::new(),
            blocked_by: None,
        },
    )]);
    Config {
        levels,
        parameters: BTreeMap::new(),
        actuators,
        templates,
    }
}
