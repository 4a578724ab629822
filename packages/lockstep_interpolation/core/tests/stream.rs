//! The stream and its planner on generated files: the interpolation formula, pause / resume / speed changes
//! within the limits, refusals with their numbers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{limits_for, quintic_file, run_until, stream, WAYPOINTS};
use lockstep_interpolation::plan::{self, Refusal};
use lockstep_interpolation::{Interpolation, InterpolationFile, Phase};

const T: f64 = 0.002;

#[test]
fn a_2_ms_file_at_1_3_and_4_ms_matches_the_interpolation_formula() {
    let file = quintic_file(T, &WAYPOINTS, 0.5, 0.05);
    for tc in [0.001, 0.003, 0.004] {
        let mut s = stream(file.clone(), limits_for(0.5, 0.5, false), tc);
        let s_max = plan::s_max(&s);
        plan::start(&mut s, 1.0, s_max).unwrap();
        let mut k = 0u32;
        while s.phase() != Phase::Done {
            k += 1;
            let got = s.step().to_vec();
            // The linear formula, written out: k = floor(t/T), w = t/T - k, (1 - w) P_k + w P_(k+1).
            let t = (f64::from(k) * tc).min(file.duration_secs());
            let i = ((t / T).floor() as usize).min(file.points.len() - 1);
            let w = t / T - i as f64;
            let next = &file.points[(i + 1).min(file.points.len() - 1)];
            for (axis, got) in got.iter().enumerate() {
                let expected = (1.0 - w) * file.points[i][axis] + w * next[axis];
                assert!((got - expected).abs() < 1e-12, "T_c {tc}, tick {k}, axis {axis}");
            }
        }
        assert_eq!(s.alarms(), 0, "T_c {tc}: {:?}", s.first_alarm());
    }
}

/// Pause at `at_tick`; returns the plan, after checking the stop: within the plan's time plus one period, on
/// the path, no alarm, the hold point repeated.
fn pause_and_check(
    s: &mut lockstep_interpolation::Stream,
    file: &InterpolationFile,
    stop: Option<f64>,
) -> plan::Plan {
    let plan = plan::pause(s, stop).unwrap();
    let max_ticks = ((plan.total_secs() + s.period_secs()) / s.period_secs()).ceil() as u64 + 1;
    let ticks = run_until(s, Phase::Paused, max_ticks);
    assert!(
        ticks as f64 * s.period_secs() <= plan.total_secs() + s.period_secs() + 1e-9,
        "stopped after {ticks} ticks, plan {plan:?}"
    );
    let mut on_path = Vec::new();
    file.position_at(s.tau(), &mut on_path);
    assert_eq!(s.position(), &on_path[..]);
    let hold = s.position().to_vec();
    for _ in 0..10 {
        assert_eq!(s.step(), &hold[..], "the hold point keeps coming");
    }
    assert_eq!(s.alarms(), 0, "{:?} after {plan:?}", s.first_alarm());
    plan
}

#[test]
fn pause_anywhere_stops_on_the_path_within_the_limits_and_resume_finishes() {
    let file = quintic_file(T, &WAYPOINTS, 0.5, 0.05);
    let limits = limits_for(0.5, 0.9, false);
    // Every 10 ms through the first move, including the instant it starts accelerating (tick 25-26).
    for pause_tick in (20..300).step_by(5) {
        let mut s = stream(file.clone(), limits.clone(), T);
        let s_max = plan::s_max(&s);
        plan::start(&mut s, 1.0, s_max).unwrap();
        for _ in 0..pause_tick {
            s.step();
        }
        let plan = pause_and_check(&mut s, &file, None);
        assert!(plan.t_feasible_secs >= plan.t_min_secs - 1e-12, "{plan:?}");
        plan::resume(&mut s, None, None, s_max).unwrap();
        run_until(&mut s, Phase::Done, 100_000);
        assert_eq!(s.alarms(), 0, "pause at tick {pause_tick}: {:?}", s.first_alarm());
        assert_eq!(s.position(), &file.points[file.points.len() - 1][..]);
    }
}

#[test]
fn a_stop_time_below_t_min_is_refused_at_once_and_one_below_t_feasible_with_both_numbers() {
    let file = quintic_file(T, &WAYPOINTS, 0.5, 0.05);
    let mut s = stream(file, limits_for(0.5, 0.9, false), T);
    let s_max = plan::s_max(&s);
    plan::start(&mut s, 1.0, s_max).unwrap();
    for _ in 0..150 {
        s.step(); // mid-move, near the peak velocity
    }
    // Below the lower bound: refused without a search, naming t_min.
    let Err(Refusal::BelowMinimum { t_min_secs, .. }) = plan::pause(&mut s, Some(0.01)) else {
        panic!("a 10 ms stop from full speed was not refused");
    };
    assert!(t_min_secs > 0.01, "{t_min_secs}");
    let message = plan::pause(&mut s, Some(0.01)).unwrap_err().to_string();
    assert!(message.contains("t_min"), "{message}");
    // The shortest feasible stop, from a pause without a stop time on a copy.
    let t_feasible_secs = plan::pause(&mut s.clone(), None).unwrap().total_secs();
    assert!(t_feasible_secs >= t_min_secs, "{t_min_secs} {t_feasible_secs}");
    // Between t_min and t_feasible: refused with both numbers (when the two differ at all).
    if t_feasible_secs > t_min_secs + 2.0 * T {
        let Err(Refusal::TooShort {
            t_min_secs: t_min2,
            t_feasible_secs: t_feasible2,
            ..
        }) = plan::pause(&mut s, Some(0.5 * (t_min_secs + t_feasible_secs)))
        else {
            panic!("a stop between t_min and t_feasible was not refused");
        };
        assert!((t_min2 - t_min_secs).abs() < 1e-12 && (t_feasible2 - t_feasible_secs).abs() < 1e-9);
    }
    // The request at t_feasible is accepted, and still playing: nothing changed by the refusals.
    assert_eq!(s.phase(), Phase::Playing);
    let plan = plan::pause(&mut s, Some(t_feasible_secs)).unwrap();
    assert!((plan.total_secs() - t_feasible_secs).abs() < 1e-9, "{plan:?}");
}

#[test]
fn speed_override_changes_the_duration_and_is_bounded_by_s_max() {
    let file = quintic_file(T, &WAYPOINTS, 0.5, 0.05);
    // At s = 1 the file uses 20 % of the acceleration limit: s_max is about sqrt(5) = 2.2.
    let limits = limits_for(0.5, 0.2, false);
    let mut durations = Vec::new();
    for factor in [1.0, 2.0, 0.5] {
        let mut s = stream(file.clone(), limits.clone(), T);
        let s_max = plan::s_max(&s);
        assert!((2.0..2.4).contains(&s_max), "s_max {s_max}");
        plan::start(&mut s, 1.0, s_max).unwrap();
        for _ in 0..10 {
            s.step();
        }
        plan::set_speed(&mut s, factor, s_max).unwrap();
        let ticks = run_until(&mut s, Phase::Done, 100_000) + 10;
        assert_eq!(s.alarms(), 0, "factor {factor}: {:?}", s.first_alarm());
        durations.push(ticks as f64 * T);
        let refused = plan::set_speed(&mut stream(file.clone(), limits.clone(), T), s_max * 1.01, s_max);
        assert!(matches!(refused, Err(Refusal::AboveMax { .. })), "{refused:?}");
    }
    let played = file.duration_secs();
    assert!((durations[0] - played).abs() < 0.01, "{durations:?} vs {played}");
    assert!((durations[1] - played / 2.0).abs() < 0.05, "{durations:?}");
    assert!((durations[2] - played * 2.0).abs() < 0.05, "{durations:?}");
}

/// Random requests at random instants (seeded), including resumes while still pausing and speed changes
/// during ramps; every accepted plan is run, and no tick may break a limit. Returns (accepted, refused).
fn random_requests(jerk: bool, seed: u64, requests: usize) -> (usize, usize) {
    random_requests_with(jerk, Interpolation::Linear, seed, requests)
}

fn random_requests_with(
    jerk: bool,
    interpolation: Interpolation,
    seed: u64,
    requests: usize,
) -> (usize, usize) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let file = quintic_file(T, &WAYPOINTS, 0.5, 0.05);
    let mut s = stream(file, limits_for(0.5, 0.4, jerk), T).interpolated(interpolation);
    let s_max = plan::s_max(&s);
    plan::start(&mut s, 1.0, s_max).unwrap();
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..requests {
        for _ in 0..rng.gen_range(1..120) {
            s.step();
        }
        let outcome = match rng.gen_range(0..3) {
            0 => plan::pause(&mut s, None),
            1 => plan::resume(&mut s, None, Some(rng.gen_range(0.3..s_max)), s_max),
            _ => plan::set_speed(&mut s, rng.gen_range(0.3..s_max), s_max),
        };
        match outcome {
            Ok(_) => accepted += 1,
            Err(_) => refused += 1,
        }
        assert_eq!(s.alarms(), 0, "seed {seed}: {:?}", s.first_alarm());
    }
    for _ in 0..2000 {
        s.step();
    }
    assert_eq!(s.alarms(), 0, "seed {seed}: {:?}", s.first_alarm());
    for (axis, peak) in s.peaks().iter().enumerate() {
        assert!(
            peak.iter().all(|p| *p <= 1.0 + 1e-9),
            "seed {seed}, axis {axis}: {peak:?}"
        );
    }
    (accepted, refused)
}

#[test]
fn limits_hold_through_20_random_pause_resume_and_speed_changes() {
    for seed in 0..10 {
        let (accepted, _) = random_requests(false, seed, 20);
        assert!(
            accepted >= 8,
            "seed {seed}: only {accepted} of 20 requests accepted"
        );
    }
}

#[test]
fn jerk_limits_hold_through_20_random_changes_on_the_cubic_spline() {
    for seed in 0..10 {
        let (accepted, _) = random_requests_with(true, Interpolation::Cubic, seed, 20);
        assert!(
            accepted >= 8,
            "seed {seed}: only {accepted} of 20 requests accepted"
        );
    }
}

/// Why the spline: mid-move, the linear interpolation's velocity steps at every file point, so under a jerk
/// limit a pause must wait for a stretch where the steps are small (or is refused); on the spline the same
/// pause starts at once as an S-curve and ends sooner. (Linear interpolation at a steady s != 1 also breaks
/// the jerk limit between changes: the node refuses `interpolation: linear` with jerk limits.)
#[test]
fn a_pause_mid_move_under_a_jerk_limit_starts_at_once_on_the_spline() {
    let file = quintic_file(T, &WAYPOINTS, 0.5, 0.05);
    let pause_at = |interpolation| {
        let mut s = stream(file.clone(), limits_for(0.5, 0.4, true), T).interpolated(interpolation);
        let s_max = plan::s_max(&s);
        plan::start(&mut s, 1.0, s_max).unwrap();
        // 0.1 s into the first move, near its largest acceleration (the velocity steps a * T at each point).
        for _ in 0..((0.05 + 0.1) / T) as usize {
            s.step();
        }
        (plan::pause(&mut s, None).unwrap(), s)
    };
    let (linear, _) = pause_at(Interpolation::Linear);
    let (cubic, mut s) = pause_at(Interpolation::Cubic);
    assert!(
        linear.delay_secs > 0.0 && cubic.delay_secs == 0.0,
        "{linear:?} {cubic:?}"
    );
    assert!(
        cubic.total_secs() < 0.6 * linear.total_secs(),
        "{linear:?} {cubic:?}"
    );
    run_until(&mut s, Phase::Paused, 20_000);
    assert_eq!(s.alarms(), 0, "{:?}", s.first_alarm());
    assert!(s.peaks().iter().all(|p| p[2] <= 1.0 + 1e-9), "{:?}", s.peaks());
}
