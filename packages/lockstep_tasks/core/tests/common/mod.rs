//! Shared by the tests: the shipped example configuration and goal parameters.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use lockstep_tasks::config::{Actuator, Child, Template};
use lockstep_tasks::{Config, Params};

/// A warehouse task with its routes written into the templates (`tests/data/fixed_routes.yaml`): the
/// fixture whose line numbers the error tests quote.
pub fn warehouse_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fixed_routes.yaml")
}

/// `config/tasks/warehouse.yaml` and its station map at the repository's top.
pub fn shipped_paths() -> (PathBuf, PathBuf) {
    let top = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../config/tasks");
    (top.join("warehouse.yaml"), top.join("warehouse_map.yaml"))
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
                            ..Child::default()
                        })
                        .collect()
                },
                parallel: parallel.get(i).copied().unwrap_or(false),
                actuator: last.then(|| "a".to_owned()),
                ..Template::default()
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
            pause: None,
        },
    )]);
    Config {
        levels,
        parameters: BTreeMap::new(),
        actuators,
        templates,
    }
}

/// A small task for recovery tests: `job` is two `pair`s, each a pick (arm) then a drive (nav); `detour` is
/// a drive on another route, there to be a fallback.
pub const SMALL: &str = "\
levels: [task, group, action]
actuators:
  arm: {server: /arm, type: x/action/Arm}
  nav: {server: /nav, type: x/action/Nav, goal: {route: route}}
templates:
  job:
    level: task
    children:
      - {type: pair}
      - {type: pair}
  pair:
    level: group
    children:
      - {type: pick}
      - type: drive
        parameters: {route: direct}
  pick:
    level: action
    actuator: arm
  drive:
    level: action
    actuator: nav
  detour:
    level: action
    actuator: nav
";

/// [`SMALL`] with each `(from, to)` replaced once; the error as text if it does not load.
pub fn small_text(edits: &[(&str, &str)]) -> String {
    let mut text = SMALL.to_owned();
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
    }
    text
}

/// [`SMALL`] with `lines` added to the drive entry of `pair` (indented as its keys).
pub fn small_with_drive(lines: &str) -> Config {
    let entry = "        parameters: {route: direct}\n";
    let text = small_text(&[(entry, &format!("{entry}{lines}"))]);
    Config::parse("small.yaml", &text).unwrap_or_else(|e| panic!("{e}"))
}

/// The goals sent in `out`, by path.
pub fn sent(out: &[lockstep_tasks::Output]) -> Vec<String> {
    out.iter()
        .filter_map(|o| match o {
            lockstep_tasks::Output::SendGoal { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect()
}

/// Every condition holds.
pub fn always(_: &str) -> bool {
    true
}
