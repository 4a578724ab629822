//! The node's inputs: `cmd_vel`, the wheel motion (`odom`, or `joint_states` with
//! `wheel_source:=joint_states`) and `slam_pose`, each a task pushing its samples into the history.

use futures::future::{self, BoxFuture, LocalBoxFuture};
use futures::stream::BoxStream;
use futures::{FutureExt as _, StreamExt as _};
use lockstep_calibrator::{Dropped, PoseNoise};
use lockstep_ros::qos;
use r2r::geometry_msgs::msg::{Pose, PoseStamped, PoseWithCovarianceStamped, Twist, TwistStamped};
use r2r::nav_msgs::msg::Odometry;
use r2r::sensor_msgs::msg::JointState;

use crate::inputs;
use crate::params::{CalibratorParams, PoseType, WheelSource};
use crate::state::Shared;
use crate::state::State;

/// Input QoS depth: at a high simulator time scale bursts of odometry arrive at once.
const INPUT_DEPTH: usize = 1000;

/// Subscribes every input; the future runs their tasks.
pub fn subscribe(
    n: &mut r2r::Node,
    p: &CalibratorParams,
    shared: &Shared,
    logger: &str,
) -> anyhow::Result<LocalBoxFuture<'static, ()>> {
    let deep = qos::reliable(INPUT_DEPTH);
    let clock = n.get_ros_clock();
    let commands: BoxStream<'static, (Option<f64>, Twist)> = if p.cmd_vel_stamped {
        n.subscribe::<TwistStamped>("cmd_vel", deep.clone())?
            .map(|m| (Some(inputs::secs(&m.header.stamp)), m.twist))
            .boxed()
    } else {
        n.subscribe::<Twist>("cmd_vel", deep.clone())?
            .map(|m| (None, m))
            .boxed()
    };
    let poses = pose_stream(n, p)?;
    let wheels = wheel_task(n, p, shared, logger)?;
    let command_task = {
        let (shared, logger) = (shared.clone(), logger.to_owned());
        commands.for_each(move |(stamp, twist)| {
            let t = stamp.unwrap_or_else(|| {
                lockstep_ros::time::clock_now(&clock).map_or(f64::NAN, |d| d.as_secs_f64())
            });
            take(&shared, &logger, |s| s.push_command(inputs::command(t, &twist)));
            future::ready(())
        })
    };
    let pose_task = {
        let (shared, logger) = (shared.clone(), logger.to_owned());
        poses.for_each(move |(t, pose, noise)| {
            take(&shared, &logger, |s| {
                s.push_pose(inputs::observed(t, &pose, noise))
            });
            future::ready(())
        })
    };
    Ok(async move {
        futures::join!(command_task, wheels, pose_task);
    }
    .boxed_local())
}

/// The observed poses (`slam_pose`, with or without covariance as configured): (stamp, pose, its noise
/// when the covariance is used).
fn pose_stream(
    n: &mut r2r::Node,
    p: &CalibratorParams,
) -> anyhow::Result<BoxStream<'static, (f64, Pose, Option<PoseNoise>)>> {
    let use_covariance = p.use_pose_covariance;
    let deep = qos::reliable(INPUT_DEPTH);
    Ok(match p.pose_type()? {
        PoseType::WithCovariance => n
            .subscribe::<PoseWithCovarianceStamped>("slam_pose", deep.clone())?
            .map(move |m| {
                let noise = if use_covariance {
                    inputs::pose_noise(&m.pose.covariance)
                } else {
                    None
                };
                (inputs::secs(&m.header.stamp), m.pose.pose, noise)
            })
            .boxed(),
        PoseType::Plain => n
            .subscribe::<PoseStamped>("slam_pose", deep.clone())?
            .map(|m| (inputs::secs(&m.header.stamp), m.pose, None))
            .boxed(),
    })
}

/// The task taking the wheel motion, from odometry or from joint states as configured.
fn wheel_task(
    n: &mut r2r::Node,
    p: &CalibratorParams,
    shared: &Shared,
    logger: &str,
) -> anyhow::Result<BoxFuture<'static, ()>> {
    let deep = qos::reliable(INPUT_DEPTH);
    Ok(match p.wheel_source()? {
        WheelSource::Odometry => {
            let (shared, logger) = (shared.clone(), logger.to_owned());
            n.subscribe::<Odometry>("odom", deep)?
                .for_each(move |o| {
                    take(&shared, &logger, |s| s.push_odom(inputs::odometry(&o)));
                    future::ready(())
                })
                .boxed()
        }
        WheelSource::JointStates { left, right } => {
            let (shared, logger) = (shared.clone(), logger.to_owned());
            n.subscribe::<JointState>("joint_states", deep)?
                .for_each(move |m| {
                    match inputs::wheels(&m, &left, &right) {
                        Ok(sample) => take(&shared, &logger, |s| s.push_wheels(sample)),
                        Err(missing) => {
                            let due = shared
                                .lock()
                                .is_ok_and(|mut s| s.joint_warning_due(std::time::Instant::now()));
                            if due {
                                r2r::log_warn!(&logger, "{missing}");
                            }
                        }
                    }
                    future::ready(())
                })
                .boxed()
        }
    })
}

/// Pushes one sample; a dropped one is counted in `~/status` and logged at debug level, or as a rate-limited
/// warning when it is stamped in the far future.
fn take(shared: &Shared, logger: &str, push: impl FnOnce(&mut State) -> Result<(), Dropped>) {
    if let Ok(mut s) = shared.lock() {
        if let Err(e) = push(&mut s) {
            match s.warning(&e, std::time::Instant::now()) {
                Some(line) => r2r::log_warn!(logger, "{line}"),
                None => r2r::log_debug!(logger, "dropped: {e}"),
            }
        }
    }
}
