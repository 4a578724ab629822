//! The output loop: one tick of the goal being played every `period_s`, on its own thread.
//!
//! Why a thread: the node's tokio runtime is one thread that also spins the node, and one `spin_once`
//! may block it for up to `lockstep_ros::SPIN_TIMEOUT` (1 ms) while nothing arrives, so a tokio interval of
//! 2 ms fired 0.3 ms late at the median (measured: p50 2.28 ms). Here each tick sleeps until an absolute
//! deadline (start + k * period). A tick more than one period late moves the schedule instead of bursting
//! to catch up: tau never jumps ahead, and a late tick is reported, not hidden.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lockstep_player::timing::Summary;
use r2r::lockstep_interfaces::action::MovePlay;
use r2r::std_msgs::msg::Float64MultiArray;
use r2r::trajectory_msgs::msg::{JointTrajectory, JointTrajectoryPoint};

use crate::params::{list, Output};
use crate::{Active, Config, Engine, Shared};

/// Where each tick's command goes.
pub struct Outputs {
    pub output: Output,
    pub forward: r2r::Publisher<Float64MultiArray>,
    pub trajectory: r2r::Publisher<JointTrajectory>,
}

/// The running tick thread; dropping it stops and joins the thread (before the node is torn down).
pub struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    pub fn start(shared: Shared, config: Arc<Config>, outputs: Outputs) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("player-ticks".into())
                .spawn(move || run(&shared, &config, &outputs, &stop))?
        };
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(shared: &Shared, config: &Config, outputs: &Outputs, stop: &AtomicBool) {
    let period = Duration::from_secs_f64(config.params.period_s);
    let feedback_every = (config.params.feedback_period_s / config.params.period_s)
        .round()
        .max(1.0) as u64;
    let controller_joints = list(&config.params.controller_joints);
    let mut deadline = Instant::now() + period;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
        let woke = Instant::now();
        deadline = if woke > deadline + period {
            woke + period
        } else {
            deadline + period
        };
        let Ok(mut engine) = shared.lock() else { return };
        tick(
            &mut engine,
            config,
            outputs,
            &controller_joints,
            feedback_every,
            woke,
        );
    }
}

/// One tick of the goal being played, if any: its command published, feedback now and then, and the result
/// once it ends.
fn tick(
    engine: &mut Engine,
    config: &Config,
    outputs: &Outputs,
    controller_joints: &[String],
    feedback_every: u64,
    woke: Instant,
) {
    let Engine { active, measured } = engine;
    let Some(a) = active.as_mut() else { return };
    let now: Option<Vec<f64>> = a.joints.iter().map(|j| measured.get(j).copied()).collect();
    let command = match a.session.tick(now.as_deref()) {
        Ok(positions) => positions.to_vec(),
        Err(e) => {
            finish(active, config, Some(e.to_string()));
            return;
        }
    };
    a.ticks += 1;
    a.intervals.mark(woke, None);
    let order = if controller_joints.is_empty() {
        &a.joints
    } else {
        controller_joints
    };
    let values: Vec<f64> = order
        .iter()
        .map(|j| {
            a.joints
                .iter()
                .position(|k| k == j)
                .map_or(f64::NAN, |i| command[i])
        })
        .collect();
    let sent = match outputs.output {
        Output::Forward => outputs.forward.publish(&Float64MultiArray {
            data: values,
            ..Default::default()
        }),
        Output::Trajectory => outputs.trajectory.publish(&JointTrajectory {
            joint_names: order.to_vec(),
            points: vec![JointTrajectoryPoint {
                positions: values,
                ..Default::default()
            }],
            ..Default::default()
        }),
    };
    if let Err(e) = sent {
        r2r::log_error!(&config.logger, "publishing a command: {e}");
    }
    if a.ticks % feedback_every == 0 {
        let main = a.session.main();
        let _ = a.goal.publish_feedback(MovePlay::Feedback {
            state: a.session.state_name().to_owned(),
            point_index: main.point_index() as u64,
            tau_secs: main.tau(),
            speed_factor: main.speed(),
        });
    }
    if a.session.finished() {
        finish(active, config, None);
    }
}

/// End the goal being played: its result, succeeded (or cancelled) or aborted with `error`.
pub fn finish(active: &mut Option<Active>, config: &Config, error: Option<String>) {
    let Some(mut a) = active.take() else { return };
    let main = a.session.main();
    let peaks = main.peaks();
    let alarms = a.session.alarms();
    let valid = error.is_none() && alarms == 0 && peaks.iter().all(|p| p.iter().all(|f| *f <= 1.0 + 1e-6));
    let cancelled = a.session.cancelled();
    let message = match (&error, cancelled) {
        (Some(e), _) => e.clone(),
        (None, true) => "cancelled: stopped along the path".to_owned(),
        (None, false) => "played to the end".to_owned(),
    };
    let result = MovePlay::Result {
        points_played: a.session.points_played(),
        alarm_count: alarms as u32,
        joint_names: a.joints.clone(),
        peak_velocity_fraction: peaks.iter().map(|p| p[0]).collect(),
        peak_acceleration_fraction: peaks.iter().map(|p| p[1]).collect(),
        peak_jerk_fraction: peaks.iter().map(|p| p[2]).collect(),
        max_tracking_error: a.session.max_tracking_error(),
        valid,
        message: message.clone(),
    };
    r2r::log_info!(
        &config.logger,
        "goal ended: {message} (valid {valid}, {alarms} alarms)"
    );
    if let Some(timing) = Summary::of(&a.intervals.secs, config.params.period_s) {
        r2r::log_info!(&config.logger, "tick timing: {timing}");
    }
    let _ = match (error.is_some(), cancelled) {
        (true, _) => a.goal.abort(result),
        (false, true) => a.goal.cancel(result),
        (false, false) => a.goal.succeed(result),
    };
}
