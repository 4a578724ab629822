//! The parameters' defaults, rules and checks.
use super::*;

#[test]
fn defaults_are_the_library_defaults() {
    let p = CalibratorParams::default();
    assert_eq!(p.config().unwrap(), Config::default());
    assert_eq!(p.nominal().unwrap(), ModelParams::default());
    assert_eq!(p.pose_type().unwrap(), PoseType::WithCovariance);
    assert_eq!(p.wheel_source().unwrap(), WheelSource::Odometry);
    assert_eq!(p.targets().unwrap(), [0.00005, 0.0004, 0.005, 0.02]);
}

#[test]
fn defaults_follow_the_rules_and_a_bad_set_is_refused_with_the_range() {
    use r2r::{ParameterValue, RosParams as _};
    assert!(lockstep_ros::param_rules::check_all(&mut CalibratorParams::default()).is_ok());
    let mut p = lockstep_ros::Guarded::new(CalibratorParams::default());
    let e = p
        .set_parameter("window_secs", &ParameterValue::Double(f64::NAN))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("parameter 'window_secs' = NaN: must be finite and in [0.1, 3600] s"),
        "{e}"
    );
    let e = p
        .set_parameter("nominal.wheel_radius_m", &ParameterValue::Double(f64::INFINITY))
        .unwrap_err()
        .to_string();
    assert!(e.contains("'nominal.wheel_radius_m' = inf"), "{e}");
    assert_eq!(p.window_secs, Config::default().window_secs);
}

#[test]
fn bad_values_name_the_parameter() {
    let p = CalibratorParams {
        window_secs: f64::NAN,
        ..CalibratorParams::default()
    };
    assert!(p.config().unwrap_err().to_string().contains("`window_secs`"));
    let p = CalibratorParams {
        gate: "loose".into(),
        ..CalibratorParams::default()
    };
    assert!(p.config().unwrap_err().to_string().contains("`gate` is `loose`"));
    let mut p = CalibratorParams::default();
    p.nominal.wheel_radius_m = 0.0;
    assert!(p
        .nominal()
        .unwrap_err()
        .to_string()
        .contains("nominal.wheel_radius_m"));
    let p = CalibratorParams {
        pose_type: "Odometry".into(),
        ..CalibratorParams::default()
    };
    assert!(p.pose_type().unwrap_err().to_string().contains("`pose_type`"));
    let p = CalibratorParams {
        wheel_source: "joint_states".into(),
        right_wheel_joint: "left_wheel_joint".into(),
        ..CalibratorParams::default()
    };
    assert!(p
        .wheel_source()
        .unwrap_err()
        .to_string()
        .contains("both `left_wheel_joint`"));
    let p = CalibratorParams {
        target_delay_std_s: 0.0,
        ..CalibratorParams::default()
    };
    assert!(p
        .targets()
        .unwrap_err()
        .to_string()
        .contains("`target_delay_std_s` is 0"));
}
