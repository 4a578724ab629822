//! `lockstep calibrate`'s numeric options with any number: taken, or refused with the range; never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use clap::Parser as _;
use lockstep_calibrator::cli::{calibrate, CalibrateArgs};
use lockstep_calibrator::ranges;
use proptest::prelude::*;

/// `lockstep calibrate ...` as the `lockstep` binary parses it.
#[derive(clap::Parser, Debug)]
struct Lockstep {
    #[command(flatten)]
    calibrate: CalibrateArgs,
}

const OPTIONS: [(&str, lockstep_ranges::Real); 5] = [
    ("--nominal-radius-m", ranges::WHEEL_RADIUS_M),
    ("--nominal-track-m", ranges::TRACK_WIDTH_M),
    ("--window-secs", ranges::WINDOW_SECS),
    ("--pose-sigma-xy-m", ranges::POSE_SIGMA_XY_M),
    ("--pose-sigma-yaw-rad", ranges::POSE_SIGMA_YAW_RAD),
];

fn any_number() -> impl Strategy<Value = f64> {
    prop_oneof![
        proptest::num::f64::ANY,
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(5e-324),
        Just(1e-300),
        Just(1e308),
        -1.0..20.0,
        proptest::num::u64::ANY.prop_map(f64::from_bits),
    ]
}

#[test]
fn a_nan_window_is_refused_with_the_range() {
    let e = Lockstep::try_parse_from(["calibrate", "bag", "--window-secs", "NaN"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("NaN is out of range: must be finite and in [0.1, 3600] s"),
        "{e}"
    );
    // A library caller gets the same words.
    let mut args = Lockstep::try_parse_from(["calibrate", "bag"]).unwrap().calibrate;
    args.pose_sigma_xy_m = 1e-300;
    let e = calibrate(&args).unwrap_err();
    assert!(
        format!("{e:#}")
            .contains("--pose-sigma-xy-m 1e-300 is out of range: must be finite and in [1e-6, 100] m"),
        "{e:#}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_number_on_any_option_is_taken_or_refused_with_the_range(
        x in any_number(), which in 0..OPTIONS.len(), exp in proptest::bool::ANY,
    ) {
        let (option, range) = OPTIONS[which];
        let text = if exp { format!("{x:e}") } else { format!("{x}") };
        let dir = tempfile::tempdir().unwrap();
        let bag = dir.path().join("no_such_bag");
        let parsed = Lockstep::try_parse_from([
            "calibrate".to_owned(), bag.display().to_string(), format!("{option}={text}"),
        ]);
        match parsed {
            Ok(cli) => {
                prop_assert!(range.contains(x), "{} {} was taken", option, text);
                // Past the numbers: the missing bag is the error.
                let e = format!("{:#}", calibrate(&cli.calibrate).unwrap_err());
                prop_assert!(e.contains("cannot open bag"), "{}", e);
            }
            Err(e) => {
                let e = e.to_string();
                prop_assert!(!range.contains(x), "{}", e);
                prop_assert!(e.contains(&format!("must be {range}")), "{}", e);
            }
        }
    }
}

#[test]
fn the_holdout_is_0_for_off_or_in_its_range_and_the_controller_name_a_node_name() {
    let parse = |extra: &[&str]| Lockstep::try_parse_from(["calibrate", "bag"].iter().chain(extra));
    let a = parse(&[]).unwrap().calibrate;
    assert_eq!(a.holdout_secs, 20.0);
    assert_eq!(a.controller_name, "diff_drive_controller");
    assert_eq!(
        parse(&["--holdout-secs", "0"]).unwrap().calibrate.holdout_secs,
        0.0
    );
    for bad in ["0.5", "NaN", "-1", "1e9"] {
        let option = format!("--holdout-secs={bad}");
        let e = parse(&[&option]).unwrap_err().to_string();
        assert!(
            e.contains("must be finite and in [1, 86400] s (or 0: off)"),
            "{e}"
        );
    }
    let e = parse(&["--controller-name", "a b"]).unwrap_err().to_string();
    assert!(e.contains("`a b` is not a ROS 2 node name: "), "{e}");
    // A library caller gets the same words.
    let mut args = a.clone();
    args.holdout_secs = f64::NAN;
    let e = format!("{:#}", calibrate(&args).unwrap_err());
    assert!(
        e.contains("--holdout-secs NaN is out of range: must be finite and in [1, 86400] s (or 0: off)"),
        "{e}"
    );
    args.holdout_secs = 0.0;
    args.controller_name = "robot/".into();
    let e = format!("{:#}", calibrate(&args).unwrap_err());
    assert!(
        e.starts_with("--controller-name `robot/` is not a ROS 2 node name: "),
        "{e}"
    );
}
