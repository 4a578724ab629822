//! The navigation kind: a Navigate goal drives the vehicle along its route, publishing geometry_msgs/Twist on
//! `cmd_vel` at `control_rate_hz` from the poses on `ground_truth` (the follower and the goal's progress are
//! the core's `sim::follower` and `sim::navigation`). Like
//! Nav2's `/plan`, the path still ahead (from the vehicle through the remaining waypoints) goes out on `plan`
//! (nav_msgs/Path, in the pose's frame) whenever a waypoint is reached, and empty when the goal ends, for rviz
//! or Foxglove.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use lockstep_tasks_node::action_server::ActionServerGoal;
use r2r::geometry_msgs::msg::{Point, PoseStamped, Twist, Vector3};
use r2r::lockstep_interfaces::action::Navigate;
use r2r::nav_msgs::msg::Path;

use crate::serve::{accept_cancel, end, next_cancel, Cancels, Common, End, CANCELLED, SIMULATED_FAILURE};
use lockstep_tasks::sim::follower::{check_goal, yaw_of, Gains, Pose, Step};
use lockstep_tasks::sim::navigation::{arrived_message, Drive, Odometer, Tick};

/// Zero commands sent when stopping (one could be lost; three make sure).
const STOP_REPEATS: usize = 3;

#[derive(Default)]
struct Feed {
    /// The latest pose and when it came (wall time).
    latest: Option<(Pose, Instant)>,
    /// Distance travelled, summed over consecutive poses.
    odometer: Odometer,
    /// The poses' frame and stamp (the plan is published in it).
    header: r2r::std_msgs::msg::Header,
}

/// What the navigation goals share: the pose feed and the command publisher.
pub struct Navigation {
    feed: Mutex<Feed>,
    cmd_vel: Mutex<r2r::Publisher<Twist>>,
    plan: Mutex<r2r::Publisher<Path>>,
    /// The pose topic's name, for messages.
    pub pose_topic: String,
}

impl Navigation {
    /// The shared state and the future that keeps the pose feed up to date from `poses`.
    pub fn new(
        poses: impl Stream<Item = PoseStamped> + Unpin,
        cmd_vel: r2r::Publisher<Twist>,
        plan: r2r::Publisher<Path>,
        pose_topic: String,
    ) -> (Arc<Navigation>, impl std::future::Future<Output = ()>) {
        let nav = Arc::new(Navigation {
            feed: Mutex::default(),
            cmd_vel: Mutex::new(cmd_vel),
            plan: Mutex::new(plan),
            pose_topic,
        });
        let feed_task = {
            let nav = nav.clone();
            poses.for_each(move |msg| {
                let p = &msg.pose;
                let q = &p.orientation;
                let pose = Pose {
                    x: p.position.x,
                    y: p.position.y,
                    yaw: yaw_of(q.x, q.y, q.z, q.w),
                };
                if let Ok(mut feed) = nav.feed.lock() {
                    feed.odometer.add(pose);
                    feed.latest = Some((pose, Instant::now()));
                    feed.header = msg.header.clone();
                }
                futures::future::ready(())
            })
        };
        (nav, feed_task)
    }

    /// The latest pose and how old it is, and the odometer.
    fn latest(&self) -> (Option<(Pose, Duration)>, f64) {
        self.feed
            .lock()
            .map(|f| (f.latest.map(|(p, at)| (p, at.elapsed())), f.odometer.total_m()))
            .unwrap_or((None, 0.0))
    }

    fn command(&self, linear: f64, angular: f64) -> Result<(), String> {
        let twist = Twist {
            linear: Vector3 {
                x: linear,
                ..Default::default()
            },
            angular: Vector3 {
                z: angular,
                ..Default::default()
            },
        };
        let publisher = self
            .cmd_vel
            .lock()
            .map_err(|_| "cmd_vel publisher lock poisoned".to_owned())?;
        publisher
            .publish(&twist)
            .map_err(|e| format!("could not publish on cmd_vel: {e}"))
    }

    /// Publish the path ahead: from `from` (the vehicle) through `waypoints`; empty without `from`.
    fn publish_plan(&self, from: Option<Pose>, waypoints: &[(f64, f64)], common: &Common) {
        let header = self.feed.lock().map(|f| f.header.clone()).unwrap_or_default();
        let at = |x: f64, y: f64| {
            let mut pose = PoseStamped {
                header: header.clone(),
                ..Default::default()
            };
            pose.pose.position = Point { x, y, z: 0.0 };
            pose.pose.orientation.w = 1.0;
            pose
        };
        let poses = match from {
            Some(p) => std::iter::once((p.x, p.y))
                .chain(waypoints.iter().copied())
                .map(|(x, y)| at(x, y))
                .collect(),
            None => Vec::new(),
        };
        let path = Path {
            header: header.clone(),
            poses,
        };
        if let Ok(publisher) = self.plan.lock() {
            if let Err(e) = publisher.publish(&path) {
                r2r::log_warn!(
                    &common.logger,
                    "{}: could not publish the plan: {e}",
                    common.server
                );
            }
        }
    }

    fn stop(&self, common: &Common) {
        for _ in 0..STOP_REPEATS {
            if let Err(e) = self.command(0.0, 0.0) {
                r2r::log_error!(&common.logger, "{}: stopping: {e}", common.server);
            }
        }
        self.publish_plan(None, &[], common);
    }
}

fn result(success: bool, message: String, distance_m: f64, duration_s: f64) -> Navigate::Result {
    Navigate::Result {
        success,
        message,
        distance_m,
        duration_s,
    }
}

/// Whether a Navigate goal can run (a route of finite points, a finite speed > 0); why not otherwise.
pub fn check(goal: &Navigate::Goal) -> Result<(), String> {
    let points: Vec<_> = goal.route.iter().map(|p: &Point| (p.x, p.y, p.z)).collect();
    check_goal(&points, goal.speed_mps).map(drop)
}

/// Run one Navigate goal: wait for a pose, follow the route, stop; or abort (bad goal, no pose, parameter
/// `fail`), or stop and end as canceled on a cancel.
pub async fn run_navigation(
    mut goal: ActionServerGoal<Navigate::Action>,
    cancels: Cancels,
    common: Arc<Common>,
    nav: Arc<Navigation>,
) {
    let started = Instant::now();
    let server = &common.server;
    let p = &common.params;
    let mut drive = match start(&goal.goal, &common) {
        Ok(drive) => drive,
        Err(reason) => return abort(&mut goal, &common, started, reason, 0.0),
    };
    r2r::log_info!(
        &common.logger,
        "{server}: driving {} waypoint(s) at {} m/s",
        drive.follower().remaining_route().len(),
        drive.follower().cruise_mps()
    );
    let mut cancels = Some(cancels);
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / p.control_rate_hz));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            cancel = next_cancel(&mut cancels) => {
                nav.stop(&common);
                accept_cancel(cancel, &common).await;
                let travelled = drive.travelled_m(nav.latest().1);
                let took = started.elapsed().as_secs_f64();
                r2r::log_info!(&common.logger, "{server}: cancelled after {travelled:.2} m, {took:.2} s");
                end(&mut goal, End::Canceled, result(false, CANCELLED.to_owned(), travelled, took), &common);
                return;
            }
            _ = ticks.tick() => {}
        }
        let (latest, odometer) = nav.latest();
        match drive.tick(latest, odometer, started.elapsed(), &nav.pose_topic) {
            Tick::Wait => continue,
            Tick::Lost {
                travelled_m,
                stop,
                message,
            } => {
                if stop {
                    nav.stop(&common);
                }
                return abort(&mut goal, &common, started, message, travelled_m);
            }
            Tick::Arrived { pose, travelled_m } => {
                nav.stop(&common);
                let took = started.elapsed().as_secs_f64();
                let message = arrived_message(pose, travelled_m, took);
                r2r::log_info!(&common.logger, "{server}: {message}");
                let result = result(true, message, travelled_m, took);
                end(&mut goal, End::Succeeded, result, &common);
                return;
            }
            Tick::Drive {
                pose,
                step,
                travelled_m,
                replan,
                estimate_s,
            } => {
                if let Err(e) = nav.command(step.linear, step.angular) {
                    nav.stop(&common);
                    return abort(&mut goal, &common, started, e, travelled_m);
                }
                if replan {
                    nav.publish_plan(Some(pose), drive.follower().remaining_route(), &common);
                }
                feedback(&mut goal, &drive, step);
                let estimate = Duration::from_secs_f64(estimate_s);
                common.status.set_goal_deadline(Some(Instant::now() + estimate));
            }
        }
    }
}

/// The goal's drive, or why it cannot run (a bad goal, parameter `fail`).
fn start(goal: &Navigate::Goal, common: &Common) -> Result<Drive, String> {
    let p = &common.params;
    let points: Vec<_> = goal.route.iter().map(|p: &Point| (p.x, p.y, p.z)).collect();
    let route = check_goal(&points, goal.speed_mps)?;
    if p.fail {
        return Err(SIMULATED_FAILURE.to_owned());
    }
    let gains = Gains {
        k_heading: p.k_heading,
        max_angular_radps: p.max_angular_radps,
        max_linear_mps: p.max_linear_mps,
        tolerance_m: p.waypoint_tolerance_m,
        approach_decel_mps2: p.approach_decel_mps2,
    };
    Ok(Drive::new(route, goal.speed_mps, gains, p.pose_timeout_s))
}

/// End the goal aborted with `message`, after `distance_m`.
fn abort(
    goal: &mut ActionServerGoal<Navigate::Action>,
    common: &Common,
    started: Instant,
    message: String,
    distance_m: f64,
) {
    r2r::log_warn!(&common.logger, "{}: goal aborted: {message}", common.server);
    let took = started.elapsed().as_secs_f64();
    end(
        goal,
        End::Aborted,
        result(false, message, distance_m, took),
        common,
    );
}

/// The feedback of one control step: the waypoint, the route ahead, its length and the commanded speed.
fn feedback(goal: &mut ActionServerGoal<Navigate::Action>, drive: &Drive, step: Step) {
    let remaining_route = drive
        .follower()
        .remaining_route()
        .iter()
        .map(|&(x, y)| Point { x, y, z: 0.0 })
        .collect();
    let _ = goal.publish_feedback(Navigate::Feedback {
        waypoint_index: u32::try_from(step.index).unwrap_or(u32::MAX),
        remaining_route,
        remaining_m: step.remaining_m,
        speed_mps: step.linear,
    });
}
