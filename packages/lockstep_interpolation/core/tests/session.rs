//! A MovePlay goal's session: alignment to the first point when the robot is elsewhere, then the section.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{limits_for, quintic_file, WAYPOINTS};
use lockstep_interpolation::session::{Options, Request, Session, SessionError, Stale, State};
use lockstep_interpolation::Monitor;
use lockstep_interpolation::Refusal;

fn options(align: bool) -> Options {
    Options {
        period_secs: 0.002,
        factor: 1.0,
        align,
        tolerance: 1e-4,
        settle_timeout_secs: 1.0,
        interpolation: lockstep_interpolation::Interpolation::Linear,
    }
}

/// Run a session against ideal joints (measured = last command), checking every command like the mock
/// hardware does; (ticks, alarms seen by the hardware, final position).
fn run(session: &mut Session, start: &[f64]) -> (u64, u64, Vec<f64>) {
    let limits = limits_for(0.5, 0.9, false);
    let mut hardware = Monitor::new(0.002, limits);
    hardware.push(start);
    let mut measured = start.to_vec();
    let (mut ticks, mut alarms) = (0, 0);
    while !session.finished() {
        let command = session.tick(Some(&measured)).unwrap().to_vec();
        alarms += u64::from(hardware.push(&command).is_some());
        measured = command;
        ticks += 1;
        assert!(ticks < 100_000);
    }
    (ticks, alarms, measured)
}

#[test]
fn aligns_from_elsewhere_then_plays_and_without_alignment_the_hardware_alarms() {
    let file = Arc::new(quintic_file(0.002, &WAYPOINTS, 0.5, 0.05));
    let limits = limits_for(0.5, 0.9, false);
    let away = [0.3, -0.2, 0.25];
    let mut session = Session::new(file.clone(), limits.clone(), -1, -1, Some(&away), options(true)).unwrap();
    assert_eq!(session.state(), State::Aligning);
    let (ticks, alarms, last) = run(&mut session, &away);
    assert_eq!(alarms, 0);
    assert_eq!(session.alarms(), 0);
    assert_eq!(last, file.points[file.points.len() - 1]);
    assert!(
        ticks > file.points.len() as u64,
        "the alignment adds ticks: {ticks}"
    );

    // Already there: no alignment.
    let at_start = Session::new(
        file.clone(),
        limits.clone(),
        -1,
        -1,
        Some(&file.points[0]),
        options(true),
    )
    .unwrap();
    assert_eq!(at_start.state(), State::Playing);

    // Alignment off: the first command jumps, and the hardware says so.
    let mut jump = Session::new(file.clone(), limits, -1, -1, Some(&away), options(false)).unwrap();
    let (_, alarms, _) = run(&mut jump, &away);
    assert!(alarms > 0, "a jump of 0.3 rad in one tick went unnoticed");
}

#[test]
fn a_section_starts_at_its_own_point_and_bad_sections_are_refused() {
    let file = Arc::new(quintic_file(0.002, &WAYPOINTS, 0.5, 0.05));
    let limits = limits_for(0.5, 0.9, false);
    let middle = 200;
    // From mid-move (it ramps up from s = 0) to a point at rest between two moves.
    let end = 560;
    let mut session = Session::new(
        file.clone(),
        limits.clone(),
        middle,
        end,
        Some(&file.points[0]),
        options(true),
    )
    .unwrap();
    assert_eq!(
        session.state(),
        State::Aligning,
        "the section's start is not the file's"
    );
    let (_, alarms, last) = run(&mut session, &file.points[0].clone());
    assert_eq!(alarms, 0);
    assert_eq!(last, file.points[end as usize]);
    let e = Session::new(file.clone(), limits.clone(), 600, 200, None, options(true)).unwrap_err();
    assert!(matches!(e, SessionError::Section { .. }), "{e}");
    let e = Session::new(file.clone(), limits, 0, 400, None, options(true)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("the section ends at point 400 while joint"),
        "{e}"
    );
}

/// A session playing the section from its first point, `ticks` into it.
fn playing(ticks: u64) -> Session {
    let file = Arc::new(quintic_file(0.002, &WAYPOINTS, 0.5, 0.05));
    let mut s = Session::new(
        file.clone(),
        limits_for(0.5, 0.9, false),
        -1,
        -1,
        None,
        options(true),
    )
    .unwrap();
    for _ in 0..ticks {
        s.tick(None).unwrap();
    }
    s
}

/// A trajectory back to the start of the section (all joints at 0) in 3 s, positions only.
fn back_to_start() -> lockstep_interpolation::trajectory::Checked {
    let file = quintic_file(0.002, &WAYPOINTS, 0.5, 0.05);
    let trajectory = lockstep_interpolation::trajectory::JointTrajectory {
        stamp_secs: 0.0,
        joint_names: file.joints.clone(),
        points: vec![lockstep_interpolation::trajectory::TrajectoryPoint {
            positions: file.points[0].clone(),
            time_from_start_secs: 3.0,
            ..Default::default()
        }],
    };
    lockstep_interpolation::trajectory::check(&trajectory, &file.joints, 0.0).unwrap()
}

/// The commands of the next `n` ticks.
fn commands(s: &mut Session, n: usize) -> Vec<Vec<f64>> {
    (0..n).map(|_| s.tick(None).unwrap().to_vec()).collect()
}

#[test]
fn a_plan_prepared_ahead_and_installed_at_its_tick_moves_exactly_as_if_asked_there() {
    for request in [
        Request::Pause { stop_secs: None },
        Request::Pause { stop_secs: Some(0.4) },
        Request::SetSpeed { factor: 0.5 },
        Request::Cancel,
        Request::Replace {
            trajectory: Arc::new(back_to_start()),
            factor: 1.0,
        },
    ] {
        let ahead = 7;
        let mut live = playing(150);
        let prepared = live.prepare(request.clone(), ahead).unwrap();
        assert_eq!(prepared.at_tick, 150 + ahead);
        // The live session keeps its own plan meanwhile...
        let mut reference = live.clone();
        let before = commands(&mut live, ahead as usize);
        assert_eq!(before, commands(&mut reference, ahead as usize));
        // ...and from the tick the plan starts, moves as a session asked at that tick does.
        let plan = live.install(prepared).unwrap();
        let asked_there = reference
            .apply(match request.clone() {
                Request::Pause { stop_secs: Some(t) } => Request::Pause {
                    stop_secs: Some(t - ahead as f64 * 0.002),
                },
                other => other,
            })
            .unwrap();
        assert_eq!(
            commands(&mut live, 400),
            commands(&mut reference, 400),
            "{request:?}"
        );
        if matches!(request, Request::Replace { .. }) {
            // Nothing to answer but the motion: it took over without breaking a limit.
            assert_eq!(live.alarms(), 0);
            continue;
        }
        // The answer counts from when it was asked.
        assert!(
            (plan.total_secs() - (asked_there.total_secs() + ahead as f64 * 0.002)).abs() < 1e-9,
            "{request:?}: {plan:?} vs {asked_there:?}"
        );
    }
}

#[test]
fn a_plan_ready_too_late_is_stale_and_changes_nothing() {
    let mut live = playing(150);
    let prepared = live.prepare(Request::Pause { stop_secs: None }, 3).unwrap();
    let mut reference = live.clone();
    commands(&mut live, 4);
    commands(&mut reference, 4);
    assert!(matches!(
        live.install(prepared),
        Err(Stale::Late {
            at_tick: 153,
            now: 154
        })
    ));
    assert_eq!(commands(&mut live, 100), commands(&mut reference, 100));
    assert_eq!(live.main().phase(), reference.main().phase());
}

#[test]
fn a_stop_time_sooner_than_the_ticks_ahead_is_below_the_minimum_counted_from_now() {
    let live = playing(150);
    let Err(Refusal::BelowMinimum {
        requested_secs,
        t_min_secs,
        ..
    }) = live.prepare(
        Request::Pause {
            stop_secs: Some(0.004),
        },
        5,
    )
    else {
        panic!("a 4 ms stop asked 10 ms ahead was accepted");
    };
    assert_eq!(requested_secs, 0.004);
    assert!(t_min_secs > 0.010, "{t_min_secs}");
    // Refusals that have nothing to do with time stay what they are.
    let e = live.prepare(Request::SetSpeed { factor: 1e9 }, 5).unwrap_err();
    assert!(matches!(e, Refusal::AboveMax { .. }), "{e}");
}
