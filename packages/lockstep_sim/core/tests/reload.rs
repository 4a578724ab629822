//! Hot replacement of rules and scene, and destination requests: bad input changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;

use common::*;
use lockstep_sim::{Error, Scene};

fn temp_copy() -> (tempfile::TempDir, Vec<std::path::PathBuf>, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mut rules = Vec::new();
    for f in rule_files() {
        let to = dir.path().join(f.file_name().unwrap());
        fs::copy(&f, &to).unwrap();
        rules.push(to);
    }
    let scene = dir.path().join("warehouse.scene");
    fs::copy(sample_scene(), &scene).unwrap();
    (dir, rules, scene)
}

#[test]
fn a_broken_rule_file_keeps_the_old_rules() {
    let (_dir, rules, scene) = temp_copy();
    let mut sim = lockstep_sim::Simulator::load(&scene, &rules, sample_config()).unwrap();
    let before = sim.rules().rule_count();
    let behaviour = &rules[1];
    let good = fs::read_to_string(behaviour).unwrap();
    let line = good.lines().count() + 1;
    fs::write(behaviour, format!("{good}drive(V) :- next_state(V).\n")).unwrap();
    let e = sim.reload(&scene, &rules).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains(&format!("{}:{line}:", behaviour.display())),
        "{text}"
    );
    assert_eq!(sim.rules().rule_count(), before);
    // It still drives to the destination on the old rules.
    assert!(run_until_arrived(&mut sim, 300.0).is_some());
}

#[test]
fn rules_without_what_the_simulator_reads_are_refused() {
    let (_dir, rules, scene) = temp_copy();
    let mut sim = lockstep_sim::Simulator::load(&scene, &rules, sample_config()).unwrap();
    fs::write(&rules[1], "next_state(explore) :- state(explore).\n").unwrap();
    let e = sim.reload(&scene, &rules).unwrap_err();
    assert!(matches!(e, Error::RulesContract { .. }), "{e}");
    assert!(e.to_string().contains("`drive`"), "{e}");
}

#[test]
fn a_scene_that_would_trap_the_vehicle_or_lose_the_destination_is_refused() {
    let (_dir, rules, scene) = temp_copy();
    let mut sim = lockstep_sim::Simulator::load(&scene, &rules, sample_config()).unwrap();
    let text = fs::read_to_string(&scene).unwrap();
    // Put a rack on the destination (column 17, row 9).
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let header = lines.iter().position(|l| l.starts_with("20 15")).unwrap();
    let mut row: Vec<&str> = lines[header + 1 + 9].split_whitespace().collect();
    row[17] = "0";
    lines[header + 1 + 9] = row.join(" ");
    fs::write(&scene, lines.join("\n")).unwrap();
    let e = sim.reload(&scene, &rules).unwrap_err();
    assert!(e.to_string().contains("obstacle"), "{e}");
    assert_eq!(sim.scene().codes(), Scene::load(sample_scene()).unwrap().codes());
}

#[test]
fn a_new_rule_file_changes_the_behaviour_of_a_running_simulator() {
    let (_dir, rules, scene) = temp_copy();
    let mut sim = lockstep_sim::Simulator::load(&scene, &rules, sample_config()).unwrap();
    for _ in 0..50 {
        sim.step(DT);
    }
    // Prefer right turns whenever both sides are open.
    let behaviour = fs::read_to_string(&rules[1]).unwrap();
    let right: String = behaviour
        .lines()
        .filter(|l| {
            !l.starts_with("prefer_left  :- left_open, right_open,")
                && !l.starts_with("prefer_right :- left_open, right_open,")
        })
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        + "prefer_right :- left_open, right_open.\n";
    fs::write(&rules[1], right).unwrap();
    sim.reload(&scene, &rules).unwrap();
    while sim.time_secs() < 8.0 {
        sim.step(DT);
    }
    let states: Vec<&str> = sim.states_visited().iter().map(|(_, s)| s.as_str()).collect();
    assert!(
        states.contains(&"turn_right") && !states.contains(&"turn_left"),
        "{states:?}"
    );
    assert!(
        sim.pose().y_m < sim.start_pose().y_m - 1.0,
        "went south: {:?}",
        sim.pose()
    );
}

#[test]
fn set_destination_rejects_obstacles_and_cells_outside() {
    let mut sim = sample_sim();
    let e = sim.set_destination(8, 9).unwrap_err();
    assert!(
        e.to_string().contains("is an obstacle (typecode 0, obstacle)"),
        "{e}"
    );
    let e = sim.set_destination(20, 3).unwrap_err();
    assert!(e.to_string().contains("outside the 20 x 15 grid"), "{e}");
    assert!(sim.set_destination(-1, 3).is_err());
    assert_eq!(sim.destination().unwrap().column, 17, "unchanged");
    sim.set_destination(5, 9).unwrap();
    assert!(run_until_arrived(&mut sim, 60.0).is_some());
    let cell = sim.scene().cell_at(sim.pose().x_m, sim.pose().y_m).unwrap();
    assert_eq!((cell.column, cell.row), (5, 9));
}

#[test]
fn a_reload_reports_the_rules_warnings() {
    let (_dir, rules, scene) = temp_copy();
    let mut sim = lockstep_sim::Simulator::load(&scene, &rules, sample_config()).unwrap();
    // The shipped rules: no warning (the simulator's own facts are its inputs, not "never defined").
    assert_eq!(sim.reload(&scene, &rules).unwrap().warnings, Vec::<String>::new());
    let text = fs::read_to_string(&rules[1]).unwrap();
    fs::write(&rules[1], text + "\nbraking(D) :- free_frnt(D), state(S).\n").unwrap();
    let warnings = sim.reload(&scene, &rules).unwrap().warnings;
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("warning: `free_frnt` is used but never defined")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("warning: variable `S` occurs only once")),
        "{warnings:?}"
    );
}

/// The sample scene with obstacles at column `column`, rows `rows`.
fn with_wall(text: &str, column: usize, rows: std::ops::RangeInclusive<usize>) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let header = lines.iter().position(|l| l.starts_with("20 15")).unwrap();
    for row in rows {
        let mut cells: Vec<&str> = lines[header + 1 + row].split_whitespace().collect();
        cells[column] = "0";
        lines[header + 1 + row] = cells.join(" ");
    }
    lines.join("\n") + "\n"
}

#[test]
fn a_wall_added_across_the_route_mid_run_is_avoided_and_the_vehicle_still_arrives() {
    let (_dir, rules, scene) = temp_copy();
    let mut sim = lockstep_sim::Simulator::load(&scene, &rules, sample_config()).unwrap();
    // The unedited run crosses column 14 on its way east (rows 8 and 9).
    while sim.pose().x_m < 4.0 {
        sim.step(DT);
    }
    let text = fs::read_to_string(&scene).unwrap();
    fs::write(&scene, with_wall(&text, 14, 1..=10)).unwrap();
    assert!(sim.reload(&scene, &rules).unwrap().scene_changed);
    let mut entered = Vec::new();
    while sim.time_secs() < 200.0 && sim.state() != "arrived" {
        let report = sim.step(DT);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        let cell = sim.scene().cell_at(sim.pose().x_m, sim.pose().y_m).unwrap();
        if cell.column == 14 && cell.row <= 10 {
            entered.push(cell);
        }
    }
    assert_eq!(sim.state(), "arrived", "{}", sim.ascii_map());
    assert_eq!(entered, [], "{}", sim.ascii_map());
    assert_eq!(sim.collisions(), 0);
    // It went around the south end of the new wall.
    assert!(sim
        .path()
        .iter()
        .any(|&(_, x, y)| (14.0..15.0).contains(&x) && y < 4.0));
}
