//! Eager decomposition of the shipped warehouse task, and the errors that reject a task before dispatch.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{goal, warehouse};
use lockstep_tasks::{Config, Tree};
use serde_json::json;

#[test]
fn move_material_from_a_to_b_decomposes_like_the_seed() {
    let config = warehouse();
    let tree = Tree::decompose(
        &config,
        "move_material",
        &goal(json!({"from": "A", "to": "B", "speed": 1.0})),
    )
    .unwrap();
    let counts: Vec<usize> = tree.levels.iter().map(Vec::len).collect();
    assert_eq!(counts, [1, 1, 2, 4]);
    let leaves: Vec<(&str, &str)> = tree
        .leaves()
        .map(|id| (tree.nodes[id].template.as_str(), tree.nodes[id].path.as_str()))
        .collect();
    assert_eq!(
        leaves,
        [
            ("load", "task/duty[0]/message[0]/action[0]"),
            ("drive", "task/duty[0]/message[0]/action[1]"),
            ("drive", "task/duty[0]/message[1]/action[0]"),
            ("unload", "task/duty[0]/message[1]/action[1]"),
        ]
    );
    let leaf = |path: &str| &tree.nodes[tree.find(path).unwrap()];
    // speed = min(task 1.0, area map limit 0.8).
    assert_eq!(
        leaf("task/duty[0]/message[0]/action[1]").params["speed"],
        json!(0.8)
    );
    assert_eq!(leaf("task/duty[0]").params["map"], json!("A-B"));
    assert_eq!(
        leaf("task/duty[0]/message[0]/action[0]").params["from"],
        json!("A")
    );
    assert_eq!(leaf("task/duty[0]/message[0]/action[1]").params["to"], json!("O"));
    assert_eq!(leaf("task/duty[0]/message[1]/action[1]").params["to"], json!("B"));
    assert_eq!(
        leaf("task/duty[0]/message[1]/action[0]").params["route"],
        json!([{"x": 9.5, "y": 2.5}, {"x": 12.5, "y": 2.5}])
    );
    assert_eq!(
        leaf("task/duty[0]/message[1]/action[1]").actuator.as_deref(),
        Some("roller")
    );
    // Slower than the map's limit: the task's speed stands.
    let slow = Tree::decompose(
        &config,
        "move_material",
        &goal(json!({"from": "A", "to": "B", "speed": 0.5})),
    )
    .unwrap();
    assert_eq!(
        slow.nodes[slow.find("task/duty[0]/message[0]/action[1]").unwrap()].params["speed"],
        json!(0.5)
    );
}

#[test]
fn a_task_that_cannot_decompose_is_rejected_with_the_key_path() {
    let config = warehouse();
    let e = Tree::decompose(&config, "move_material", &goal(json!({"from": "A", "to": "B"}))).unwrap_err();
    assert_eq!(
        e.to_string(),
        "goal.parameters.speed: parameter `speed` is missing (move_material requires from, to, speed)"
    );
    let e = Tree::decompose(&config, "fly", &goal(json!({}))).unwrap_err();
    assert_eq!(
        e.to_string(),
        "task_type: `fly` is not a task type (the configuration has: move_material)"
    );

    // A template referring to a parameter its parent does not have.
    assert_eq!(
        rejected("{map: \"{from}-{to}\"}", "{map: \"{from}-{dest}\"}", json!({})),
        "templates.move_material.children[0].parameters.map: `{dest}` is not a parameter of the parent (it has: from, speed, to)"
    );
    // An empty intersection of time windows names the parameter.
    assert_eq!(
        rejected("{speed: 0.8}", "{speed: 0.8, window: [100, 200]}", json!({"window": [0, 60]})),
        "templates.transfer.parameters: parameter `window`: the ranges [0, 60] (inherited) and [100, 200] do not intersect"
    );
}

/// The error decomposing A -> B at speed 1.0 (plus `extra` goal parameters) with the shipped configuration
/// where `from` is replaced by `to`.
fn rejected(from: &str, to: &str, extra: serde_json::Value) -> String {
    let text = common::warehouse_text();
    assert!(text.contains(from), "{from}");
    let config = Config::parse("w.yaml", &text.replacen(from, to, 1)).unwrap();
    let mut parameters = goal(json!({"from": "A", "to": "B", "speed": 1.0}));
    parameters.extend(goal(extra));
    Tree::decompose(&config, "move_material", &parameters)
        .unwrap_err()
        .to_string()
}
