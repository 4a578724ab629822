//! `~/drive_pattern` (lockstep_interfaces/action/DrivePattern): drives the calibration pattern
//! ([`lockstep_calibrator::Pattern`]) by publishing velocity commands at 20 Hz, steering by the latest
//! observed pose (relative to the pose at the goal's start), until every parameter's uncertainty is below its
//! target (success), the timeout (aborted, naming the parameters still above target), a cancel, or a lost
//! observed pose (aborted). It publishes a zero command when it ends. One goal at a time: another is
//! aborted at once with the reason.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::{FutureExt as _, Stream, StreamExt as _};
use lockstep_calibrator::{wrap, Pattern, Pose};
use lockstep_ros::action_server::{ActionServerCancelRequest, ActionServerGoal, ActionServerGoalRequest};
use r2r::geometry_msgs::msg::{Twist, TwistStamped, Vector3};
use r2r::lockstep_interfaces::action::DrivePattern;

use crate::state::Shared;

/// Command period (wall time).
const PERIOD: Duration = Duration::from_millis(50);
/// Feedback period (wall time).
const FEEDBACK_PERIOD: Duration = Duration::from_millis(500);
/// An observed pose older than this (wall time) stops the drive: the pattern cannot see where it is.
const POSE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a goal waits for a first observed pose (wall time).
const FIRST_POSE_WAIT: Duration = Duration::from_secs(5);
/// The parameters in the order of `Calibrator::uncertainty()` and the result's arrays.
pub const NAMES: [&str; 4] = [
    "wheel_radius_m",
    "track_width_m",
    "delay_secs",
    "centripetal_factor",
];

/// Where the commands go: Twist, or TwistStamped (with `cmd_vel_stamped`).
pub enum CommandOut {
    Plain(r2r::Publisher<Twist>),
    Stamped(r2r::Publisher<TwistStamped>),
}

/// What the action needs of the node.
pub struct Drive {
    pub shared: Shared,
    pub out: CommandOut,
    pub clock: Arc<Mutex<r2r::Clock>>,
    /// Uncertainty targets: radius (m), track width (m), delay (s), beta.
    pub targets: [f64; 4],
    pub logger: String,
}

impl Drive {
    fn now_secs(&self) -> f64 {
        lockstep_ros::time::clock_now(&self.clock).map_or(0.0, |d| d.as_secs_f64())
    }

    fn publish(&self, v: f64, w: f64) {
        let twist = Twist {
            linear: Vector3 { x: v, y: 0.0, z: 0.0 },
            angular: Vector3 { x: 0.0, y: 0.0, z: w },
        };
        let sent = match &self.out {
            CommandOut::Plain(p) => p.publish(&twist),
            CommandOut::Stamped(p) => p.publish(&TwistStamped {
                header: r2r::std_msgs::msg::Header {
                    stamp: lockstep_ros::time::clock_stamp(&self.clock),
                    frame_id: String::new(),
                },
                twist,
            }),
        };
        if let Err(e) = sent {
            r2r::log_warn!(&self.logger, "drive_pattern: cannot publish the command: {e}");
        }
    }

    /// A zero command, three times (the base must not miss it).
    fn stop(&self) {
        for _ in 0..3 {
            self.publish(0.0, 0.0);
        }
    }

    fn uncertainty(&self) -> [f64; 4] {
        self.shared
            .lock()
            .map_or([f64::INFINITY; 4], |s| s.calibrator.uncertainty())
    }

    fn latest_pose(&self) -> Option<(Instant, Pose)> {
        self.shared.lock().ok().and_then(|s| s.latest_pose)
    }
}

/// Each parameter above its target, as `name value (target t)` (`undetermined` for an infinite one).
pub fn above_target(uncertainty: &[f64; 4], targets: &[f64; 4]) -> Vec<String> {
    (NAMES.iter().zip(uncertainty).zip(targets))
        .filter(|((_, u), t)| u.is_nan() || **u >= **t)
        .map(|((name, u), t)| {
            if u.is_finite() {
                format!("{name} {u:.3e} (target {t:.3e})")
            } else {
                format!("{name} undetermined (target {t:.3e})")
            }
        })
        .collect()
}

/// The pattern a goal asks for (0 turn rate: 1 rad/s; 0 timeout: 300 s), or why not.
pub fn pattern_of(goal: &DrivePattern::Goal) -> Result<(Pattern, f64), String> {
    let turn = if goal.max_turn_rate_radps == 0.0 {
        1.0
    } else {
        goal.max_turn_rate_radps
    };
    let timeout = if goal.timeout_s == 0.0 {
        300.0
    } else {
        goal.timeout_s
    };
    if !(timeout.is_finite() && timeout > 0.0) {
        return Err(format!("timeout_s: {timeout} must be finite and > 0 (0: 300 s)"));
    }
    let pattern = Pattern::new(goal.max_radius_m, goal.max_speed_mps, turn).map_err(|e| e.to_string())?;
    Ok((pattern, timeout))
}

/// `b` in the frame of `a`.
fn relative(a: Pose, b: Pose) -> Pose {
    let (s, c) = a.yaw_rad.sin_cos();
    let (dx, dy) = (b.x_m - a.x_m, b.y_m - a.y_m);
    Pose {
        x_m: c * dx + s * dy,
        y_m: -s * dx + c * dy,
        yaw_rad: wrap(b.yaw_rad - a.yaw_rad),
    }
}

type Goal = ActionServerGoal<DrivePattern::Action>;
type Cancels = Box<dyn Stream<Item = ActionServerCancelRequest> + Unpin>;

/// Serves the action: goals are taken one at a time.
pub async fn serve(
    mut requests: impl Stream<Item = ActionServerGoalRequest<DrivePattern::Action>> + Unpin,
    drive: Rc<Drive>,
) {
    let busy = Rc::new(Cell::new(false));
    let (to_runner, mut goals) = mpsc::unbounded::<(Goal, Cancels, Pattern, f64)>();
    let intake = {
        let (busy, drive) = (busy.clone(), drive.clone());
        async move {
            while let Some(request) = requests.next().await {
                let wanted = request.goal.clone();
                let (mut goal, cancels) = match request.accept() {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        r2r::log_error!(&drive.logger, "drive_pattern: cannot answer a goal request ({e})");
                        continue;
                    }
                };
                let refusal = if busy.get() {
                    Err("another drive_pattern goal is running: cancel it first".to_owned())
                } else {
                    pattern_of(&wanted)
                };
                match refusal {
                    Ok((pattern, timeout)) => {
                        busy.set(true);
                        let _ = to_runner.unbounded_send((goal, Box::new(cancels), pattern, timeout));
                    }
                    Err(reason) => {
                        r2r::log_warn!(&drive.logger, "drive_pattern goal refused: {reason}");
                        let _ = goal.abort(DrivePattern::Result {
                            message: reason,
                            parameter_names: NAMES.map(String::from).to_vec(),
                            uncertainty: drive.uncertainty().to_vec(),
                            ..DrivePattern::Result::default()
                        });
                    }
                }
            }
        }
    };
    let runner = async move {
        while let Some((goal, cancels, pattern, timeout)) = goals.next().await {
            run(&drive, goal, cancels, pattern, timeout).await;
            busy.set(false);
        }
    };
    futures::join!(intake, runner);
}

/// How a goal ended.
enum End {
    Succeeded(String),
    Aborted(String),
    Cancelled(String),
}

/// Drives one goal to its end, then stops the robot and ends the goal.
async fn run(drive: &Drive, goal: Goal, mut cancels: Cancels, mut pattern: Pattern, timeout: f64) {
    // With use_sim_time the clock reads zero until the first /clock: the drive's time starts with it.
    let mut t0 = drive.now_secs();
    let logger = &drive.logger;
    r2r::log_info!(
        logger,
        "drive_pattern: started ({:?}, timeout {timeout} s)",
        goal.goal
    );
    let mut ticker = tokio::time::interval(PERIOD);
    let mut last_feedback: Option<Instant> = None;
    let waiting_since = Instant::now();
    let mut start: Option<Pose> = None;
    let end = loop {
        ticker.tick().await;
        let now = drive.now_secs();
        if t0 <= 0.0 {
            t0 = now;
        }
        let elapsed = now - t0;
        while let Some(Some(cancel)) = cancels.next().now_or_never() {
            cancel.accept();
        }
        if goal.is_cancelling().unwrap_or(false) {
            break End::Cancelled(format!("cancelled after {elapsed:.1} s"));
        }
        let uncertainty = drive.uncertainty();
        let above = above_target(&uncertainty, &drive.targets);
        if above.is_empty() {
            break End::Succeeded(format!(
                "every parameter's uncertainty is below its target after {elapsed:.1} s"
            ));
        }
        if elapsed >= timeout {
            break End::Aborted(format!(
                "timed out after {elapsed:.1} s; still above target: {}",
                above.join(", ")
            ));
        }
        let (command, phase) = match steer(drive, &mut pattern, &mut start, elapsed, waiting_since) {
            Ok(steered) => steered,
            Err(end) => break end,
        };
        drive.publish(command.0, command.1);
        if last_feedback.is_none_or(|t| t.elapsed() >= FEEDBACK_PERIOD) {
            last_feedback = Some(Instant::now());
            send_feedback(drive, &goal, elapsed, phase, &uncertainty);
        }
    };
    end_goal(drive, goal, end, t0);
}

/// The command towards the pattern, steered by the observed pose relative to the `start` pose (taken from
/// the first pose seen), with the pattern's phase; or how the goal ends when the poses stopped or never came.
fn steer(
    drive: &Drive,
    pattern: &mut Pattern,
    start: &mut Option<Pose>,
    elapsed: f64,
    waiting_since: Instant,
) -> Result<((f64, f64), &'static str), End> {
    Ok(match (drive.latest_pose(), *start) {
        (Some((at, _)), _) if at.elapsed() > POSE_TIMEOUT && start.is_some() => {
            return Err(End::Aborted(format!(
                "no observed pose (slam_pose) for {:.1} s: cannot keep the robot near its start",
                at.elapsed().as_secs_f64()
            )));
        }
        (Some((_, pose)), Some(origin)) => {
            let (v, w, phase) = pattern.command(elapsed, relative(origin, pose));
            ((v, w), phase)
        }
        (Some((at, pose)), None) if at.elapsed() <= POSE_TIMEOUT => {
            *start = Some(pose);
            ((0.0, 0.0), "start")
        }
        _ if waiting_since.elapsed() > FIRST_POSE_WAIT => {
            return Err(End::Aborted(format!(
                "no observed pose (slam_pose) within {} s: the pattern steers by it",
                FIRST_POSE_WAIT.as_secs()
            )));
        }
        _ => ((0.0, 0.0), "waiting_for_pose"),
    })
}

/// Publish the goal's feedback: time driven, phase and each parameter's uncertainty against its target.
fn send_feedback(drive: &Drive, goal: &Goal, elapsed: f64, phase: &str, uncertainty: &[f64]) {
    let feedback = DrivePattern::Feedback {
        elapsed_s: elapsed,
        phase: phase.into(),
        uncertainty: uncertainty.to_vec(),
        parameter_names: NAMES.map(String::from).to_vec(),
        target: drive.targets.to_vec(),
    };
    if let Err(e) = goal.publish_feedback(feedback) {
        r2r::log_warn!(&drive.logger, "drive_pattern: cannot publish feedback: {e}");
    }
}

/// Stop the robot and end the goal as `end` says, with the uncertainties reached and the time driven
/// since `t0`.
fn end_goal(drive: &Drive, mut goal: Goal, end: End, t0: f64) {
    let logger = &drive.logger;
    drive.stop();
    let result = |success: bool, message: &str| DrivePattern::Result {
        success,
        message: message.to_owned(),
        uncertainty: drive.uncertainty().to_vec(),
        parameter_names: NAMES.map(String::from).to_vec(),
        duration_s: drive.now_secs() - t0,
    };
    let ended = match &end {
        End::Succeeded(m) => {
            r2r::log_info!(logger, "drive_pattern: {m}");
            goal.succeed(result(true, m))
        }
        End::Aborted(m) => {
            r2r::log_warn!(logger, "drive_pattern: {m}");
            goal.abort(result(false, m))
        }
        End::Cancelled(m) => {
            r2r::log_info!(logger, "drive_pattern: {m}");
            goal.cancel(result(false, m))
        }
    };
    if let Err(e) = ended {
        r2r::log_warn!(logger, "drive_pattern: cannot end the goal: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_above_target_are_named_and_undetermined_ones_said_so() {
        let targets = [5e-5, 4e-4, 5e-3, 0.02];
        let above = above_target(&[1e-5, f64::INFINITY, 0.01, 0.01], &targets);
        assert_eq!(
            above,
            [
                "track_width_m undetermined (target 4.000e-4)",
                "delay_secs 1.000e-2 (target 5.000e-3)"
            ]
        );
        assert!(above_target(&[1e-5, 1e-4, 1e-3, 1e-3], &targets).is_empty());
        assert_eq!(above_target(&[f64::NAN, 0.0, 0.0, 0.0], &targets).len(), 1);
    }

    #[test]
    fn goals_default_and_bad_ones_name_the_field() {
        let goal = DrivePattern::Goal {
            max_radius_m: 3.0,
            max_speed_mps: 0.5,
            ..DrivePattern::Goal::default()
        };
        let (_, timeout) = pattern_of(&goal).unwrap();
        assert_eq!(timeout, 300.0);
        let bad = DrivePattern::Goal {
            max_radius_m: -1.0,
            ..goal.clone()
        };
        assert_eq!(
            pattern_of(&bad).unwrap_err(),
            "max_radius_m: -1 must be finite and > 0"
        );
        let bad = DrivePattern::Goal {
            timeout_s: f64::NAN,
            ..goal
        };
        assert!(pattern_of(&bad).unwrap_err().starts_with("timeout_s: NaN"));
    }

    #[test]
    fn a_pose_relative_to_the_start() {
        let a = Pose {
            x_m: 1.0,
            y_m: 1.0,
            yaw_rad: std::f64::consts::FRAC_PI_2,
        };
        let b = Pose {
            x_m: 1.0,
            y_m: 3.0,
            yaw_rad: std::f64::consts::PI,
        };
        let r = relative(a, b);
        assert!((r.x_m - 2.0).abs() < 1e-12 && r.y_m.abs() < 1e-12);
        assert!((r.yaw_rad - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    }
}
