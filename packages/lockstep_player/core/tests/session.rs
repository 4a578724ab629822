//! A MovePlay goal's session: alignment to the first point when the robot is elsewhere, then the section.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{limits_for, quintic_file, WAYPOINTS};
use lockstep_player::session::{Options, Session, SessionError, State};
use lockstep_player::Monitor;

fn options(align: bool) -> Options {
    Options {
        period_secs: 0.002,
        factor: 1.0,
        align,
        tolerance: 1e-4,
        settle_timeout_secs: 1.0,
        interpolation: lockstep_player::Interpolation::Linear,
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
