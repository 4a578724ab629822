//! Configuration errors name the file, the line and the path of the key at fault.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::warehouse_text;
use lockstep_tasks::{Config, Merge};

/// The error for the warehouse file with `from` replaced by `to`.
fn broken(from: &str, to: &str) -> String {
    let text = warehouse_text();
    assert!(text.contains(from), "{from}");
    Config::parse("warehouse.yaml", &text.replacen(from, to, 1))
        .unwrap_err()
        .to_string()
}

/// The shipped warehouse configuration decomposes on the shipped station map: from where the robot is (`at`)
/// to the load's station, then to the drop's, each drive at the task's speed met with its lanes' limits.
#[test]
fn the_shipped_warehouse_plans_its_routes_on_the_shipped_map() {
    let (config, map) = common::shipped_paths();
    let config = Config::read(&config).unwrap_or_else(|e| panic!("{e}"));
    let map = lockstep_tasks::map::StationMap::read(&map).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        config.task_types(),
        ["charge", "move_material", "pick_and_deliver"]
    );
    assert_eq!(config.actuators["navigation"].server, "navigate");
    let goal = common::goal(serde_json::json!({"from": "A", "to": "B", "speed": 1.0, "at": "C"}));
    let mut tree = lockstep_tasks::Tree::decompose(&config, "move_material", &goal).unwrap();
    lockstep_tasks::routes::plan_routes(&mut tree, &map, "speed").unwrap();
    let drives: Vec<_> = (tree.leaves())
        .filter(|&l| tree.nodes[l].actuator.as_deref() == Some("navigation"))
        .map(|l| &tree.nodes[l].params)
        .collect();
    assert_eq!(drives.len(), 2);
    assert_eq!(
        drives[0]["route_stations"],
        serde_json::json!(["C", "J6", "J5", "J1", "A"])
    );
    assert_eq!(
        drives[1]["route_stations"],
        serde_json::json!(["A", "J1", "J2", "O", "J3", "B"])
    );
    // Grass on the way down from C: 0.5; the lower corridor: 0.8.
    assert_eq!(drives[0]["speed"], serde_json::json!(0.5));
    assert_eq!(drives[1]["speed"], serde_json::json!(0.8));
    assert_eq!(drives[1]["route"][5], serde_json::json!({"x": 12.5, "y": 2.5}));
}

#[test]
fn the_fixture_loads() {
    let config = common::warehouse();
    assert_eq!(config.levels, ["task", "duty", "message", "action"]);
    assert_eq!(config.task_types(), ["move_material"]);
    assert_eq!(config.merge_of("speed"), Merge::Min);
    assert_eq!(config.merge_of("route"), Merge::Child);
    assert_eq!(config.actuators["navigation"].server, "/navigate");
}

#[test]
fn each_broken_key_is_named_with_its_line() {
    let cases = [
        // A child template that does not exist.
        ("- {type: load}", "- {type: lodd}", "warehouse.yaml:51: templates.pick_and_go.children[0].type: `lodd` is not a template"),
        // The second child of a message, at the wrong level.
        ("- {type: unload}", "- {type: transfer}", "warehouse.yaml:58: templates.go_and_drop.children[1].type: `transfer` is at level `duty`; children of a `message` must be at `action`"),
        // An unknown merge rule: serde's message, with the key path.
        ("speed: min ", "speed: smallest ", "warehouse.yaml:8: parameters.speed: unknown variant `smallest`, expected one of `min`, `max`, `parent`, `child`, `intersect`"),
        // A misspelt field.
        ("    actuator: roller", "    actuatr: roller", "warehouse.yaml:68: templates.unload.actuatr: unknown field `actuatr`, expected one of `level`, `parameters`, `required`, `children`, `parallel`, `attributes`, `actuator`, `retry`, `timeout_s`, `fallback`"),
        // An actuator that is not configured.
        ("actuator: roller", "actuator: conveyor", "warehouse.yaml:68: templates.unload.actuator: `conveyor` is not one of the actuators [loader, navigation, roller]"),
        ("levels: [task, duty, message, action]", "levels: [task, duty, duty, action]", "warehouse.yaml:4: levels[2]: `duty` is empty or repeated"),
        ("level: duty", "level: mission", "warehouse.yaml:35: templates.transfer.level: `mission` is not one of the levels [task, duty, message, action]"),
    ];
    for (from, to, expected) in cases {
        assert_eq!(broken(from, to), expected, "{from} -> {to}");
    }
}

#[test]
fn attributes_are_checked() {
    assert_eq!(
        broken(
            "      - {type: drive}\n      - {type: unload}",
            "      - {type: drive}\n      - type: unload\n        attributes: [{kind: delay, secs: -1}]"
        ),
        "warehouse.yaml:59: templates.go_and_drop.children[1].attributes[0].secs: -1: must be a finite number >= 0"
    );
    assert_eq!(
        broken("    actuator: navigation\n", "    actuator: navigation\n    attributes: [{kind: wait, secs: 1}]\n"),
        "warehouse.yaml:66: templates.drive.attributes[0].kind: unknown variant `wait`, expected one of `delay`, `condition`, `interrupt`"
    );
}
