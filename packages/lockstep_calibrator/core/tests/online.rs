//! The online calibrator on simulated drives with known parameters.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use lockstep_calibrator::{Calibrator, Config, ModelParams, Outcome, Parameter};

const NOISE: (f64, f64) = (0.02, 0.5 * std::f64::consts::PI / 180.0);

fn summary(outcomes: &[(f64, Outcome)]) -> String {
    outcomes
        .iter()
        .map(|(t, o)| match o {
            Outcome::Accepted(a) => format!("{t:.1} accepted {:?}\n", a.params),
            other => format!("{t:.1} {other:?}\n"),
        })
        .collect()
}

/// Asserts radius and track width within `tolerance` (relative) of the truth; (estimate, truth, log).
fn assert_geometry_within(
    c: &Calibrator,
    outcomes: &[(f64, Outcome)],
    tolerance: f64,
) -> (ModelParams, ModelParams, String) {
    let truth = model(&true_vehicle());
    let got = c.current();
    let log = summary(outcomes);
    for (name, a, b) in [
        ("radius", got.wheel_radius_m, truth.wheel_radius_m),
        ("track width", got.track_width_m, truth.track_width_m),
    ] {
        assert!((a / b - 1.0).abs() < tolerance, "{name}: {got:?}\n{log}");
    }
    (got, truth, log)
}

#[test]
fn a_mixed_drive_recovers_radius_track_delay_and_beta() {
    let run = simulate(true_vehicle(), &mixed_drive(), 150.0, 1, 20.0, NOISE, 3);
    let mut c = Calibrator::new(Config::default(), model(&nominal()));
    let outcomes = run.online(&mut c, 1.0);
    let (got, truth, log) = assert_geometry_within(&c, &outcomes, 0.005);
    assert!(
        (got.delay_secs - truth.delay_secs).abs() <= 0.010,
        "{got:?}\n{log}"
    );
    let last = outcomes.iter().rev().find_map(|(_, o)| match o {
        Outcome::Accepted(a) => Some(a.clone()),
        _ => None,
    });
    let last = last.expect("an accepted update");
    assert!(
        last.std[3] > 0.0,
        "beta is reported with its uncertainty: {last:?}"
    );
    assert!(
        (got.centripetal_factor - truth.centripetal_factor).abs() < 4.0 * last.std[3] + 0.05,
        "{got:?} {last:?}"
    );
    assert!(
        last.validation.len() == 2 && last.validation.iter().all(|s| s.residual < 2.0),
        "{last:?}"
    );
    // Once the parameters explain the drive, the gate keeps them.
    let tail = &outcomes[outcomes.len() - 10..];
    assert!(
        tail.iter().any(|(_, o)| matches!(o, Outcome::Unchanged { .. })),
        "{log}"
    );
}

#[test]
fn straight_driving_never_changes_the_track_width_and_says_why() {
    let run = simulate(true_vehicle(), &straight_drive(), 40.0, 1, 20.0, NOISE, 4);
    let mut c = Calibrator::new(Config::default(), model(&nominal()));
    let outcomes = run.online(&mut c, 1.0);
    assert_eq!(c.current().track_width_m, model(&nominal()).track_width_m);
    assert_eq!(c.current().centripetal_factor, 0.0);
    let said = outcomes.iter().any(|(_, o)| match o {
        Outcome::Accepted(a) => a
            .refused
            .iter()
            .any(|r| r.contains("track width and beta refused: straight driving")),
        Outcome::Unchanged { refused, .. } => refused.iter().any(|r| r.contains("straight driving")),
        _ => false,
    });
    assert!(said, "{}", summary(&outcomes));
    // The radius is still found.
    assert!(
        (c.current().wheel_radius_m / model(&true_vehicle()).wheel_radius_m - 1.0).abs() < 0.01,
        "{}",
        summary(&outcomes)
    );
    // The track width and beta stayed nominal, each with the driving that would determine it and what
    // the drive had of it; the radius and the delay were estimated.
    let needs = c.needs();
    let text: String = needs.iter().map(|n| format!("{n}\n")).collect();
    let names: Vec<Parameter> = needs.iter().map(|n| n.parameter).collect();
    assert_eq!(
        names,
        [Parameter::TrackWidth, Parameter::CentripetalFactor],
        "{text}"
    );
    assert!(needs.iter().all(|n| n.windows_determined == 0), "{text}");
    assert!(
        needs[0].to_string().starts_with(
            "track width: needs turns in place of at least 0.5 rad (29 deg) within one 3 s window"
        ) && needs[0].advice.contains("(no window turned more than 0.0"),
        "{text}"
    );
    assert!(
        needs[1].advice.contains("two or more different |v*omega| levels")
            && needs[1].advice.contains("at least 0.05 m/s^2 apart"),
        "{text}"
    );
    assert!(!c.drive().nothing_determined());
}

#[test]
fn standing_still_changes_nothing() {
    let run = simulate(true_vehicle(), &[(0.0, 0.0, 1.0)], 30.0, 1, 20.0, NOISE, 5);
    let mut c = Calibrator::new(Config::default(), model(&nominal()));
    let outcomes = run.online(&mut c, 1.0);
    assert_eq!(c.current(), model(&nominal()));
    assert!(
        outcomes.iter().all(|(_, o)| !matches!(o, Outcome::Accepted(_))),
        "{}",
        summary(&outcomes)
    );
    assert!(
        outcomes.iter().any(|(_, o)| matches!(o, Outcome::Unchanged { refused, .. } if refused.iter().any(|r| r.contains("standing still")))),
        "{}",
        summary(&outcomes)
    );
    // Nothing determined: every parameter needs its driving, and the drive had none of it.
    assert!(c.drive().nothing_determined(), "{:?}", c.drive());
    let needs = c.needs();
    let text: String = needs.iter().map(|n| format!("{n}\n")).collect();
    assert_eq!(needs.len(), 4, "{text}");
    for (need, (driving, had)) in needs.iter().zip([
        (
            "needs straight runs of at least 0.3 m within one 3 s window",
            "(the farthest any 3 s window went was 0.0",
        ),
        (
            "needs turns in place of at least 0.5 rad",
            "(no window turned more than 0.0",
        ),
        ("needs command steps", "(no window held a command step)"),
        (
            "at two or more different |v*omega| levels",
            "(no window turned more than 0.0",
        ),
    ]) {
        assert!(
            need.advice.contains(driving) && need.advice.contains(had),
            "{need}"
        );
    }
}

#[test]
fn with_no_history_it_waits_and_says_so() {
    let run = simulate(true_vehicle(), &mixed_drive(), 7.0, 1, 20.0, NOISE, 6);
    let mut c = Calibrator::new(Config::default(), model(&nominal()));
    let outcomes = run.online(&mut c, 1.0);
    assert!(
        outcomes.iter().all(|(_, o)| matches!(o, Outcome::Waiting(_))),
        "{}",
        summary(&outcomes)
    );
    assert!(summary(&outcomes).contains("no history to validate against yet"));
}

#[test]
fn slam_jumps_do_not_drag_the_fit_and_never_pass_validation() {
    let mut run = simulate(true_vehicle(), &mixed_drive(), 200.0, 1, 20.0, NOISE, 7);
    // Relocalization glitches: single poses 0.6 m off, every 10 s.
    let mut jumps = Vec::new();
    for p in run.poses.iter_mut() {
        if (p.t_secs % 10.0) < 0.05 && p.t_secs > 5.0 {
            p.pose.x_m += 0.6;
            jumps.push(p.t_secs);
        }
    }
    assert!(jumps.len() >= 10);
    let mut c = Calibrator::new(Config::default(), model(&nominal()));
    let outcomes = run.online(&mut c, 1.0);
    // 1 %, not the 0.5 % of the clean drive: the gate (threshold 1) closes once a 3 s window cannot tell the
    // estimate from the truth, and the skipped windows leave fewer fits before that.
    let (_, _, log) = assert_geometry_within(&c, &outcomes, 0.01);
    assert!(
        outcomes
            .iter()
            .any(|(_, o)| matches!(o, Outcome::Skipped(s) if s.contains("jumps"))),
        "{log}"
    );
    // No accepted update validated on a segment holding a jump.
    for (_, o) in &outcomes {
        if let Outcome::Accepted(a) = o {
            for s in &a.validation {
                assert!(
                    !jumps.iter().any(|j| *j >= s.t0_secs && *j <= s.t1_secs),
                    "{s:?} holds a jump"
                );
            }
        }
    }
}

#[test]
fn a_three_percent_radius_step_is_accepted_within_30_s() {
    let step_at = 90.0;
    let mut stepped = true_vehicle();
    stepped.wheel_radius_m *= 1.03;
    let run = simulate_with_change(
        true_vehicle(),
        Some((step_at, stepped)),
        &mixed_drive(),
        150.0,
        1,
        20.0,
        NOISE,
        5,
    );
    let mut c = Calibrator::new(Config::default(), model(&nominal()));
    let outcomes = run.online(&mut c, 1.0);
    let log = summary(&outcomes[80..]);
    let new = stepped.wheel_radius_m;
    let accepted_at = outcomes.iter().find_map(|(t, o)| match o {
        Outcome::Accepted(a) if *t > step_at && (a.params.wheel_radius_m / new - 1.0).abs() < 0.005 => {
            Some(*t)
        }
        _ => None,
    });
    let took = accepted_at.map(|t| t - step_at);
    eprintln!("a +3 % radius step accepted {took:?} s after it");
    assert!(took.is_some_and(|s| s <= 30.0), "{took:?}\n{log}");
}
