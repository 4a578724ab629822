//! Each outcome of a step, driven on simulated data: accepted (validated only on held-out windows),
//! rejected by validation, rejected because the fit does not explain its own windows (threshold 1),
//! accepted under the best-of-candidates gate, unchanged once converged, and a drift alarm.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{mixed_drive, model, nominal, simulate, true_vehicle};
use lockstep_calibrator::{Calibrator, Config, Gate, Outcome};

const NOISE: (f64, f64) = (0.02, 0.0087);

fn run(config: Config, truth: lockstep_sim::DiffDriveParams, secs: f64) -> (Calibrator, Vec<(f64, Outcome)>) {
    let run = simulate(truth, &mixed_drive(), secs, 1, 20.0, NOISE, 11);
    let mut c = Calibrator::new(config, model(&nominal()));
    let outcomes = run.online(&mut c, 1.0);
    (c, outcomes)
}

fn kinds(outcomes: &[(f64, Outcome)]) -> String {
    outcomes
        .iter()
        .map(|(t, o)| match o {
            Outcome::Waiting(_) => format!("{t}:W "),
            Outcome::Unchanged { .. } => format!("{t}:U "),
            Outcome::Skipped(_) => format!("{t}:S "),
            Outcome::Rejected { .. } => format!("{t}:R "),
            Outcome::Accepted(_) => format!("{t}:A "),
        })
        .collect()
}

#[test]
fn accepted_updates_are_validated_only_on_windows_the_fit_never_used() {
    let (c, outcomes) = run(Config::default(), true_vehicle(), 90.0);
    let windows = c.windows();
    let fitted: Vec<(f64, f64)> = windows.iter().filter(|w| !w.2).map(|w| (w.0, w.1)).collect();
    let held: Vec<(f64, f64)> = windows.iter().filter(|w| w.2).map(|w| (w.0, w.1)).collect();
    assert!(
        !held.is_empty() && fitted.len() >= 3 * held.len() - 3,
        "{windows:?}"
    );
    let mut accepted = 0;
    for (_, o) in &outcomes {
        if let Outcome::Accepted(a) = o {
            accepted += 1;
            assert!(!a.validation.is_empty());
            for s in &a.validation {
                // A validation segment is one of the held-out windows, and overlaps no fitted one.
                assert!(
                    held.iter().any(|h| (h.0 - s.t0_secs).abs() < 1e-9) || s.t1_secs < windows[0].0 + 1e-9,
                    "{s:?} is not a held-out window: {windows:?}"
                );
                assert!(
                    !fitted
                        .iter()
                        .any(|f| f.0 < s.t1_secs - 1e-9 && s.t0_secs < f.1 - 1e-9),
                    "{s:?} overlaps a fitted window"
                );
            }
        }
    }
    assert!(accepted > 0, "{}", kinds(&outcomes));
    let truth = model(&true_vehicle());
    assert!((c.current().wheel_radius_m / truth.wheel_radius_m - 1.0).abs() < 0.005);
}

#[test]
fn a_candidate_the_held_out_windows_do_not_confirm_is_rejected() {
    let config = Config {
        threshold2: 0.3,
        ..Config::default()
    };
    let (c, outcomes) = run(config, true_vehicle(), 45.0);
    let rejected: Vec<_> = outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Rejected {
                segment, threshold2, ..
            } => Some((*segment, *threshold2)),
            _ => None,
        })
        .collect();
    assert!(!rejected.is_empty(), "{}", kinds(&outcomes));
    let held: Vec<f64> = c.windows().iter().filter(|w| w.2).map(|w| w.0).collect();
    for (segment, threshold2) in &rejected {
        assert_eq!(*threshold2, 0.3);
        assert!(segment.residual >= 0.3);
        assert!(
            held.iter().any(|t| (t - segment.t0_secs).abs() < 1e-9),
            "{segment:?}"
        );
    }
    assert_eq!(c.current(), model(&nominal()), "nothing rejected is used");
}

#[test]
fn a_fit_that_does_not_explain_its_own_windows_is_rejected_by_threshold_1() {
    // Threshold 1 at 0.5: no fit explains 2 cm of SLAM noise that well.
    let config = Config {
        gate: Gate::Fixed(0.5),
        ..Config::default()
    };
    let (c, outcomes) = run(config, true_vehicle(), 45.0);
    let over: Vec<_> = outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Rejected {
                segment, threshold2, ..
            } if *threshold2 == 0.5 => Some(*segment),
            _ => None,
        })
        .collect();
    assert!(!over.is_empty(), "{}", kinds(&outcomes));
    // The span is the fitted windows', longer than one window.
    assert!(
        over.iter()
            .all(|s| s.residual >= 0.5 && s.t1_secs - s.t0_secs > 3.0),
        "{over:?}"
    );
    assert!(!outcomes.iter().any(|(_, o)| matches!(o, Outcome::Accepted(_))));
    assert_eq!(c.current(), model(&nominal()));
}

#[test]
fn the_best_of_candidates_gate_accepts_and_then_keeps_the_parameters() {
    let config = Config {
        gate: Gate::BestOfCandidates,
        ..Config::default()
    };
    let (c, outcomes) = run(config, true_vehicle(), 120.0);
    let truth = model(&true_vehicle());
    assert!(
        (c.current().wheel_radius_m / truth.wheel_radius_m - 1.0).abs() < 0.005
            && (c.current().track_width_m / truth.track_width_m - 1.0).abs() < 0.005,
        "{:?}\n{}",
        c.current(),
        kinds(&outcomes)
    );
    // Once converged, most steps keep the parameters: the gate's threshold is the best candidate's.
    let late = &outcomes[outcomes.len() - 30..];
    let unchanged = late
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Unchanged { threshold1, .. } if threshold1.is_finite()))
        .count();
    assert!(unchanged >= 15, "{}", kinds(late));
}

#[test]
fn a_parameter_far_from_nominal_raises_a_drift_alarm() {
    let mut truth = true_vehicle();
    truth.wheel_radius_m = nominal().wheel_radius_m * 1.12;
    let (c, outcomes) = run(Config::default(), truth, 60.0);
    let alarms: Vec<&String> = outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Accepted(a) => Some(&a.alarms),
            _ => None,
        })
        .flatten()
        .collect();
    assert!(
        alarms.iter().any(|a| a.starts_with("wheel radius drifted +12.")),
        "{alarms:?}\n{}",
        kinds(&outcomes)
    );
    assert!((c.current().wheel_radius_m / truth.wheel_radius_m - 1.0).abs() < 0.005);
    // Within 10 %: no alarm.
    let (_, calm) = run(Config::default(), true_vehicle(), 60.0);
    assert!(calm
        .iter()
        .all(|(_, o)| !matches!(o, Outcome::Accepted(a) if !a.alarms.is_empty())));
}
