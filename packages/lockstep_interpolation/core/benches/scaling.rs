//! A joint_trajectory_controller's speed scaling against ours: one FollowJointTrajectory-style trajectory
//! (6 joints, random points, positions only, sampled from rest as the node samples a goal) and 100 random
//! factors on `speed_scaling_input` (0 = pause, else a factor in [0.1, 1]). The baseline sets s to each factor
//! at the next tick, as ros2_controllers' joint_trajectory_controller does; ours turns each into the pause,
//! resume or speed change the node plans (clamped to s_max), within every limit. Same trajectory, same
//! factors at the same ticks, same output period; peaks are finite differences at that period as fractions
//! of each joint's limit. Exits non-zero if ours breaks a limit.
//!
//!   cargo bench -p lockstep_interpolation --bench scaling [-- --messages N --seed S]
#![allow(clippy::expect_used)]

mod common;

use lockstep_interpolation::follow::sample;
use lockstep_interpolation::scaling::request_for;
use lockstep_interpolation::session::{Options, Request, Session};
use lockstep_interpolation::trajectory::{check, JointTrajectory, TrajectoryPoint};
use lockstep_interpolation::{plan, AxisLimits, Interpolation, Phase, Stream};
use rand::{Rng, SeedableRng};

const PERIOD: f64 = 0.002;

fn main() {
    let messages = common::arg("--messages", 100) as usize;
    let seed = common::arg("--seed", 7);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let joints: Vec<String> = (1..=6).map(|i| format!("joint_{i}")).collect();
    let limits: Vec<AxisLimits> = (0..6)
        .map(|i| AxisLimits {
            max_velocity: 1.0 + 0.25 * f64::from(i),
            max_acceleration: 3.0 + f64::from(i),
            max_jerk: Some(30.0 + 10.0 * f64::from(i)),
        })
        .collect();
    // Points 1.5-3 s apart, stretched until the trajectory fits the limits at speed 1.
    let mut positions = vec![vec![0.0; 6]];
    let mut times = vec![0.0];
    for _ in 0..30 {
        positions.push((0..6).map(|_| rng.gen_range(-1.2..1.2)).collect());
        times.push(times.last().copied().unwrap_or(0.0) + rng.gen_range(1.5..3.0));
    }
    positions.push(vec![0.0; 6]);
    times.push(times.last().copied().unwrap_or(0.0) + 3.0);
    let mut stretch = 1.0;
    let (checked, file) = loop {
        let trajectory = JointTrajectory {
            stamp_secs: 0.0,
            joint_names: joints.clone(),
            points: (1..positions.len())
                .map(|k| TrajectoryPoint {
                    positions: positions[k].clone(),
                    time_from_start_secs: times[k] * stretch,
                    ..Default::default()
                })
                .collect(),
        };
        let checked = check(&trajectory, &joints, 0.0).expect("a valid trajectory");
        let from = lockstep_interpolation::follow::StartState::at_rest(vec![0.0; 6]);
        match sample(&checked, &from, &limits, PERIOD) {
            Ok(file) => break (checked, file),
            Err(_) => stretch *= 1.1,
        }
    };
    let options = Options {
        period_secs: PERIOD,
        factor: 1.0,
        align: false,
        tolerance: 1e-3,
        settle_timeout_secs: 1.0,
        interpolation: Interpolation::Cubic,
    };
    let session = Session::follow(&checked, limits.clone(), options, None, &[0.0; 6]).expect("follow");
    let s_max = session.s_max();
    let start = session.main().clone();
    let schedule: Vec<(u32, f64)> = (0..messages)
        .map(|_| {
            let factor = if rng.gen_bool(0.2) {
                0.0
            } else {
                rng.gen_range(0.1..=1.0)
            };
            (rng.gen_range(20..400), factor)
        })
        .collect();
    let (ours, naive, applied, refused) = compare(&start, s_max, &schedule);
    println!("### Speed scaling: {messages} random SpeedScalingFactor messages (seed {seed}), ours against instant scaling\n");
    println!(
        "Trajectory: 6 joints through {} random points, positions only, sampled from rest as a FollowJointTrajectory \
         goal is ({:.1} s at speed 1, stretched {stretch:.2}x to fit the limits); jerk limits, cubic spline for both; \
         output period {} ms; s_max {s_max:.3}. A message every 20-400 ticks: 0 (pause) with probability 0.2, else a \
         factor in [0.1, 1]. Ours: {applied} applied, {refused} refused. Peak |v|, |a|, |j| per joint as a fraction \
         of its limit; alarms = ticks over any limit.\n",
        positions.len() - 1,
        file.duration_secs(),
        PERIOD * 1e3
    );
    let mut over = common::print_peaks(&joints, &ours, &naive, 3);
    // The sequence of test/interpolation/test_trajectory_controller.py: 1 -> 0.3 -> 0 -> 1, 2 s apart.
    let sequence = [(1000, 0.3), (1000, 0.0), (1000, 1.0)];
    let (ours, naive, _, _) = compare(&start, s_max, &sequence);
    println!("### Speed scaling 1 -> 0.3 -> 0 -> 1 (2 s apart) on the same trajectory\n");
    over |= common::print_peaks(&joints, &ours, &naive, 3);
    if over {
        eprintln!("scaling: ours went over a limit");
        std::process::exit(1);
    }
}

/// Ours and the baseline from `start` through `schedule` (ticks after the last message, factor), played to
/// the end; with how many messages ours applied and refused.
fn compare(start: &Stream, s_max: f64, schedule: &[(u32, f64)]) -> (Stream, Stream, usize, usize) {
    let mut ours = start.clone();
    let mut naive = start.clone();
    naive.set_speed_instantly(1.0);
    let (mut applied, mut refused) = (0, 0);
    for (ticks, factor) in schedule {
        for _ in 0..*ticks {
            ours.step();
            naive.step();
        }
        // As the node does: 0 pauses, a factor while paused resumes, else a speed change; above s_max clamped.
        let outcome = match request_for(&ours, s_max, *factor) {
            None => Ok(plan::Plan::NOTHING),
            Some(Request::Pause { stop_secs }) => plan::pause(&mut ours, stop_secs),
            Some(Request::Resume { start_secs, factor }) => {
                plan::resume(&mut ours, start_secs, factor, s_max)
            }
            Some(Request::SetSpeed { factor }) => plan::set_speed(&mut ours, factor, s_max),
            Some(other) => unreachable!("speed scaling asked for {other:?}"),
        };
        match outcome {
            Ok(_) => applied += 1,
            Err(_) => refused += 1,
        }
        naive.set_speed_instantly(*factor);
    }
    while ours.phase() != Phase::Done || naive.phase() != Phase::Done {
        if ours.phase() == Phase::Paused {
            let _ = plan::resume(&mut ours, None, Some(1.0), s_max);
        }
        if naive.speed() == 0.0 {
            naive.set_speed_instantly(1.0);
        }
        ours.step();
        naive.step();
    }
    (ours, naive, applied, refused)
}
