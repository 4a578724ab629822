//! `lockstep_mock_joints`: position-controlled joints for tests and demos without hardware, like
//! ros2_control's mock_components: takes `<controller>/commands` (std_msgs/Float64MultiArray, `joints`
//! order) or `<controller>/joint_trajectory` (followed like a joint_trajectory_controller: each message
//! replaces the trajectory from where the joints are commanded, sampled every command period), moves each
//! joint to its command (at once, or with a first-order lag of `lag_time_constant_s`), publishes
//! `joint_states` every `state_period_s`, and raises an overspeed alarm whenever a commanded step needs more
//! than a joint's velocity, acceleration or jerk limit (finite differences at the command period,
//! `lockstep_player::Monitor`): a log line and a message on `~/alarm` (std_msgs/String) naming the joint, the
//! quantity and the values. Names are relative: `-r __ns:=/arm1` moves them all.
//!
//! The command period is `command_period_s`, or when that is 0 (the default) `period_s`, the player's
//! parameter: one parameter file with a `/**:` section (or both nodes' sections) configures both.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::{future, StreamExt};
use lockstep_player::timing::{Intervals, Summary};
use lockstep_player::{JointLimits, Monitor};
use lockstep_ros::{lock, qos, SharedNode};
use r2r::sensor_msgs::msg::JointState;
use r2r::std_msgs::msg::{Float64MultiArray, String as StringMsg};
use r2r::trajectory_msgs::msg::JointTrajectory;

#[derive(r2r::RosParams, Debug, Clone)]
struct MockParams {
    /// Comma-separated joint names (the command's order).
    joints: String,
    /// Comma-separated start positions (empty: all 0).
    initial_positions: String,
    /// Joint-limits YAML (ros2_control layout) the alarm checks against.
    limits_file: String,
    /// The controller whose command topic this takes (/<controller>/commands and /<controller>/joint_trajectory).
    controller: String,
    /// Period of the commands [s]: the finite differences of the alarm assume one command per period; 0: period_s.
    command_period_s: f64,
    /// The player's output period [s], the command period when command_period_s is 0 (so one parameter file sets both nodes).
    period_s: f64,
    /// Seconds between two /joint_states.
    state_period_s: f64,
    /// Time constant of a first-order response to the commands [s] (a drive that lags); 0: the joints are at each command at once.
    lag_time_constant_s: f64,
}

impl Default for MockParams {
    fn default() -> Self {
        Self {
            joints: String::new(),
            initial_positions: String::new(),
            limits_file: String::new(),
            controller: "forward_position_controller".into(),
            command_period_s: 0.0,
            period_s: 0.002,
            state_period_s: 0.01,
            lag_time_constant_s: 0.0,
        }
    }
}

/// What each parameter may hold, checked at start and on every run-time set (read at start only: a valid
/// set is refused too, with a reason saying to restart the node).
const RULES: &[lockstep_ros::ParamRule] = &[
    lockstep_ros::ParamRule::non_empty("joints"),
    lockstep_ros::ParamRule::non_empty("limits_file"),
    lockstep_ros::ParamRule::non_empty("controller"),
    lockstep_ros::ParamRule::real("command_period_s", lockstep_ros::Real::closed(0.0, 10.0, "s")),
    lockstep_ros::ParamRule::real("period_s", lockstep_player::PERIOD_S),
    lockstep_ros::ParamRule::real("state_period_s", lockstep_ros::Real::closed(1e-4, 60.0, "s")),
    lockstep_ros::ParamRule::real("lag_time_constant_s", lockstep_ros::Real::closed(0.0, 60.0, "s")),
];

impl lockstep_ros::ParamRules for MockParams {
    fn param_rules() -> &'static [lockstep_ros::ParamRule] {
        RULES
    }
}

struct Joints {
    names: Vec<String>,
    /// Where the joints are (published on /joint_states).
    positions: Vec<f64>,
    /// The last command.
    targets: Vec<f64>,
    monitor: Monitor,
    alarms: u64,
    /// Time between two commands of the current burst; summarised once commands pause.
    intervals: Intervals,
    /// The JointTrajectory being followed, if any.
    following: Option<Following>,
}

/// A JointTrajectory being followed: from `from` (the command when it came) to each point at its time.
struct Following {
    from: Vec<f64>,
    /// (time_from_start [s], positions in `joints` order).
    points: Vec<(f64, Vec<f64>)>,
    /// Command periods since it came, times the period [s].
    elapsed: f64,
}

impl Following {
    /// The position at `elapsed` (linear between points, as a joint_trajectory_controller does with
    /// positions only), and whether the trajectory is over.
    fn sample(&self) -> (Vec<f64>, bool) {
        let t = self.elapsed;
        let next = self.points.iter().position(|(at, _)| *at >= t - 1e-12);
        let Some(i) = next else {
            return (
                self.points.last().map(|(_, p)| p.clone()).unwrap_or_default(),
                true,
            );
        };
        let (t0, p0) = if i == 0 {
            (0.0, &self.from)
        } else {
            (self.points[i - 1].0, &self.points[i - 1].1)
        };
        let (t1, p1) = (self.points[i].0, &self.points[i].1);
        let w = if t1 > t0 {
            ((t - t0) / (t1 - t0)).clamp(0.0, 1.0)
        } else {
            1.0
        };
        let at: Vec<f64> = p0.iter().zip(p1).map(|(a, b)| a + w * (b - a)).collect();
        (at, i + 1 == self.points.len() && w >= 1.0)
    }
}

/// Seconds from `stamp` to now on the system clock; 0 for a zero stamp ("now") or one in the future.
fn seconds_since(stamp: &r2r::builtin_interfaces::msg::Time) -> f64 {
    if stamp.sec == 0 && stamp.nanosec == 0 {
        return 0.0;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    (now - (f64::from(stamp.sec) + f64::from(stamp.nanosec) * 1e-9)).max(0.0)
}

/// Commands stopping this long ends a burst: its arrival timing is logged.
const BURST_GAP: Duration = Duration::from_millis(500);

type Shared = Arc<Mutex<Joints>>;

fn main() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_mock_joints",
        about: "position-controlled mock joints for tests and demos without hardware (like ros2_control's mock_components): takes a forward position controller's commands or a JointTrajectory, publishes /joint_states, and raises an overspeed alarm when a command needs more than a joint's limits.",
        readme: Some(include_str!("../../../README.md")),
    });
    lockstep_ros::run_node("lockstep_mock_joints", |node| Ok(setup(node)?)).context("lockstep_mock_joints")
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let p = lockstep_ros::declare_start_only_parameters(&node, MockParams::default())?;
    let names = lockstep_ros::param_list(&p.joints);
    anyhow::ensure!(!names.is_empty(), "parameter `joints` is empty");
    let positions: Vec<f64> = if p.initial_positions.trim().is_empty() {
        vec![0.0; names.len()]
    } else {
        lockstep_ros::param_list(&p.initial_positions)
            .iter()
            .map(|v| {
                v.parse::<f64>()
                    .with_context(|| format!("parameter `initial_positions`: `{v}` is not a number"))
            })
            .collect::<anyhow::Result<_>>()?
    };
    anyhow::ensure!(
        positions.len() == names.len(),
        "parameter `initial_positions` has {} values for {} joints",
        positions.len(),
        names.len()
    );
    let command_period_s = if p.command_period_s > 0.0 {
        p.command_period_s
    } else {
        p.period_s
    };
    anyhow::ensure!(
        command_period_s > 0.0 && p.state_period_s > 0.0,
        "parameters `command_period_s` (or `period_s`) and `state_period_s` must be > 0"
    );
    anyhow::ensure!(
        p.lag_time_constant_s.is_finite() && p.lag_time_constant_s >= 0.0,
        "parameter `lag_time_constant_s` is {}; it must be >= 0",
        p.lag_time_constant_s
    );
    let lagless = p.lag_time_constant_s == 0.0;
    let all = JointLimits::read(std::path::Path::new(&p.limits_file))?;
    let limits = all.for_joints(&names, &p.limits_file)?;
    let mut monitor = Monitor::new(command_period_s, limits);
    monitor.push(&positions);
    let shared: Shared = Arc::new(Mutex::new(Joints {
        names: names.clone(),
        targets: positions.clone(),
        positions,
        monitor,
        alarms: 0,
        intervals: Intervals::default(),
        following: None,
    }));
    let logger = lockstep_ros::logger_name(&node)?;
    let mut n = lock(&node)?;
    let commands =
        n.subscribe::<Float64MultiArray>(&format!("{}/commands", p.controller), qos::reliable(1000))?;
    let trajectories =
        n.subscribe::<JointTrajectory>(&format!("{}/joint_trajectory", p.controller), qos::reliable(1000))?;
    let states = n.create_publisher::<JointState>("joint_states", qos::reliable(10))?;
    let alarm = n.create_publisher::<StringMsg>("~/alarm", qos::reliable(100))?;
    let clock = n.get_ros_clock();
    drop(n);
    let alarm = std::rc::Rc::new(alarm);

    let command_task = {
        let (shared, alarm, logger) = (shared.clone(), alarm.clone(), logger.clone());
        commands.for_each(move |msg| {
            if let Ok(mut j) = shared.lock() {
                j.following = None;
            }
            command(&shared, &msg.data, &alarm, &logger, lagless);
            future::ready(())
        })
    };
    // The trajectory being followed, sampled every command period (its own count of periods, not the wall
    // clock, so a late wake-up does not show as a velocity step).
    let follow_task = {
        let (shared, alarm, logger) = (shared.clone(), alarm.clone(), logger.clone());
        async move {
            let mut interval = tokio::time::interval(Duration::from_secs_f64(command_period_s));
            loop {
                interval.tick().await;
                let sample = {
                    let Ok(mut j) = shared.lock() else { return };
                    let Some(f) = j.following.as_mut() else { continue };
                    f.elapsed += command_period_s;
                    let (at, over) = f.sample();
                    if over {
                        j.following = None;
                    }
                    at
                };
                command(&shared, &sample, &alarm, &logger, lagless);
            }
        }
    };
    let trajectory_task = {
        let (shared, logger) = (shared.clone(), logger.clone());
        trajectories.for_each(move |msg| {
            let Ok(mut j) = shared.lock() else {
                return future::ready(());
            };
            let points: Option<Vec<(f64, Vec<f64>)>> = msg
                .points
                .iter()
                .map(|point| {
                    let at = f64::from(point.time_from_start.sec)
                        + f64::from(point.time_from_start.nanosec) * 1e-9;
                    let positions: Option<Vec<f64>> = j
                        .names
                        .iter()
                        .map(|name| {
                            msg.joint_names
                                .iter()
                                .position(|m| m == name)
                                .and_then(|i| point.positions.get(i).copied())
                        })
                        .collect();
                    positions.map(|p| (at, p))
                })
                .collect();
            // As a joint_trajectory_controller: a stamped trajectory starts at its stamp (one that arrived
            // late is joined where it is by now), one stamped 0 on receipt; one wholly in the past is ignored.
            let elapsed = seconds_since(&msg.header.stamp);
            match points.filter(|p| !p.is_empty()) {
                Some(points) if points.last().is_some_and(|(at, _)| *at < elapsed) => r2r::log_warn!(
                    &logger,
                    "a JointTrajectory whose every point is in the past ({elapsed:.3} s after its stamp): ignored"
                ),
                Some(points) => {
                    let from = j.targets.clone();
                    j.following = Some(Following {
                        from,
                        points,
                        elapsed,
                    });
                }
                None => r2r::log_warn!(
                    &logger,
                    "a JointTrajectory without points, or without a position for every joint: ignored"
                ),
            }
            future::ready(())
        })
    };
    let state_task = async move {
        let mut interval = tokio::time::interval(Duration::from_secs_f64(p.state_period_s));
        loop {
            interval.tick().await;
            let Ok(mut j) = shared.lock() else { return };
            if !lagless {
                // First order: each state period closes 1 - exp(-dt / tau) of the gap to the command.
                let gain = 1.0 - (-p.state_period_s / p.lag_time_constant_s).exp();
                let Joints {
                    positions, targets, ..
                } = &mut *j;
                for (x, target) in positions.iter_mut().zip(targets.iter()) {
                    *x += gain * (target - *x);
                }
            }
            if j.intervals.last().is_some_and(|t| t.elapsed() > BURST_GAP) && !j.intervals.secs.is_empty() {
                let intervals = std::mem::take(&mut j.intervals.secs);
                if let Some(timing) = Summary::of(&intervals, command_period_s) {
                    r2r::log_info!(&logger, "command arrivals: {timing}");
                }
            }
            let stamp = lockstep_ros::time::clock_stamp(&clock);
            let mut msg = JointState {
                name: j.names.clone(),
                position: j.positions.clone(),
                ..Default::default()
            };
            msg.header.stamp = stamp;
            let _ = states.publish(&msg);
        }
    };
    Ok(async move {
        tokio::join!(command_task, trajectory_task, follow_task, state_task);
        Ok(())
    })
}

/// Move to `positions` (at once when `lagless`, else the state loop follows them); raise the alarm when the
/// step needs more than a limit.
fn command(
    shared: &Shared,
    positions: &[f64],
    alarm: &r2r::Publisher<StringMsg>,
    logger: &str,
    lagless: bool,
) {
    let Ok(mut j) = shared.lock() else { return };
    if positions.len() != j.names.len() || positions.iter().any(|p| !p.is_finite()) {
        r2r::log_warn!(
            logger,
            "a command of {} values for {} joints (or not finite): ignored",
            positions.len(),
            j.names.len()
        );
        return;
    }
    j.intervals.mark(Instant::now(), Some(BURST_GAP));
    if let Some(v) = j.monitor.push(positions) {
        j.alarms += 1;
        let text = format!(
            "overspeed alarm {}: joint `{}` commanded {} {:.4}, over its limit {:.4}",
            j.alarms, j.names[v.axis], v.quantity, v.value, v.limit
        );
        r2r::log_warn!(logger, "{text}");
        let _ = alarm.publish(&StringMsg { data: text });
    }
    j.targets = positions.to_vec();
    if lagless {
        j.positions = positions.to_vec();
    }
}
