//! Files generated from waypoints: within every limit at speed 1, through each waypoint, and playable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stream, WAYPOINTS};
use lockstep_interpolation::generate::{generate, GenerateError};
use lockstep_interpolation::validate::check_file;
use lockstep_interpolation::{plan, AxisLimits, Phase};

fn limits(jerk: Option<f64>) -> Vec<AxisLimits> {
    let l = |v, a| AxisLimits {
        max_velocity: v,
        max_acceleration: a,
        max_jerk: jerk,
    };
    vec![l(1.5, 4.0), l(1.0, 3.0), l(2.0, 6.0)]
}

fn joints() -> Vec<String> {
    vec!["shoulder".into(), "elbow".into(), "wrist".into()]
}

#[test]
fn generated_files_stay_within_the_limits_and_play_without_alarm() {
    let waypoints: Vec<Vec<f64>> = WAYPOINTS.iter().map(|w| w.to_vec()).collect();
    for jerk in [None, Some(40.0)] {
        let limits = limits(jerk);
        let file = generate(&joints(), &waypoints, &limits, 0.002).unwrap();
        check_file(&file, &limits).unwrap();
        // Every waypoint is a point of the file, in order.
        let mut from = 0;
        for w in &waypoints {
            let at = file.points[from..]
                .iter()
                .position(|p| p == w)
                .expect("waypoint in the file");
            from += at;
        }
        // Each segment takes at least its slowest axis's distance at full velocity.
        let lower: f64 = waypoints
            .windows(2)
            .map(|p| {
                (0..3)
                    .map(|i| (p[1][i] - p[0][i]).abs() / limits[i].max_velocity)
                    .fold(0.0, f64::max)
            })
            .sum();
        assert!(
            file.duration_secs() >= lower,
            "{} < {lower}",
            file.duration_secs()
        );
        // Played as recorded at its own period: no tick over a limit, jerk included.
        let mut s = stream(file.clone(), limits.clone(), 0.002);
        let s_max = plan::s_max(&s);
        assert!(s_max >= 1.0, "s_max {s_max}");
        plan::start(&mut s, 1.0, s_max).unwrap();
        while s.phase() != Phase::Done {
            s.step();
        }
        assert_eq!(s.alarms(), 0, "jerk {jerk:?}: {:?}", s.first_alarm());
        let peak_a = s.peaks().iter().map(|p| p[1]).fold(0.0, f64::max);
        assert!(
            peak_a > 0.9,
            "time-optimal segments use the acceleration limit: peak {peak_a}"
        );
        if jerk.is_some() {
            let peak_j = s.peaks().iter().map(|p| p[2]).fold(0.0, f64::max);
            assert!(
                peak_j > 0.5 && peak_j <= 1.0 + 1e-6,
                "peak jerk fraction {peak_j}"
            );
        }
    }
}

#[test]
fn bad_input_is_named() {
    let one = vec![vec![0.0, 0.0, 0.0]];
    assert_eq!(
        generate(&joints(), &one, &limits(None), 0.002),
        Err(GenerateError::TooFewWaypoints(1))
    );
    let ragged = vec![vec![0.0, 0.0, 0.0], vec![0.0, 0.0]];
    let e = generate(&joints(), &ragged, &limits(None), 0.002).unwrap_err();
    assert_eq!(e.to_string(), "waypoint 1 has 2 positions for 3 joints");
    let two = vec![vec![0.0, 0.0, 0.0], vec![1.0, 0.0, 0.0]];
    assert!(matches!(
        generate(&joints(), &two, &limits(None), 0.0),
        Err(GenerateError::Period(_))
    ));
}
