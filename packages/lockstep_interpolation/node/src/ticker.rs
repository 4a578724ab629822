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
use lockstep_interpolation::window::{JointOrder, Window};
use r2r::control_msgs::msg::JointTrajectoryControllerState;
use r2r::lockstep_interfaces::action::MovePlay;
use r2r::std_msgs::msg::Float64MultiArray;
use r2r::trajectory_msgs::msg::{JointTrajectory, JointTrajectoryPoint};

use crate::engine::{install_pending, Active, Config, Engine, Shared};
use crate::goal::Goal;
use crate::params::{list, Output};
use crate::results::{finish, judge, Verdict};
use crate::state::{controller_state, fjt_feedback, wall_stamp};

/// Where each tick's command goes.
pub struct Outputs {
    pub output: Output,
    pub forward: r2r::Publisher<Float64MultiArray>,
    pub trajectory: r2r::Publisher<JointTrajectory>,
    /// `~/controller_state`, in the trajectory-controller mode.
    pub state: Option<r2r::Publisher<JointTrajectoryControllerState>>,
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

/// One tick of the goal being played, if any: its command published, the controller state, feedback now
/// and then, and the goal judged (its result once it ends).
fn tick(
    engine: &mut Engine,
    config: &Config,
    outputs: &Outputs,
    controller_joints: &[String],
    feedback_every: u64,
    woke: Instant,
    window: &mut Window,
) {
    let Engine {
        active,
        measured,
        measured_velocity,
        commanded,
        ..
    } = engine;
    let Some(a) = active.as_mut() else { return };
    let now: Option<Vec<f64>> = a.joints.iter().map(|j| measured.get(j).copied()).collect();
    let velocity: Option<Vec<f64>> = (a.joints.iter())
        .map(|j| measured_velocity.get(j).copied())
        .collect();
    let command = match a.session.tick(now.as_deref()) {
        Ok(positions) => positions.to_vec(),
        Err(e) => {
            finish(active, config, Some(e.to_string()));
            return;
        }
    };
    for (joint, position) in a.joints.iter().zip(&command) {
        commanded.insert(joint.clone(), *position);
    }
    let previous = std::mem::replace(&mut a.last_command, command.clone());
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
    if let Some(state) = &outputs.state {
        let _ = state.publish(&controller_state(a, now.as_deref(), velocity.as_deref()));
    }
    if a.ticks % feedback_every == 0 {
        feedback(a, now.as_deref(), config);
    }
    let previous = if previous.is_empty() {
        a.last_command.clone()
    } else {
        previous
    };
    match judge(a, now.as_deref(), velocity.as_deref(), &previous, config) {
        Verdict::Continue => {}
        Verdict::Stop => {
            let _ = config.stops.send(());
        }
        Verdict::Finished => finish(active, config, None),
    }
}

/// The goal's feedback: MovePlay's state, point, tau and s; FollowJointTrajectory's desired / actual / error.
fn feedback(a: &Active, measured: Option<&[f64]>, config: &Config) {
    let main = a.session.main();
    match &a.goal {
        Goal::MovePlay(goal) => {
            let _ = goal.publish_feedback(MovePlay::Feedback {
                state: a.session.state_name().to_owned(),
                point_index: main.point_index() as u64,
                tau_secs: main.tau(),
                speed_factor: main.speed(),
            });
        }
        Goal::Follow(f) => {
            let secs = a.ticks as f64 * config.params.period_s;
            let _ = (f.handle).publish_feedback(fjt_feedback(
                &a.session,
                &a.joints,
                measured,
                wall_stamp(),
                secs,
            ));
        }
        Goal::Topic(_) | Goal::Answered => {}
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
                time_from_start: lockstep_ros::time::secs_to_duration(
                    (k + 1) as f64 * config.params.period_s,
                ),
                ..Default::default()
            })
            .collect(),
    })
}
