//! The output loop: one tick of the goal being played every `period_s`, on its own thread.
//!
//! Why a thread: the node's tokio runtime is one thread that also spins the node, and one `spin_once`
//! may block it for up to `lockstep_ros::SPIN_TIMEOUT` (1 ms) while nothing arrives, so a tokio interval of
//! 2 ms fired 0.3 ms late at the median (measured: p50 2.28 ms). Here each tick sleeps until an absolute
//! deadline (start + k * period). A tick more than one period late moves the schedule instead of bursting
//! to catch up: tau never jumps ahead, and a late tick is reported, not hidden.
//!
//! With `output:=trajectory` a tick sends a window of the next `trajectory_window_points` commands (header
//! stamp the tick's time, point k at (k + 1) * period_s), as a joint_trajectory_controller is fed: a new window every
//! `trajectory_resend_ticks`, and at once when the motion ahead changed (a pause, resume, speed change or
//! cancel, or the joints reaching the first point after an alignment).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lockstep_interpolation::preview::preview;
use lockstep_interpolation::timing::Summary;
use lockstep_interpolation::window::{JointOrder, Window};
use r2r::builtin_interfaces::msg::Duration as DurationMsg;
use r2r::lockstep_interfaces::action::MovePlay;
use r2r::std_msgs::msg::Float64MultiArray;
use r2r::trajectory_msgs::msg::{JointTrajectory, JointTrajectoryPoint};

use crate::engine::{install_pending, Active, Config, Engine, Shared};
use crate::params::{list, Output};

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
    let mut window = Window::default();
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
        if let Some(active) = engine.active.as_mut() {
            install_pending(active);
        }
        tick(
            &mut engine,
            config,
            outputs,
            &controller_joints,
            feedback_every,
            woke,
            &mut window,
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
    window: &mut Window,
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
    let order = JointOrder::new(&a.joints, controller_joints);
    let replanned = std::mem::take(&mut a.replanned);
    let sent = match outputs.output {
        Output::Forward => outputs.forward.publish(&Float64MultiArray {
            data: order.arrange(&command),
            ..Default::default()
        }),
        Output::Trajectory => {
            let resend_ticks = config.params.trajectory_resend_ticks as u64;
            if window.due(a.ticks, replanned, resend_ticks, &command) {
                send_window(a, command, &order, config, outputs, window)
            } else {
                Ok(())
            }
        }
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

/// Sends a new window: this tick's `command`, then the session's next ones, point k at (k + 1) * period_s.
fn send_window(
    a: &Active,
    command: Vec<f64>,
    order: &JointOrder,
    config: &Config,
    outputs: &Outputs,
    window: &mut Window,
) -> r2r::Result<()> {
    let n = config.params.trajectory_window_points as usize;
    let mut points = Vec::with_capacity(n);
    points.push(command);
    points.extend(preview(&a.session, n - 1));
    *window = Window {
        sent_at: a.ticks,
        points,
    };
    outputs.trajectory.publish(&JointTrajectory {
        // The tick's time: a controller samples the window at (now - stamp), so a window that arrives late
        // continues the motion where it is instead of restarting the timeline.
        header: r2r::std_msgs::msg::Header {
            stamp: wall_stamp(),
            ..Default::default()
        },
        joint_names: order.names.clone(),
        points: (window.points.iter().enumerate())
            .map(|(k, p)| JointTrajectoryPoint {
                positions: order.arrange(p),
                time_from_start: duration((k + 1) as f64 * config.params.period_s),
                ..Default::default()
            })
            .collect(),
    })
}

/// `secs` as a message duration (rounded to the nanosecond).
fn duration(secs: f64) -> DurationMsg {
    let nanos = (secs * 1e9).round() as u64;
    DurationMsg {
        sec: (nanos / 1_000_000_000) as i32,
        nanosec: (nanos % 1_000_000_000) as u32,
    }
}

/// The system time as a message stamp (ROS time of a node not on simulated time).
fn wall_stamp() -> r2r::builtin_interfaces::msg::Time {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    lockstep_ros::time::ns_to_time(ns)
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
