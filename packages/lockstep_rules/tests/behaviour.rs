//! The shipped rule files in `config/rules/`: surface decoding and the behaviour state machine.

// Test helpers panic on failure: a panic is the test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::config_rules;
use lockstep_rules::{Engine, Facts, RuleSet, Value};

fn engine() -> Engine {
    let dir = config_rules();
    Engine::new(RuleSet::load_all(&[dir.join("surface.dl"), dir.join("behaviour.dl")]).unwrap())
}

const STATES: [&str; 7] = [
    "explore",
    "obstacle_ahead",
    "turn_left",
    "turn_right",
    "back_up",
    "arrived",
    "blocked",
];

#[derive(Debug)]
struct Tick {
    state: &'static str,
    front: f64,
    left: f64,
    right: f64,
    dest: bool,
    backups: i64,
    heading: f64,
}

/// Exploring, the way ahead clear, both sides close, nearly on course.
const EXPLORE: Tick = Tick {
    state: "explore",
    front: 3.0,
    left: 0.1,
    right: 0.1,
    dest: false,
    backups: 0,
    heading: 0.1,
};

fn facts(t: &Tick) -> Facts {
    let mut f = Facts::new();
    f.add("state", [t.state])
        .add("free_front", [t.front])
        .add("free_left", [t.left])
        .add("free_right", [t.right])
        .add("min_step", [0.5])
        .add("heading_error", [t.heading])
        .add("backups", [t.backups])
        .add("typecode", [3]);
    if t.dest {
        f.flag("at_destination");
    }
    f
}

fn next_state(e: &mut Engine, t: &Tick) -> (String, Vec<Vec<Value>>) {
    e.tick(&facts(t)).unwrap();
    let next = e.query("next_state").unwrap();
    assert_eq!(
        next.len(),
        1,
        "state {} front {} left {} right {}: {next:?}",
        t.state,
        t.front,
        t.left,
        t.right
    );
    assert!(e.query("ambiguous_state").unwrap().is_empty());
    let drive = e.query("drive").unwrap();
    assert_eq!(drive.len(), 1, "{next:?} {drive:?}");
    (next[0][0].as_str().unwrap().to_owned(), drive)
}

#[test]
fn every_situation_has_exactly_one_next_state_and_command() {
    let mut e = engine();
    for state in STATES {
        for front in [0.2, 3.0] {
            for left in [0.1, 1.0, 2.0] {
                for right in [0.1, 1.0, 2.0] {
                    for dest in [false, true] {
                        for backups in [0, 3] {
                            for heading in [-2.0, 0.1, 2.0] {
                                let t = Tick {
                                    state,
                                    front,
                                    left,
                                    right,
                                    dest,
                                    backups,
                                    heading,
                                };
                                let (next, _) = next_state(&mut e, &t);
                                assert!(STATES.contains(&next.as_str()));
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn state_machine_follows_the_diagram() {
    let mut e = engine();
    // One row per situation: what differs from `EXPLORE`, and the next state.
    #[rustfmt::skip]
    let cases = [
        (Tick { ..EXPLORE }, "explore"),
        (Tick { front: 0.2, ..EXPLORE }, "obstacle_ahead"),
        (Tick { dest: true, ..EXPLORE }, "arrived"),
        (Tick { state: "obstacle_ahead", front: 0.2, left: 2.0, right: 1.0, ..EXPLORE }, "turn_left"),
        (Tick { state: "obstacle_ahead", front: 0.2, left: 1.0, right: 2.0, ..EXPLORE }, "turn_right"),
        (Tick { state: "obstacle_ahead", front: 0.2, right: 2.0, ..EXPLORE }, "turn_right"),
        (Tick { state: "obstacle_ahead", front: 0.2, ..EXPLORE }, "back_up"),
        (Tick { state: "obstacle_ahead", front: 0.2, backups: 3, ..EXPLORE }, "blocked"),
        (Tick { state: "back_up", front: 0.2, ..EXPLORE }, "obstacle_ahead"),
        (Tick { state: "turn_left", left: 2.0, ..EXPLORE }, "explore"),
        (Tick { state: "turn_left", front: 0.2, left: 2.0, ..EXPLORE }, "turn_left"),
        (Tick { state: "turn_right", front: 0.2, ..EXPLORE }, "obstacle_ahead"),
        (Tick { state: "blocked", ..EXPLORE }, "blocked"),
        (Tick { state: "arrived", ..EXPLORE }, "arrived"),
    ];
    for (t, expected) in cases {
        assert_eq!(next_state(&mut e, &t).0, expected, "{t:?}");
    }
}

#[test]
fn commands_follow_surface_and_heading() {
    let mut e = engine();
    let t = Tick {
        heading: 0.2,
        ..EXPLORE
    };
    let (_, drive) = next_state(&mut e, &t);
    // Gravel (code 3) advises 1.2 m/s; 1.5 * 0.2 rad/s of turn.
    assert_eq!(drive[0][0].as_f64(), Some(1.2));
    assert!((drive[0][1].as_f64().unwrap() - 0.3).abs() < 1e-12);
    let (_, drive) = next_state(&mut e, &Tick { heading: -2.0, ..t });
    assert_eq!(drive[0][1].as_f64(), Some(-1.0), "clamped to max_turn_rate");
    let (_, drive) = next_state(
        &mut e,
        &Tick {
            state: "obstacle_ahead",
            front: 0.2,
            ..t
        },
    );
    assert_eq!(drive, vec![vec![Value::from(-0.2), Value::from(0.0)]]);
}

#[test]
fn surfaces_decode_per_typecode() {
    let mut e = engine();
    let mut f = Facts::new();
    for code in 0..=8 {
        f.add("typecode", [code]);
    }
    e.tick(&f).unwrap();
    let surfaces = e.query("surface").unwrap();
    assert_eq!(surfaces.len(), 7);
    assert_eq!(
        surfaces[5],
        vec![Value::from(6), 0.3.into(), 0.6.into(), 0.4.into()],
        "ice"
    );
    assert_eq!(e.query("obstacle").unwrap(), vec![vec![Value::from(0)]]);
    assert_eq!(e.query("unknown_typecode").unwrap(), vec![vec![Value::from(8)]]);
    assert!(e
        .contains("surface_name", [Value::from(5), "mud".into()])
        .unwrap());
}
