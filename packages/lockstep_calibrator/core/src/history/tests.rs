//! The history's checks on entry, its memory, and the wheel steps of odometry and of encoders.

use super::*;

fn odom(t: f64, x: f64) -> OdomSample {
    OdomSample {
        t_secs: t,
        pose: Pose {
            x_m: x,
            ..Pose::default()
        },
        v_mps: 0.5,
        w_radps: 0.0,
    }
}

#[test]
fn nan_and_out_of_order_samples_are_dropped_counted_and_named() {
    let mut h = History::new(ModelParams::default(), 100.0);
    h.push_odom(odom(1.0, 0.0)).unwrap();
    let e = h.push_odom(odom(2.0, f64::NAN)).unwrap_err();
    assert_eq!(e.to_string(), "odom at t=2: pose.x is not finite");
    let e = h.push_odom(odom(0.5, 0.0)).unwrap_err();
    assert!(e.to_string().contains("not after the latest sample (t=1)"), "{e}");
    h.push_odom(odom(2.0, 0.5)).unwrap();
    let e = h
        .push_command(CommandSample {
            t_secs: f64::INFINITY,
            v_mps: 0.0,
            w_radps: 0.0,
        })
        .unwrap_err();
    assert!(matches!(e, Dropped::NotFinite { field: "stamp", .. }));
    let d = h.dropped();
    assert_eq!((d.not_finite, d.out_of_order), ([1, 1, 0], [0, 1, 0]));
    // The good samples made one wheel step: 0.5 m straight = 10 rad on each 0.05 m wheel.
    let w = h.window(0.0, 3.0, 0.0);
    assert_eq!(w.steps.len(), 1);
    assert!((w.steps[0].d_left_rad - 10.0).abs() < 1e-9 && (w.steps[0].d_right_rad - 10.0).abs() < 1e-9);
}

fn pose(t: f64) -> PoseSample {
    PoseSample {
        t_secs: t,
        pose: Pose::default(),
        noise: None,
    }
}

#[test]
fn a_far_future_stamp_is_dropped_and_counted_and_does_not_block_the_stream() {
    let mut h = History::new(ModelParams::default(), 100.0);
    for i in 0..5 {
        h.push_odom(odom(f64::from(i), 0.0)).unwrap();
        h.push_pose(pose(f64::from(i))).unwrap();
    }
    let e = h.push_pose(pose(2_147_483_647.0)).unwrap_err();
    assert!(matches!(e, Dropped::FarFuture { .. }), "{e}");
    assert!(e.to_string().contains("a stamp in the far future"), "{e}");
    // The stream goes on, and nothing was forgotten.
    h.push_pose(pose(5.0)).unwrap();
    h.push_odom(odom(5.0, 0.0)).unwrap();
    assert_eq!(h.complete_until(), Some(5.0));
    assert_eq!(h.window(0.0, 5.0, 0.0).poses.len(), 6);
    let d = h.dropped();
    assert_eq!((d.far_future, d.out_of_order), ([0, 0, 1], [0, 0, 1]));
}

#[test]
fn a_real_jump_of_the_clock_is_followed_and_clear_takes_any_stamp_again() {
    let mut h = History::new(ModelParams::default(), 100.0);
    h.push_pose(pose(1.0)).unwrap();
    let far = 1e6;
    for k in 0..FAR_FUTURE_CONFIRM {
        assert!(h.push_pose(pose(far + f64::from(k))).is_err());
    }
    h.push_pose(pose(far + 100.0)).unwrap();
    h.push_odom(odom(far + 100.5, 0.0)).unwrap();
    // Before a reset, older stamps are out of order; after it, any stamp starts over.
    assert!(h.push_pose(pose(2.0)).is_err());
    h.clear();
    h.push_pose(pose(2.0)).unwrap();
    assert_eq!(h.dropped().far_future, [0, 0, u64::from(FAR_FUTURE_CONFIRM)]);
}

/// A drive's wheel angles, and the odometry a base with `nominal` computes from them (mid-heading
/// integration, its heading slipped by the nominal beta).
fn encoders_and_odometry(nominal: ModelParams) -> (Vec<WheelSample>, Vec<OdomSample>) {
    let dt = 0.01;
    let (mut wheels, mut odoms) = (Vec::new(), Vec::new());
    let (mut left, mut right, mut pose) = (0.0, 0.0, Pose::default());
    for i in 0..600 {
        let t = f64::from(i) * dt;
        // Straight, then an arc, then a turn in place (wheel speeds in rad/s).
        let (wl, wr) = match i {
            0..200 => (10.0, 10.0),
            200..400 => (6.0, 12.0),
            _ => (-4.0, 4.0),
        };
        if i > 0 {
            let (dl, dr) = (wl * dt, wr * dt);
            left += dl;
            right += dr;
            let (l, r) = (dl * nominal.left_radius_m(), dr * nominal.right_radius_m());
            let distance = 0.5 * (l + r);
            let theta = nominal.slipped_yaw_rate(distance / dt, (r - l) / nominal.track_width_m / dt) * dt;
            let mid = pose.yaw_rad + 0.5 * theta;
            pose = Pose {
                x_m: pose.x_m + distance * mid.cos(),
                y_m: pose.y_m + distance * mid.sin(),
                yaw_rad: pose.yaw_rad + theta,
            };
            odoms.push(OdomSample {
                t_secs: t,
                pose,
                v_mps: distance / dt,
                w_radps: theta / dt,
            });
        } else {
            odoms.push(OdomSample {
                t_secs: t,
                pose,
                v_mps: 0.0,
                w_radps: 0.0,
            });
        }
        wheels.push(WheelSample {
            t_secs: t,
            left_rad: left,
            right_rad: right,
            left_radps: Some(wl),
            right_radps: Some(wr),
        });
    }
    (wheels, odoms)
}

#[test]
fn wheel_encoders_give_the_steps_the_equivalent_odometry_gives() {
    let nominal = ModelParams {
        centripetal_factor: 0.3,
        wheel_radius_asymmetry: 0.01,
        ..ModelParams::default()
    };
    let (wheels, odoms) = encoders_and_odometry(nominal);
    let mut from_odom = History::new(nominal, 100.0);
    let mut from_wheels = History::new(nominal, 100.0);
    // Without velocities in the message: from the angle changes (constant within each step here).
    let mut from_angles = History::new(nominal, 100.0);
    for (w, o) in wheels.iter().zip(&odoms) {
        from_odom.push_odom(*o).unwrap();
        from_wheels.push_wheels(*w).unwrap();
        from_angles
            .push_wheels(WheelSample {
                left_radps: None,
                right_radps: None,
                ..*w
            })
            .unwrap();
    }
    let a = from_odom.window(0.0, 6.0, 0.0).steps;
    assert_eq!(a.len(), 599);
    for other in [&from_wheels, &from_angles] {
        let b = other.window(0.0, 6.0, 0.0).steps;
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!((x.t0_secs, x.t1_secs), (y.t0_secs, y.t1_secs));
            for (u, v) in [
                (x.d_left_rad, y.d_left_rad),
                (x.d_right_rad, y.d_right_rad),
                (x.left_radps, y.left_radps),
                (x.right_radps, y.right_radps),
            ] {
                assert!((u - v).abs() < 1e-9, "{x:?} vs {y:?}");
            }
        }
    }
}

#[test]
fn bad_wheel_samples_are_dropped_as_odometry_is() {
    let mut h = History::new(ModelParams::default(), 100.0);
    let sample = |t: f64, left: f64| WheelSample {
        t_secs: t,
        left_rad: left,
        right_rad: 0.0,
        left_radps: None,
        right_radps: (t == 6.0).then_some(f64::INFINITY),
    };
    h.push_wheels(sample(1.0, 0.0)).unwrap();
    let e = h.push_wheels(sample(2.0, f64::NAN)).unwrap_err();
    assert_eq!(e.to_string(), "odom at t=2: left wheel position is not finite");
    let e = h.push_wheels(sample(0.5, 0.0)).unwrap_err();
    assert!(matches!(e, Dropped::OutOfOrder { .. }), "{e}");
    let e = h.push_wheels(sample(6.0, 1.0)).unwrap_err();
    assert!(
        e.to_string().contains("right wheel velocity is not finite"),
        "{e}"
    );
    let e = h.push_wheels(sample(1e6, 1.0)).unwrap_err();
    assert!(matches!(e, Dropped::FarFuture { .. }), "{e}");
    h.push_wheels(sample(2.0, 1.0)).unwrap();
    let d = h.dropped();
    assert_eq!(
        (d.not_finite, d.out_of_order, d.far_future),
        ([0, 2, 0], [0, 2, 0], [0, 1, 0])
    );
    let steps = h.window(0.0, 3.0, 0.0).steps;
    assert_eq!(steps.len(), 1);
    assert_eq!((steps[0].d_left_rad, steps[0].left_radps), (1.0, 1.0));
}

#[test]
fn old_data_is_forgotten() {
    let mut h = History::new(ModelParams::default(), 5.0);
    for i in 0..20 {
        h.push_odom(odom(f64::from(i), f64::from(i))).unwrap();
    }
    assert_eq!(h.complete_from(), None, "no pose yet");
    let w = h.window(0.0, 20.0, 0.0);
    assert!(w.steps.iter().all(|s| s.t0_secs >= 14.0), "{:?}", w.steps.first());
}
