//! Garbage in, valid state out: non-finite and out-of-range commands (from cmd_vel or the rules) are refused
//! and the simulator keeps a finite state and recovers; what it keeps is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use lockstep_rules::RuleSet;
use lockstep_sim::{Cell, Mode, PreparedWorld, Scene, SimConfig, Simulator};

fn all_finite(sim: &Simulator) -> bool {
    let (p, o, w) = (sim.pose(), sim.odometry(), sim.wheels());
    [
        p.x_m,
        p.y_m,
        p.yaw_rad,
        o.pose.x_m,
        o.pose.y_m,
        o.pose.yaw_rad,
        o.v_mps,
        o.w_radps,
        w.left_position_rad,
        w.right_position_rad,
        w.left_velocity_radps,
        w.right_velocity_radps,
        sim.true_twist().0,
        sim.true_twist().1,
    ]
    .iter()
    .all(|x| x.is_finite())
}

#[test]
fn garbage_commands_leave_a_finite_state_that_recovers() {
    let mut sim = commanded_with(SimConfig {
        cmd_timeout_secs: 0.0,
        ..SimConfig::default()
    });
    let bad = [
        (f64::NAN, 0.0),
        (0.0, f64::NAN),
        (f64::INFINITY, 0.0),
        (0.0, f64::NEG_INFINITY),
        (1e308, 1e308),
        (1e308, 0.0),
        (0.0, -1e308),
        (10.5, 0.0),
        (0.0, 10.5),
    ];
    for (v, w) in bad {
        // Whether refused or not, the state must stay finite; refused is what keeps it so.
        let refused = sim.set_command(v, w).is_err();
        for _ in 0..10 {
            sim.step(DT);
        }
        assert!(all_finite(&sim), "after ({v:?}, {w:?}): {:?}", sim.odometry());
        assert!(refused, "({v:?}, {w:?}) was taken");
    }
    assert_eq!(sim.pose(), sim.start_pose(), "nothing moved");
    // Recovery: a valid command drives, odometry follows.
    sim.set_command(1.0, 0.0).unwrap();
    run(&mut sim, 2.0);
    assert!(all_finite(&sim));
    assert!(sim.pose().x_m > sim.start_pose().x_m + 1.0);
    assert!(sim.odometry().pose.x_m > 1.0);
    // The limits themselves are fine.
    assert!(sim.set_command(10.0, -10.0).is_ok());
}

#[test]
fn rules_that_drive_beyond_the_limits_hold_still_with_a_warning() {
    let surface = std::fs::read_to_string(rules_dir().join("surface.dl")).unwrap();
    let crazy = "initial_state(explore).\nnext_state(explore) :- state(explore).\ndrive(1.0e308, 0.0) :- next_state(explore).\n";
    let rules = RuleSet::parse_sources(&[(&surface, "surface.dl"), (crazy, "crazy.dl")]).unwrap();
    let config = SimConfig {
        start: Some(Cell { column: 2, row: 2 }),
        destination: Some(Cell { column: 20, row: 2 }),
        ..SimConfig::default()
    };
    let mut sim = Simulator::new(floor(), rules, config).unwrap();
    let report = sim.step(DT);
    assert!(
        report.warnings.iter().any(|w| w.contains("max_linear_mps")),
        "{:?}",
        report.warnings
    );
    for _ in 0..100 {
        sim.step(DT);
    }
    assert!(all_finite(&sim));
    assert_eq!(sim.pose(), sim.start_pose());
}

#[test]
fn a_long_run_keeps_bounded_histories() {
    let mut sim = commanded_with(SimConfig {
        path_max_points: 50,
        cmd_timeout_secs: 0.0,
        ..SimConfig::default()
    });
    // Circles of 0.67 m radius for an hour of simulated time: about 3.6 km of path.
    sim.set_command(1.0, 1.5).unwrap();
    for _ in 0..(3600.0 / DT) as usize {
        sim.step(DT);
        assert!(sim.path().len() <= 50);
    }
    assert!(sim.distance_m() > 3000.0);
    assert!(sim.path().len() >= 25, "{}", sim.path().len());
    assert_eq!(sim.path()[0].0, 0.0, "it still starts at the start");

    let mut sim = Simulator::load(
        sample_scene(),
        &rule_files(),
        SimConfig {
            state_history_depth: 2,
            ..sample_config()
        },
    )
    .unwrap();
    run_until_arrived(&mut sim, 300.0).unwrap();
    let states: Vec<&str> = sim.states_visited().iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(states.len(), 2);
    assert_eq!(states[1], "arrived");
}

#[test]
fn a_world_prepared_elsewhere_installs_like_a_reload() {
    let mut sim = sample_sim();
    for _ in 0..50 {
        sim.step(DT);
    }
    let (scene, rules) = (sample_scene(), rule_files());
    let world = std::thread::spawn(move || PreparedWorld::load(&scene, &rules, Mode::Autonomous))
        .join()
        .unwrap()
        .unwrap();
    let summary = sim.install(world).unwrap();
    assert!(!summary.scene_changed);
    assert_eq!(summary.rule_count, sim.rules().rule_count());
    // A world checked for commanded mode lacks what autonomous mode reads: install checks again, refuses it,
    // and nothing changes.
    let surface_only = RuleSet::load(rules_dir().join("surface.dl")).unwrap();
    let world = PreparedWorld::new(
        Scene::load(sample_scene()).unwrap(),
        surface_only,
        Mode::Commanded,
    )
    .unwrap();
    let before = sim.rules().rule_count();
    let e = sim.install(world).unwrap_err();
    assert!(e.to_string().contains("next_state"), "{e}");
    assert_eq!(sim.rules().rule_count(), before);
}
