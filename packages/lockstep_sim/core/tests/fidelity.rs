//! Fidelity to the rules: the behaviour lives in the rules only (initial and terminal states, what is carried
//! between ticks), surfaces are decoded every tick with the facts of that tick, and the smallest step
//! follows the scene.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;

use common::*;
use lockstep_rules::{Facts, RuleSet};
use lockstep_sim::{Cell, Mode, Pose2D, Scene, SimConfig, Simulator};

/// A dead end: a corridor one cell wide (row 2, columns 1..=5) closed at both ends, and the destination in a
/// pocket (column 8) the vehicle cannot reach.
fn dead_end() -> Scene {
    let mut text = String::from("10 5\n");
    for row in 0..5 {
        let cells: Vec<&str> = (0..10)
            .map(|c| {
                if row == 2 && ((1..=5).contains(&c) || c == 8) {
                    "1"
                } else {
                    "0"
                }
            })
            .collect();
        text.push_str(&cells.join(" "));
        text.push('\n');
    }
    Scene::parse(&text, "dead_end.scene").unwrap()
}

fn dead_end_sim(behaviour: &str) -> Simulator {
    let surface = fs::read_to_string(rules_dir().join("surface.dl")).unwrap();
    let rules = RuleSet::parse_sources(&[(&surface, "surface.dl"), (behaviour, "behaviour.dl")]).unwrap();
    let config = SimConfig {
        start: Some(Cell { column: 2, row: 2 }),
        destination: Some(Cell { column: 8, row: 2 }),
        ..SimConfig::default()
    };
    Simulator::new(dead_end(), rules, config).unwrap()
}

fn shipped_behaviour() -> String {
    fs::read_to_string(rules_dir().join("behaviour.dl")).unwrap()
}

/// `text` with every identifier `from` replaced by `to` (whole words only).
fn rename(text: &str, pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let replaced = pairs.iter().find(|(from, _)| from == word).map(|(_, to)| *to);
        out.push_str(replaced.unwrap_or(word));
        word.clear();
    };
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            word.push(ch);
        } else {
            flush(&mut word, &mut out);
            out.push(ch);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The true pose after every step and the states entered.
fn record(sim: &mut Simulator, secs: f64) -> (Vec<Pose2D>, Vec<String>) {
    let mut poses = Vec::new();
    while sim.time_secs() < secs {
        let report = sim.step(DT);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        poses.push(sim.pose());
    }
    let states = sim.states_visited().iter().map(|(_, s)| s.clone()).collect();
    (poses, states)
}

#[test]
fn the_back_up_counter_lives_in_the_rules_and_a_dead_end_ends_blocked() {
    let mut sim = dead_end_sim(&shipped_behaviour());
    assert_eq!(sim.carried("backups"), [vec![0.into()]], "initial_backups(0)");
    let (_, states) = record(&mut sim, 20.0);
    let backups = states.iter().filter(|s| *s == "back_up").count();
    assert_eq!(backups, 3, "max_backups(3) back-ups, then blocked: {states:?}");
    assert_eq!(states.last().unwrap(), "blocked", "{states:?}");
    assert_eq!(sim.carried("backups"), [vec![3.into()]]);
    // `blocked` is terminal: nothing moves any more, and no arrival is reported.
    let before = sim.pose();
    record(&mut sim, 25.0);
    assert_eq!(sim.pose(), before);
    assert_eq!(sim.state(), "blocked");
    assert_eq!(sim.arrived_at_secs(), None);
    // A new destination sets it off again from the rules' initial state and initial count.
    sim.set_destination(1, 2).unwrap();
    assert_eq!(sim.state(), "explore");
    assert_eq!(sim.carried("backups"), [vec![0.into()]]);
}

#[test]
fn renaming_states_in_the_rules_only_leaves_the_trajectory_identical() {
    let shipped = shipped_behaviour();
    let renamed = rename(&shipped, &[("back_up", "reverse"), ("explore", "wander")]);
    assert_eq!(
        rename(&renamed, &[("back_up", "?"), ("explore", "?")]),
        renamed,
        "no state keeps its old name"
    );
    let map = |states: Vec<String>| -> Vec<String> {
        states
            .into_iter()
            .map(|s| match s.as_str() {
                "reverse" => "back_up".to_owned(),
                "wander" => "explore".to_owned(),
                _ => s,
            })
            .collect()
    };

    // The dead end visits back_up and explore...
    let (poses_a, states_a) = record(&mut dead_end_sim(&shipped), 20.0);
    let (poses_b, states_b) = record(&mut dead_end_sim(&renamed), 20.0);
    assert!(states_a.iter().any(|s| s == "back_up"));
    assert_eq!(poses_a, poses_b);
    assert_eq!(states_a, map(states_b));

    // ...and the sample warehouse run arrives the same way.
    let mut a = sample_sim();
    let surface = fs::read_to_string(rules_dir().join("surface.dl")).unwrap();
    let rules = RuleSet::parse_sources(&[(&surface, "surface.dl"), (&renamed, "behaviour.dl")]).unwrap();
    let mut b = Simulator::new(Scene::load(sample_scene()).unwrap(), rules, sample_config()).unwrap();
    let (poses_a, states_a) = record(&mut a, 60.0);
    let (poses_b, states_b) = record(&mut b, 60.0);
    assert_eq!(states_a.last().unwrap(), "arrived");
    assert_eq!(poses_a, poses_b);
    assert_eq!(states_a, map(states_b));
    assert_eq!(a.arrived_at_secs(), b.arrived_at_secs());
    assert!(a.arrived_at_secs().is_some());
}

/// Surface rules for [`floor`] whose code 1 is decoded by `code1` (a rule body after `typecode(C), C = 1`).
fn floor_rules(code1: &[&str], extra: &str) -> RuleSet {
    let mut text = String::from("obstacle(C) :- typecode(C), C = 0.\nsurface(0, 1.0, 1.0, 0.0).\n");
    for body in code1 {
        text.push_str(&format!("surface(C, A, S, V) :- typecode(C), C = 1, {body}.\n"));
    }
    text.push_str(extra);
    let behaviour = shipped_behaviour();
    RuleSet::parse_sources(&[(&text, "floor.dl"), (&behaviour, "behaviour.dl")]).unwrap()
}

fn floor_run(rules: RuleSet) -> Simulator {
    let config = SimConfig {
        start: Some(Cell { column: 2, row: 2 }),
        destination: Some(Cell { column: 22, row: 2 }),
        ..SimConfig::default()
    };
    Simulator::new(floor(), rules, config).unwrap()
}

/// Steps until `until_secs`; the largest true speed seen after `from_secs`.
fn top_speed(sim: &mut Simulator, from_secs: f64, until_secs: f64) -> f64 {
    let mut top: f64 = 0.0;
    while sim.time_secs() < until_secs {
        let report = sim.step(DT);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        if sim.time_secs() >= from_secs {
            top = top.max(sim.true_twist().0.abs());
        }
    }
    top
}

#[test]
fn a_surface_rule_on_the_time_loads_and_is_decoded_every_tick() {
    // Before: every code was decoded once at load, where `sim_time` did not exist, so code 1 was unknown.
    let mut sim = floor_run(floor_rules(
        &[
            "sim_time(T), T < 3.0, A = 2.0, S = 4.0, V = 2.0",
            "sim_time(T), T >= 3.0, A = 2.0, S = 4.0, V = 0.5",
        ],
        "",
    ));
    assert!(top_speed(&mut sim, 0.0, 3.0) > 1.5, "cruising at 2 m/s first");
    // From t = 3 s the advised speed is 0.5: braking at 4 m/s^2 after the 0.04 s delay takes < 0.5 s.
    assert!(top_speed(&mut sim, 3.5, 8.0) <= 0.5 + 1e-9);
    assert_eq!(sim.surface_under().unwrap().advised_speed_mps, 0.5);
}

#[test]
fn outside_facts_change_the_decoding_and_facts_that_break_the_scene_are_refused() {
    let mut sim = floor_run(floor_rules(
        &[
            "!wet_floor, A = 2.0, S = 4.0, V = 2.0",
            "wet_floor, A = 1.0, S = 2.0, V = 0.5",
        ],
        "obstacle(C) :- typecode(C), closed(C).\n",
    ));
    assert!(top_speed(&mut sim, 0.0, 3.0) > 1.5);
    let mut wet = Facts::new();
    wet.flag("wet_floor");
    sim.set_facts(wet).unwrap();
    // Braking at 2 m/s^2 from 2 m/s takes 0.75 s.
    assert!(top_speed(&mut sim, 4.0, 8.0) <= 0.5 + 1e-9);

    // Closing code 1 would put the vehicle on an obstacle: refused, the wet floor stays.
    let mut closed = Facts::new();
    closed.flag("wet_floor").add("closed", [1]);
    let e = sim.set_facts(closed).unwrap_err();
    assert!(e.to_string().contains("obstacle"), "{e}");
    assert_eq!(sim.outside_facts().len(), 1);
    assert!(top_speed(&mut sim, 8.0, 10.0) <= 0.5 + 1e-9);
}

/// A floor with a band of mud (code 5: slow acceleration) across columns 10..=14.
fn banded_floor() -> Scene {
    let mut text = String::from("30 5\n");
    for _ in 0..5 {
        let row: Vec<&str> = (0..30)
            .map(|c| match c {
                25 => "0",
                10..=14 => "5",
                _ => "1",
            })
            .collect();
        text.push_str(&row.join(" "));
        text.push('\n');
    }
    Scene::parse(&text, "banded.scene").unwrap()
}

#[test]
fn the_commanded_mode_cache_gives_what_decoding_every_tick_gives() {
    let surface = fs::read_to_string(rules_dir().join("surface.dl")).unwrap();
    let run = |extra: &str| {
        let rules = RuleSet::parse_sources(&[(&surface, "surface.dl"), (extra, "extra.dl")]).unwrap();
        let config = SimConfig {
            mode: Mode::Commanded,
            start: Some(Cell { column: 2, row: 2 }),
            cmd_timeout_secs: 0.0,
            ..SimConfig::default()
        };
        let mut sim = Simulator::new(banded_floor(), rules, config).unwrap();
        let mut poses = Vec::new();
        for (v, w, secs) in [
            (1.5, 0.0, 6.0),
            (0.0, 0.0, 1.0),
            (1.0, 0.2, 4.0),
            (-1.0, 0.0, 3.0),
        ] {
            sim.set_command(v, w).unwrap();
            let end = sim.time_secs() + secs;
            while sim.time_secs() < end {
                sim.step(DT);
                poses.push((sim.pose(), sim.surface_under().unwrap().code));
            }
        }
        poses
    };
    // A rule that reads sim_time turns the cache off: every tick is evaluated.
    let cached = run("");
    let evaluated = run("clock(T) :- sim_time(T).\n");
    assert!(
        cached.iter().any(|(_, code)| *code == 5),
        "the run crosses the mud"
    );
    assert_eq!(cached, evaluated);
}

#[test]
fn the_smallest_step_follows_the_cell_size_unless_set() {
    assert_eq!(sample_sim().min_step_m(), 0.5, "1 m cells");
    let fine = Scene::load(repo().join("config/scenes/floor.scene")).unwrap();
    let rules = RuleSet::load_all(&rule_files()).unwrap();
    let config = SimConfig {
        start: Some(Cell { column: 60, row: 60 }),
        ..SimConfig::default()
    };
    let mut sim = Simulator::new(fine, rules, config).unwrap();
    assert_eq!(sim.min_step_m(), 0.25, "0.5 m cells");
    sim.set_min_step_m(0.8).unwrap();
    assert_eq!(sim.min_step_m(), 0.8);
    for bad in [-0.1, f64::NAN, f64::INFINITY] {
        let e = sim.set_min_step_m(bad).unwrap_err();
        assert!(e.to_string().contains("min_step_m"), "{e}");
    }
    assert_eq!(sim.min_step_m(), 0.8);
}

#[test]
fn the_rules_must_name_one_initial_state() {
    let behaviour = shipped_behaviour();
    let surface = fs::read_to_string(rules_dir().join("surface.dl")).unwrap();
    let load = |behaviour: &str| {
        let rules = RuleSet::parse_sources(&[(&surface, "surface.dl"), (behaviour, "b.dl")])?;
        let config = SimConfig {
            start: Some(Cell { column: 2, row: 2 }),
            destination: Some(Cell { column: 20, row: 2 }),
            ..SimConfig::default()
        };
        Simulator::new(floor(), rules, config)
    };
    let e = load(&behaviour.replace("initial_state(explore).", "")).unwrap_err();
    assert!(e.to_string().contains("no rule derives `initial_state`"), "{e}");
    let e = load(&format!("{behaviour}\ninitial_state(wander).\n")).unwrap_err();
    assert!(
        e.to_string()
            .contains("`initial_state` must derive exactly one state; it derives 2 (explore, wander)"),
        "{e}"
    );
}
