//! The differential drive: commanded vs true vs odometry, delay, surface limits and collisions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{commanded, commanded_with, driven, run};
use lockstep_rules::RuleSet;
use lockstep_sim::{DiffDriveParams, Mode, Scene, SimConfig, Simulator};

#[test]
fn straight_line_with_matching_parameters() {
    let p = DiffDriveParams::default();
    let sim = driven(p, p, (1.0, 0.0), 5.0);
    let (start, end) = (sim.start_pose(), sim.pose());
    // Asphalt accelerates at 2 m/s^2: 0.25 m lost in the 0.5 s ramp, then 1 m/s.
    assert!((end.x_m - start.x_m - 4.75).abs() < 0.03, "{end:?}");
    assert!((end.y_m - start.y_m).abs() < 1e-9 && end.yaw_rad.abs() < 1e-12);
    let odom = sim.odometry();
    assert!(
        (odom.pose.x_m - (end.x_m - start.x_m)).abs() < 1e-9,
        "odometry is exact when nominal = true"
    );
    assert!((sim.true_twist().0 - 1.0).abs() < 1e-9);
    let w = sim.wheels();
    assert!((w.left_velocity_radps - 1.0 / p.wheel_radius_m).abs() < 1e-9);
    assert_eq!(w.left_position_rad, w.right_position_rad);
}

#[test]
fn pure_rotation_stays_in_place() {
    let p = DiffDriveParams::default();
    let sim = driven(p, p, (0.0, 0.5), 2.0);
    let (start, end) = (sim.start_pose(), sim.pose());
    assert!(end.distance_to(&start) < 1e-9);
    assert!(end.yaw_rad > 0.8 && end.yaw_rad < 1.0, "{end:?}");
    let w = sim.wheels();
    assert!((w.left_velocity_radps + w.right_velocity_radps).abs() < 1e-9);
    assert!((sim.odometry().pose.yaw_rad - end.yaw_rad).abs() < 1e-9);
}

#[test]
fn larger_true_wheel_radius_makes_odometry_short() {
    let nominal = DiffDriveParams::default();
    let true_vehicle = DiffDriveParams {
        wheel_radius_m: nominal.wheel_radius_m * 1.1,
        ..nominal
    };
    let sim = driven(true_vehicle, nominal, (0.5, 0.0), 6.0);
    let truth = sim.pose().x_m - sim.start_pose().x_m;
    let odom = sim.odometry().pose.x_m;
    assert!(odom < truth);
    assert!((odom / truth - 1.0 / 1.1).abs() < 1e-9, "{odom} vs {truth}");
}

#[test]
fn wider_true_track_makes_odometry_over_report_rotation() {
    let nominal = DiffDriveParams::default();
    let true_vehicle = DiffDriveParams {
        track_width_m: nominal.track_width_m * 1.2,
        ..nominal
    };
    let sim = driven(true_vehicle, nominal, (0.0, 0.4), 3.0);
    let truth = sim.pose().yaw_rad;
    let odom = sim.odometry().pose.yaw_rad;
    assert!(truth > 0.0 && odom > truth);
    assert!((odom / truth - 1.2).abs() < 1e-9, "{odom} vs {truth}");
    // Driving a left arc: odometry believes it turned more, so its position drifts to the left of the truth.
    let sim = driven(true_vehicle, nominal, (0.5, 0.2), 4.0);
    let (truth, odom) = (sim.pose(), sim.odometry().pose);
    assert!(odom.yaw_rad > truth.yaw_rad);
    let start = sim.start_pose();
    assert!(odom.y_m > truth.y_m - start.y_m, "odom {odom:?} truth {truth:?}");
}

#[test]
fn centripetal_slip_reduces_the_turn_rate_only_while_moving() {
    let nominal = DiffDriveParams::default();
    let slippy = DiffDriveParams {
        centripetal_factor: 0.5,
        ..nominal
    };
    let in_place = driven(slippy, nominal, (0.0, 0.5), 1.0).pose().yaw_rad;
    let reference = driven(nominal, nominal, (0.0, 0.5), 1.0);
    assert!(
        (in_place - reference.pose().yaw_rad).abs() < 1e-12,
        "no slip without speed"
    );

    let sim = driven(slippy, nominal, (1.0, 0.5), 2.0);
    let reference = driven(nominal, nominal, (1.0, 0.5), 2.0);
    assert!(sim.pose().yaw_rad < reference.pose().yaw_rad);
    // Odometry cannot see the slip: it reports the wheels' turn.
    assert!((sim.odometry().pose.yaw_rad - reference.pose().yaw_rad).abs() < 1e-9);
}

#[test]
fn command_delay_postpones_motion() {
    let nominal = DiffDriveParams::default();
    let delayed = DiffDriveParams {
        delay_secs: 0.2,
        ..nominal
    };
    let mut sim = driven(delayed, nominal, (1.0, 0.0), 0.18);
    assert_eq!(
        sim.wheels().left_velocity_radps,
        0.0,
        "nothing moves before the delay"
    );
    assert_eq!(sim.pose(), sim.start_pose());
    run(&mut sim, 0.06);
    assert!(sim.wheels().left_velocity_radps > 0.0);
    // Stopping is delayed as well.
    run(&mut sim, 1.0);
    sim.set_command(0.0, 0.0).unwrap();
    run(&mut sim, 0.18);
    assert!((sim.true_twist().0 - 1.0).abs() < 1e-9);
    run(&mut sim, 1.0);
    assert_eq!(sim.true_twist().0, 0.0);
}

#[test]
fn acceleration_is_bounded_by_the_surface() {
    // Ice (code 6) accelerates at 0.3 m/s^2.
    let rules = RuleSet::load(common::rules_dir().join("surface.dl")).unwrap();
    let scene = Scene::parse("10 1\n6 6 6 6 6 6 6 6 6 6\n", "ice.scene").unwrap();
    let config = SimConfig {
        mode: Mode::Commanded,
        cmd_timeout_secs: 0.0,
        ..SimConfig::default()
    };
    let mut sim = Simulator::new(scene, rules, config).unwrap();
    sim.set_command(1.0, 0.0).unwrap();
    run(&mut sim, 1.0);
    assert!((sim.true_twist().0 - 0.3).abs() < 1e-9, "{:?}", sim.true_twist());
}

#[test]
fn commands_time_out() {
    let mut sim = commanded_with(SimConfig {
        cmd_timeout_secs: 0.5,
        ..SimConfig::default()
    });
    sim.set_command(1.0, 0.0).unwrap();
    run(&mut sim, 0.4);
    assert!(sim.true_twist().0 > 0.0);
    run(&mut sim, 1.0);
    assert_eq!(sim.true_twist().0, 0.0, "no command for 0.5 s: the base stops");
    assert!(sim.set_command(f64::NAN, 0.0).is_err());
}

#[test]
fn collisions_stop_the_vehicle_and_wheels() {
    let p = DiffDriveParams::default();
    let sim = driven(p, p, (1.0, 0.0), 30.0);
    // The wall is column 25 (x in [25, 26)); the footprint's radius is 0.25 m.
    let x = sim.pose().x_m;
    assert!(x < 25.0 - 0.25 + 1e-9 && x > 24.0, "{x}");
    assert!(sim.collisions() > 0);
    assert_eq!(sim.wheels().left_velocity_radps, 0.0);
    let odom_x = sim.odometry().pose.x_m;
    assert!(
        (odom_x - (x - sim.start_pose().x_m)).abs() < 1e-9,
        "the encoders stopped with the vehicle"
    );
}

#[test]
fn sensors_measure_free_distance_on_the_grid() {
    let p = DiffDriveParams::default();
    let sim = commanded(p, p);
    let seen = sim.perceive();
    // Start (2.5, 2.5) facing +x; the wall begins at x = 25; the grid is 5 m high. Clearances exclude the
    // 0.25 m radius; the sensor range is 10 m.
    assert!((seen.free_front_m - 9.75).abs() < 1e-9, "{seen:?}");
    assert!((seen.free_left_m - 2.25).abs() < 1e-9, "{seen:?}");
    assert!((seen.free_right_m - 2.25).abs() < 1e-9, "{seen:?}");
    // The range sensors: ahead as the rules see it; behind, the grid's edge at x = 0.
    let (front, rear) = sim.front_rear_ranges();
    assert_eq!(front, seen.free_front_m);
    assert!((rear - 2.25).abs() < 1e-9, "{rear}");
    assert_eq!(sim.sensor_range_m(), 10.0);
}

#[test]
fn vehicles_change_at_run_time_and_odometry_follows_at_once() {
    let nominal = DiffDriveParams::default();
    let true_vehicle = DiffDriveParams {
        wheel_radius_m: nominal.wheel_radius_m * 1.1,
        ..nominal
    };
    let mut sim = driven(true_vehicle, nominal, (0.5, 0.0), 2.0);
    let bad = DiffDriveParams {
        wheel_radius_m: f64::NAN,
        ..nominal
    };
    let e = sim.set_nominal_vehicle(bad).unwrap_err().to_string();
    assert!(e.contains("wheel_radius_m") && e.contains("nominal"), "{e}");
    assert_eq!(
        sim.config().nominal_vehicle,
        nominal,
        "a bad value changes nothing"
    );
    // The calibration pushed: odometry over the next second now matches the truth.
    sim.set_nominal_vehicle(true_vehicle).unwrap();
    let (odom0, truth0) = (sim.odometry().pose.x_m, sim.pose().x_m);
    for _ in 0..100 {
        sim.step(0.01);
    }
    let (d_odom, d_truth) = (sim.odometry().pose.x_m - odom0, sim.pose().x_m - truth0);
    assert!((d_odom - d_truth).abs() < 1e-9, "{d_odom} vs {d_truth}");
    // A new true radius (a new load): the truth runs ahead of odometry again.
    sim.set_true_vehicle(DiffDriveParams {
        wheel_radius_m: true_vehicle.wheel_radius_m * 1.03,
        ..true_vehicle
    })
    .unwrap();
    assert!(sim.set_true_vehicle(bad).is_err());
    let (odom0, truth0) = (sim.odometry().pose.x_m, sim.pose().x_m);
    for _ in 0..100 {
        sim.step(0.01);
    }
    let ratio = (sim.odometry().pose.x_m - odom0) / (sim.pose().x_m - truth0);
    assert!((ratio - 1.0 / 1.03).abs() < 1e-6, "{ratio}");
}

#[test]
fn the_issued_command_is_stamped_when_it_was_decided() {
    let p = DiffDriveParams {
        delay_secs: 0.1,
        ..DiffDriveParams::default()
    };
    let mut sim = driven(p, p, (0.5, 0.2), 1.0);
    let t = sim.time_secs();
    sim.set_command(0.3, -0.1).unwrap();
    sim.step(0.01);
    assert_eq!(sim.issued_command(), (t, 0.3, -0.1));
    assert_eq!(
        sim.applied_command(),
        (0.5, 0.2),
        "the delay still holds the old command"
    );
}
