//! The two slip models of the ground: the centripetal one (the default) and the lateral one (sideways sliding
//! in turns, wheel slip while speeding up or braking). The encoders count wheel rotation under either.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{commanded_with, floor, rules_dir, run};
use lockstep_rules::RuleSet;
use lockstep_sim::{DiffDriveParams, Mode, Pose2D, SimConfig, Simulator, SlipModel};

fn lateral(lateral_slip_s: f64, longitudinal_slip_s2pm: f64) -> SlipModel {
    SlipModel::Lateral {
        lateral_slip_s,
        longitudinal_slip_s2pm,
    }
}

/// A commanded simulator on the open floor with true = nominal = `vehicle`, under `slip`.
fn on_floor(vehicle: DiffDriveParams, slip: SlipModel) -> Simulator {
    commanded_with(SimConfig {
        true_vehicle: vehicle,
        nominal_vehicle: vehicle,
        slip,
        cmd_timeout_secs: 0.0,
        ..SimConfig::default()
    })
}

/// `to` seen from `from`: (ahead, to the left) in `from`'s body frame.
fn in_body_frame(from: &Pose2D, to: &Pose2D) -> (f64, f64) {
    let (dx, dy) = (to.x_m - from.x_m, to.y_m - from.y_m);
    let (sin, cos) = from.yaw_rad.sin_cos();
    (dx * cos + dy * sin, -dx * sin + dy * cos)
}

#[test]
fn lateral_model_slides_outward_in_a_turn_and_keeps_the_kinematic_heading() {
    let p = DiffDriveParams::default();
    let k_lat = 0.05;
    let (v, w) = (0.5, 0.5);
    let mut kinematic = on_floor(p, SlipModel::Centripetal);
    let mut sliding = on_floor(p, lateral(k_lat, 0.0));
    for sim in [&mut kinematic, &mut sliding] {
        sim.set_command(v, w).unwrap();
        // Past the ramp up (0.3 s on asphalt): the twist is constant from here on.
        run(sim, 0.5);
    }
    let (k0, s0) = (kinematic.pose(), sliding.pose());
    let secs = 2.0;
    run(&mut kinematic, secs);
    run(&mut sliding, secs);
    let (k1, s1) = (kinematic.pose(), sliding.pose());

    // The yaw rate is the kinematic one under the lateral model.
    assert!((k1.yaw_rad - s1.yaw_rad).abs() < 1e-12, "{k1:?} vs {s1:?}");
    // Over the constant arc, a constant sideways velocity v_y = -k_lat*v*w adds (v_y/w)(cos t - 1, sin t) in
    // the body frame at the arc's start, t the angle turned.
    let turned = w * secs;
    let v_y = -k_lat * v * w;
    let expected = ((v_y / w) * (turned.cos() - 1.0), (v_y / w) * turned.sin());
    let (ka, kl) = in_body_frame(&k0, &k1);
    let (sa, sl) = in_body_frame(&s0, &s1);
    let extra = (sa - ka, sl - kl);
    assert!(
        (extra.0 - expected.0).abs() < 1e-6 && (extra.1 - expected.1).abs() < 1e-6,
        "offset {extra:?}, expected {expected:?}"
    );

    // Over the whole run the sliding vehicle ends to the right of the kinematic one (outward of a left
    // turn), by a couple of centimetres.
    let (ahead, left) = in_body_frame(&k1, &s1);
    assert!(left < -0.02 && left > -0.04, "ahead {ahead}, left {left}");
    // The encoders and odometry see none of it.
    assert_eq!(kinematic.wheels(), sliding.wheels());
    assert_eq!(kinematic.odometry(), sliding.odometry());
    // The lateral model does not use the true centripetal factor.
    let mut with_beta = on_floor(
        DiffDriveParams {
            centripetal_factor: 0.5,
            ..p
        },
        lateral(k_lat, 0.0),
    );
    with_beta.set_command(v, w).unwrap();
    run(&mut with_beta, 0.5 + secs);
    assert_eq!(with_beta.pose(), s1);
}

#[test]
fn straight_constant_driving_is_unaffected_by_either_model() {
    let p = DiffDriveParams::default();
    let models = [
        (p, SlipModel::Centripetal),
        (
            DiffDriveParams {
                centripetal_factor: 0.3,
                ..p
            },
            SlipModel::Centripetal,
        ),
        (p, lateral(0.05, 0.02)),
    ];
    for (vehicle, slip) in models {
        let mut sim = on_floor(vehicle, slip);
        sim.set_command(1.0, 0.0).unwrap();
        run(&mut sim, 1.0);
        let (start, odom_start) = (sim.pose(), sim.odometry().pose);
        run(&mut sim, 3.0);
        let (end, odom_end) = (sim.pose(), sim.odometry().pose);
        let travelled = in_body_frame(&start, &end);
        assert!(
            (travelled.0 - 3.0).abs() < 1e-9 && travelled.1.abs() < 1e-12,
            "{slip:?}: {travelled:?}"
        );
        assert!((end.yaw_rad - start.yaw_rad).abs() < 1e-12, "{slip:?}");
        let counted = odom_end.x_m - odom_start.x_m;
        assert!(
            (counted - travelled.0).abs() < 1e-9,
            "{slip:?}: odometry {counted}"
        );
        assert!((sim.true_twist().0 - 1.0).abs() < 1e-9, "{slip:?}");
    }
}

#[test]
fn wheels_spinning_up_from_rest_cover_less_ground_than_odometry_counts() {
    let p = DiffDriveParams::default();
    let shortfall = |k_long: f64| {
        let mut sim = on_floor(p, lateral(0.05, k_long));
        sim.set_command(1.0, 0.0).unwrap();
        run(&mut sim, 1.0);
        let truth = sim.pose().x_m - sim.start_pose().x_m;
        let odom = sim.odometry();
        assert_eq!(odom.pose.x_m, odom.distance_m);
        (odom.distance_m - truth, sim)
    };
    let (none, _) = shortfall(0.0);
    assert!(
        none.abs() < 1e-12,
        "no wheel slip: the truth is what odometry counts ({none})"
    );
    // Asphalt speeds the wheels up at 2 m/s^2, so the ground gets 1 - 0.02*2 = 96 % of the wheel travel while
    // speeding up (0.26 m of it at 50 Hz steps); at constant speed it gets all of it.
    let k_long = 0.02;
    let (short, sim) = shortfall(k_long);
    let expected = k_long * 2.0 * 0.26;
    assert!(short > 0.0, "the truth is shorter than odometry ({short})");
    assert!((short - expected).abs() < 1e-3, "{short} vs {expected}");
    // Straight driving: no sideways slide, and the encoders count the wheel rotation as always.
    assert_eq!(sim.pose().y_m, sim.start_pose().y_m);
    let mut plain = on_floor(p, SlipModel::Centripetal);
    plain.set_command(1.0, 0.0).unwrap();
    run(&mut plain, 1.0);
    assert_eq!(sim.wheels(), plain.wheels());
    assert_eq!(sim.odometry(), plain.odometry());
}

#[test]
fn the_model_can_change_while_the_vehicle_runs() {
    let p = DiffDriveParams::default();
    let mut sim = on_floor(p, SlipModel::Centripetal);
    let mut plain = on_floor(p, SlipModel::Centripetal);
    for s in [&mut sim, &mut plain] {
        s.set_command(0.5, 0.5).unwrap();
        run(s, 0.5);
    }
    sim.set_slip(lateral(0.05, 0.0)).unwrap();
    assert_eq!(sim.config().slip.name(), "lateral");
    run(&mut sim, 1.0);
    run(&mut plain, 1.0);
    assert!(sim.pose().distance_to(&plain.pose()) > 1e-3);
    assert_eq!(sim.wheels(), plain.wheels());
}

#[test]
fn bad_slip_parameters_are_refused_with_their_name() {
    let build = |slip: SlipModel| {
        let rules = RuleSet::load(rules_dir().join("surface.dl")).unwrap();
        let config = SimConfig {
            mode: Mode::Commanded,
            slip,
            ..SimConfig::default()
        };
        Simulator::new(floor(), rules, config)
    };
    for (slip, name) in [
        (lateral(-0.1, 0.0), "lateral_slip_s"),
        (lateral(f64::INFINITY, 0.0), "lateral_slip_s"),
        (lateral(0.05, f64::NAN), "longitudinal_slip_s2pm"),
        (lateral(0.05, -1e-9), "longitudinal_slip_s2pm"),
    ] {
        let e = build(slip).unwrap_err().to_string();
        assert!(e.contains(name), "{slip:?}: {e}");
    }
    assert!(build(lateral(0.0, 0.0)).is_ok());

    // At run time: refused, and the model in force stays.
    let mut sim = build(lateral(0.05, 0.02)).unwrap();
    let e = sim.set_slip(lateral(f64::NAN, 0.0)).unwrap_err().to_string();
    assert!(e.contains("lateral_slip_s"), "{e}");
    assert_eq!(sim.config().slip, lateral(0.05, 0.02));

    // From parameters: a name outside the list is refused with the accepted names.
    let e = SlipModel::from_parameters("sideways", 0.05, 0.02)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("slip_model") && e.contains("`centripetal`") && e.contains("`lateral`"),
        "{e}"
    );
    let e = SlipModel::from_parameters("centripetal", 0.05, -2.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("longitudinal_slip_s2pm"), "{e}");
    assert_eq!(
        SlipModel::from_parameters("lateral", 0.05, 0.02).unwrap(),
        lateral(0.05, 0.02)
    );
    assert_eq!(
        SlipModel::from_parameters("centripetal", 0.05, 0.02).unwrap(),
        SlipModel::Centripetal
    );
    for name in SlipModel::NAMES {
        assert_eq!(SlipModel::from_parameters(name, 0.0, 0.0).unwrap().name(), *name);
    }
}
