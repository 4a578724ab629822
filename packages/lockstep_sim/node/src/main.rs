//! `lockstep_sim_node`: the rule-driven vehicle simulator (seed 004) as a ROS 2 node, and the embedded
//! stand-in for Gazebo. It speaks what a Gazebo diff-drive plugin and ros2_control would: `cmd_vel` in;
//! `odom`, a noisy SLAM pose, `joint_states` and `/clock` out; plus the ground truth, the behaviour state and
//! rviz markers. Rule files and the scene are hot-reloaded: a file that fails to load is reported with
//! `file:line:column` and the previous rules and scene keep running.
//!
//! Topics (relative, so they remap): sub `cmd_vel` (geometry_msgs/Twist, commanded mode); pub `odom`
//! (nav_msgs/Odometry, odom -> base_link, NOMINAL parameters), `slam_pose`
//! (geometry_msgs/PoseWithCovarianceStamped, map), `ground_truth` (geometry_msgs/PoseStamped, map),
//! `joint_states` (sensor_msgs/JointState), `~/state` (std_msgs/String, latched), `markers`
//! (visualization_msgs/MarkerArray: vehicle, path, destination) and `markers/grid` (latched: the cells
//! coloured by surface), `/clock` (rosgraph_msgs/Clock, when `publish_clock`).
//! Services: `~/reload` (std_srvs/Trigger), `~/set_destination` (lockstep_interfaces/SetDestination).
//! Every header stamp is simulated time (start at 0): run other nodes with `use_sim_time:=true`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use futures::{future, StreamExt};
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_sim::{Cell, DiffDriveParams, Mode, Pose2D, SimConfig, Simulator};
use r2r::builtin_interfaces::msg::Time;
use r2r::geometry_msgs::msg::{
    Point, Pose, PoseStamped, PoseWithCovariance, PoseWithCovarianceStamped, Quaternion, Twist,
    TwistWithCovariance, Vector3,
};
use r2r::lockstep_interfaces::srv::SetDestination;
use r2r::nav_msgs::msg::Odometry;
use r2r::rosgraph_msgs::msg::Clock;
use r2r::sensor_msgs::msg::JointState;
use r2r::std_msgs::msg::{ColorRGBA, Header};
use r2r::std_srvs::srv::Trigger;
use r2r::visualization_msgs::msg::{Marker, MarkerArray};

/// One set of differential-drive parameters.
#[derive(r2r::RosParams, Debug, Clone)]
struct VehicleParams {
    /// Distance between the wheels' contact points [m].
    track_width_m: f64,
    /// Wheel radius [m].
    wheel_radius_m: f64,
    /// Delay from a command to the motion it causes [s] (only the true value acts).
    delay_secs: f64,
    /// Centripetal compensation factor beta [s^2/m]: yaw rate = w / (1 + beta*|v*w|) (only the true value acts).
    centripetal_factor: f64,
}

impl Default for VehicleParams {
    fn default() -> Self {
        let d = DiffDriveParams::default();
        VehicleParams {
            track_width_m: d.track_width_m,
            wheel_radius_m: d.wheel_radius_m,
            delay_secs: d.delay_secs,
            centripetal_factor: d.centripetal_factor,
        }
    }
}

impl VehicleParams {
    fn model(&self) -> DiffDriveParams {
        DiffDriveParams {
            track_width_m: self.track_width_m,
            wheel_radius_m: self.wheel_radius_m,
            delay_secs: self.delay_secs,
            centripetal_factor: self.centripetal_factor,
        }
    }
}

/// Parameters of the simulator node.
#[derive(r2r::RosParams, Debug)]
struct SimParams {
    /// Scene matrix file (first line `columns rows [cell_size_m]`, then one typecode per cell). Watched and reloaded.
    scene_file: String,
    /// Rule files loaded as one program (surface decoding + behaviour), comma separated. Watched and reloaded.
    rule_files: String,
    /// `autonomous` (the behaviour rules drive) or `commanded` (cmd_vel drives).
    mode: String,
    /// Start cell column (0-based); -1 with start_row -1 = the first enterable cell.
    start_column: i64,
    /// Start cell row (0-based, row 0 = first matrix line).
    start_row: i64,
    /// Start heading [rad], counter-clockwise from +x (east).
    start_yaw_rad: f64,
    /// Destination cell column; -1 = none (the vehicle idles until ~/set_destination).
    destination_column: i64,
    /// Destination cell row; -1 = none.
    destination_row: i64,
    /// Simulation steps per simulated second (fixed step 1/rate_hz).
    rate_hz: f64,
    /// odom, ground_truth, joint_states and /clock per simulated second.
    publish_rate_hz: f64,
    /// Simulated seconds per wall second (e.g. 10 for tests). Can be changed at run time.
    time_scale: f64,
    /// Publish /clock (rosgraph_msgs/Clock) with the simulated time.
    publish_clock: bool,
    /// Radius of the vehicle's circular footprint [m].
    vehicle_radius_m: f64,
    /// Range of the free-distance sensors [m].
    sensor_range_m: f64,
    /// A direction with less free distance is closed [m] (the rules' min_step).
    min_step_m: f64,
    /// The destination is reached within this distance of its cell centre [m].
    arrival_tolerance_m: f64,
    /// Commanded mode: stop when no cmd_vel came for this long [simulated s]; 0 = never.
    cmd_timeout_secs: f64,
    /// Parameters the ground obeys.
    true_vehicle: VehicleParams,
    /// Parameters the base controller believes (wheel speeds from cmd_vel, odometry).
    nominal_vehicle: VehicleParams,
    /// Standard deviation of the SLAM pose's x/y noise [m].
    slam_sigma_xy_m: f64,
    /// Standard deviation of the SLAM pose's heading noise [rad].
    slam_sigma_yaw_rad: f64,
    /// SLAM poses per simulated second; 0 = none.
    slam_rate_hz: f64,
    /// Seed of the SLAM noise (same seed, same samples).
    seed: i64,
    /// Fixed frame of the scene, ground truth and SLAM pose.
    map_frame: String,
    /// Odometry frame.
    odom_frame: String,
    /// Vehicle frame.
    base_frame: String,
    /// Joint name of the left wheel in joint_states.
    left_wheel_joint: String,
    /// Joint name of the right wheel in joint_states.
    right_wheel_joint: String,
    /// Watch the rule files and the scene file and reload them when they change.
    watch_files: bool,
    /// How often to look at the files' modification times [wall s].
    watch_period_secs: f64,
    /// Vehicle/path/destination markers per wall second.
    marker_rate_hz: f64,
}

impl Default for SimParams {
    fn default() -> Self {
        let c = SimConfig::default();
        SimParams {
            scene_file: "config/scenes/warehouse.scene".into(),
            rule_files: "config/rules/surface.dl,config/rules/behaviour.dl".into(),
            mode: "autonomous".into(),
            start_column: -1,
            start_row: -1,
            start_yaw_rad: 0.0,
            destination_column: -1,
            destination_row: -1,
            rate_hz: 50.0,
            publish_rate_hz: 20.0,
            time_scale: 1.0,
            publish_clock: true,
            vehicle_radius_m: c.vehicle_radius_m,
            sensor_range_m: c.sensor_range_m,
            min_step_m: c.min_step_m,
            arrival_tolerance_m: c.arrival_tolerance_m,
            cmd_timeout_secs: c.cmd_timeout_secs,
            true_vehicle: VehicleParams::default(),
            nominal_vehicle: VehicleParams::default(),
            slam_sigma_xy_m: c.slam_sigma_xy_m,
            slam_sigma_yaw_rad: c.slam_sigma_yaw_rad,
            slam_rate_hz: 5.0,
            seed: 0,
            map_frame: "map".into(),
            odom_frame: "odom".into(),
            base_frame: "base_link".into(),
            left_wheel_joint: "left_wheel_joint".into(),
            right_wheel_joint: "right_wheel_joint".into(),
            watch_files: true,
            watch_period_secs: 0.5,
            marker_rate_hz: 2.0,
        }
    }
}

fn cell_param(column: i64, row: i64, name: &str) -> anyhow::Result<Option<Cell>> {
    match (column, row) {
        (-1, -1) => Ok(None),
        (c, r) if c >= 0 && r >= 0 => Ok(Some(Cell {
            column: c as usize,
            row: r as usize,
        })),
        (c, r) => anyhow::bail!("{name} (column {c}, row {r}): both must be >= 0, or both -1 for none"),
    }
}

fn rule_paths(list: &str) -> Vec<PathBuf> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect()
}

impl SimParams {
    fn config(&self) -> anyhow::Result<SimConfig> {
        let mode: Mode = self.mode.parse()?;
        let positive = |name: &str, v: f64| {
            anyhow::ensure!(
                v.is_finite() && v > 0.0,
                "parameter `{name}` is {v}; it must be > 0"
            );
            Ok(())
        };
        positive("rate_hz", self.rate_hz)?;
        positive("publish_rate_hz", self.publish_rate_hz)?;
        positive("watch_period_secs", self.watch_period_secs)?;
        positive("marker_rate_hz", self.marker_rate_hz)?;
        anyhow::ensure!(
            self.slam_rate_hz.is_finite() && self.slam_rate_hz >= 0.0,
            "parameter `slam_rate_hz` is {}; it must be >= 0",
            self.slam_rate_hz
        );
        anyhow::ensure!(
            self.seed >= 0,
            "parameter `seed` is {}; it must be >= 0",
            self.seed
        );
        Ok(SimConfig {
            mode,
            true_vehicle: self.true_vehicle.model(),
            nominal_vehicle: self.nominal_vehicle.model(),
            vehicle_radius_m: self.vehicle_radius_m,
            sensor_range_m: self.sensor_range_m,
            min_step_m: self.min_step_m,
            arrival_tolerance_m: self.arrival_tolerance_m,
            cmd_timeout_secs: self.cmd_timeout_secs,
            slam_sigma_xy_m: self.slam_sigma_xy_m,
            slam_sigma_yaw_rad: self.slam_sigma_yaw_rad,
            slam_period_secs: if self.slam_rate_hz > 0.0 {
                1.0 / self.slam_rate_hz
            } else {
                0.0
            },
            seed: self.seed as u64,
            start: cell_param(self.start_column, self.start_row, "start")?,
            start_yaw_rad: self.start_yaw_rad,
            destination: cell_param(self.destination_column, self.destination_row, "destination")?,
        })
    }
}

/// The simulator and what the node needs around it, shared by the loop, the services and the watcher.
struct Shared {
    sim: Simulator,
    scene_file: PathBuf,
    rule_files: Vec<PathBuf>,
    /// The grid markers must be (re)published: at start and after a reload.
    grid_dirty: bool,
    /// The state must be (re)published.
    state_dirty: bool,
}

type SharedSim = Arc<Mutex<Shared>>;

fn lock_sim(shared: &SharedSim) -> Result<std::sync::MutexGuard<'_, Shared>, lockstep_ros::Error> {
    shared.lock().map_err(|_| lockstep_ros::Error::Poisoned)
}

/// Reloads rule files and scene; `Err` holds the diagnostics (every line names file:line:column).
fn reload(shared: &SharedSim) -> Result<String, String> {
    let mut s = shared
        .lock()
        .map_err(|_| "internal error: simulator mutex poisoned".to_owned())?;
    let Shared {
        sim,
        scene_file,
        rule_files,
        ..
    } = &mut *s;
    match sim.reload(scene_file.as_path(), rule_files) {
        Ok(summary) => {
            s.grid_dirty = true;
            s.state_dirty = true;
            Ok(format!(
                "reloaded {} rule(s) from {}; scene {}",
                summary.rule_count,
                summary.rule_files.join(", "),
                if summary.scene_changed {
                    "changed"
                } else {
                    "unchanged"
                }
            ))
        }
        Err(e) => Err(e.to_string()),
    }
}

fn main() -> anyhow::Result<()> {
    lockstep_ros::run_node("lockstep_sim_node", |node| Ok(setup(node)?)).context("lockstep_sim_node")
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let params = lockstep_ros::declare_parameters(&node, SimParams::default())?.values;
    let logger = lockstep_ros::logger_name(&node)?;
    let (config, scene_file, rule_files, p) = {
        let p = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
        let rule_files = rule_paths(&p.rule_files);
        anyhow::ensure!(!rule_files.is_empty(), "parameter `rule_files` names no file");
        (
            p.config()?,
            PathBuf::from(&p.scene_file),
            rule_files,
            Statics::from(&*p),
        )
    };
    let mode = config.mode;
    let sim = Simulator::load(&scene_file, &rule_files, config).map_err(|e| anyhow::anyhow!("{e}"))?;
    r2r::log_info!(
        &logger,
        "scene {} ({} x {} cells of {} m), rules {}, mode {:?}, start {:?}, destination {:?}",
        scene_file.display(),
        sim.scene().columns(),
        sim.scene().rows(),
        sim.scene().cell_size_m(),
        rule_files
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        mode,
        sim.pose(),
        sim.destination()
    );
    let shared: SharedSim = Arc::new(Mutex::new(Shared {
        sim,
        scene_file: scene_file.clone(),
        rule_files: rule_files.clone(),
        grid_dirty: true,
        state_dirty: true,
    }));

    let mut n = lock(&node)?;
    let pubs = Publishers {
        // Deep histories: at a high time_scale a slow subscriber (rclpy) falls behind for a while, and a
        // reliable keep-last writer would overwrite what it has not yet acknowledged.
        odom: n.create_publisher::<Odometry>("odom", qos::reliable(1000))?,
        slam: n.create_publisher::<PoseWithCovarianceStamped>("slam_pose", qos::reliable(1000))?,
        truth: n.create_publisher::<PoseStamped>("ground_truth", qos::reliable(1000))?,
        joints: n.create_publisher::<JointState>("joint_states", qos::reliable(1000))?,
        // Transient-local with room for every transition of a run, so a late subscriber still sees the
        // whole state history, not only the last state.
        state: n.create_publisher::<r2r::std_msgs::msg::String>(
            "~/state",
            qos::reliable(1000).transient_local(),
        )?,
        markers: n.create_publisher::<MarkerArray>("markers", qos::reliable(10))?,
        grid: n.create_publisher::<MarkerArray>("markers/grid", qos::latched())?,
        clock: if p.publish_clock {
            Some(n.create_publisher::<Clock>("/clock", qos::reliable(10))?)
        } else {
            None
        },
    };
    let cmd_vel = if mode == Mode::Commanded {
        Some(n.subscribe::<Twist>("cmd_vel", qos::reliable(10))?)
    } else {
        None
    };
    let reload_srv = n.create_service::<Trigger::Service>("~/reload", qos::reliable(10))?;
    let dest_srv = n.create_service::<SetDestination::Service>("~/set_destination", qos::reliable(10))?;
    drop(n);

    let cmd_task = {
        let shared = shared.clone();
        let logger = logger.clone();
        async move {
            let Some(stream) = cmd_vel else {
                return future::pending::<()>().await;
            };
            stream
                .for_each(move |t: Twist| {
                    if let Ok(mut s) = shared.lock() {
                        if let Err(e) = s.sim.set_command(t.linear.x, t.angular.z) {
                            r2r::log_warn!(&logger, "cmd_vel ignored: {e}");
                        }
                    }
                    future::ready(())
                })
                .await;
        }
    };

    let reload_task = {
        let shared = shared.clone();
        let logger = logger.clone();
        reload_srv.for_each(move |req| {
            let response = match reload(&shared) {
                Ok(message) => {
                    r2r::log_info!(&logger, "~/reload: {message}");
                    Trigger::Response {
                        success: true,
                        message,
                    }
                }
                Err(message) => {
                    r2r::log_error!(
                        &logger,
                        "~/reload failed, the previous rules and scene stay:\n{message}"
                    );
                    Trigger::Response {
                        success: false,
                        message,
                    }
                }
            };
            if let Err(e) = req.respond(response) {
                r2r::log_warn!(&logger, "~/reload: cannot respond: {e}");
            }
            future::ready(())
        })
    };

    let dest_task = {
        let shared = shared.clone();
        let logger = logger.clone();
        dest_srv.for_each(move |req| {
            let (column, row) = (i64::from(req.message.column), i64::from(req.message.row));
            let result = match shared.lock() {
                Ok(mut s) => {
                    let r = s.sim.set_destination(column, row).map_err(|e| e.to_string());
                    s.state_dirty = true;
                    r
                }
                Err(_) => Err("internal error: simulator mutex poisoned".to_owned()),
            };
            let response = match result {
                Ok(()) => {
                    let message = format!("destination set to column {column}, row {row}");
                    r2r::log_info!(&logger, "~/set_destination: {message}");
                    SetDestination::Response {
                        success: true,
                        message,
                    }
                }
                Err(message) => {
                    r2r::log_warn!(&logger, "~/set_destination rejected: {message}");
                    SetDestination::Response {
                        success: false,
                        message,
                    }
                }
            };
            if let Err(e) = req.respond(response) {
                r2r::log_warn!(&logger, "~/set_destination: cannot respond: {e}");
            }
            future::ready(())
        })
    };

    let watch_task = watch_files(shared.clone(), logger.clone(), p.clone());
    let loop_task = run_loop(shared, params, pubs, logger, p);

    Ok(async move {
        tokio::join!(cmd_task, reload_task, dest_task, watch_task, loop_task);
        Ok(())
    })
}

/// Parameters read once at start.
#[derive(Debug, Clone)]
struct Statics {
    step_secs: f64,
    publish_every_steps: u64,
    publish_clock: bool,
    map_frame: String,
    odom_frame: String,
    base_frame: String,
    left_wheel_joint: String,
    right_wheel_joint: String,
    watch_files: bool,
    watch_period: Duration,
    marker_period: Duration,
    slam_sigma_xy_m: f64,
    slam_sigma_yaw_rad: f64,
    vehicle_radius_m: f64,
}

impl From<&SimParams> for Statics {
    fn from(p: &SimParams) -> Self {
        let step_secs = 1.0 / p.rate_hz.max(1e-3);
        Statics {
            step_secs,
            publish_every_steps: ((p.rate_hz / p.publish_rate_hz.max(1e-3)).round() as u64).max(1),
            publish_clock: p.publish_clock,
            map_frame: p.map_frame.clone(),
            odom_frame: p.odom_frame.clone(),
            base_frame: p.base_frame.clone(),
            left_wheel_joint: p.left_wheel_joint.clone(),
            right_wheel_joint: p.right_wheel_joint.clone(),
            watch_files: p.watch_files,
            watch_period: Duration::from_secs_f64(p.watch_period_secs.clamp(0.01, 3600.0)),
            marker_period: Duration::from_secs_f64((1.0 / p.marker_rate_hz.max(1e-3)).clamp(0.01, 3600.0)),
            slam_sigma_xy_m: p.slam_sigma_xy_m,
            slam_sigma_yaw_rad: p.slam_sigma_yaw_rad,
            vehicle_radius_m: p.vehicle_radius_m,
        }
    }
}

struct Publishers {
    odom: r2r::Publisher<Odometry>,
    slam: r2r::Publisher<PoseWithCovarianceStamped>,
    truth: r2r::Publisher<PoseStamped>,
    joints: r2r::Publisher<JointState>,
    state: r2r::Publisher<r2r::std_msgs::msg::String>,
    markers: r2r::Publisher<MarkerArray>,
    grid: r2r::Publisher<MarkerArray>,
    clock: Option<r2r::Publisher<Clock>>,
}

/// Most steps one wall tick may run: when the machine cannot keep up with `time_scale`, simulated time
/// falls behind instead of the node blocking its thread.
const MAX_STEPS_PER_TICK: u64 = 200;
const WALL_TICK: Duration = Duration::from_millis(10);
/// While no step runs, the motion topics are repeated this often (same stamp).
const PAUSED_REPUBLISH: Duration = Duration::from_millis(250);

async fn run_loop(
    shared: SharedSim,
    params: Arc<Mutex<SimParams>>,
    pubs: Publishers,
    logger: String,
    st: Statics,
) {
    let mut ticker = tokio::time::interval(WALL_TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last = Instant::now();
    let mut budget_secs = 0.0_f64;
    let mut steps: u64 = 0;
    let mut last_markers = Instant::now() - st.marker_period;
    let mut warned: HashMap<String, Instant> = HashMap::new();
    let mut lagging_warned = false;
    let mut last_motion = Instant::now() - PAUSED_REPUBLISH;
    loop {
        ticker.tick().await;
        let now = Instant::now();
        let scale = params.lock().map(|p| p.time_scale).unwrap_or(1.0).clamp(0.0, 1e4);
        let scale = if scale.is_finite() { scale } else { 1.0 };
        budget_secs += (now - last).as_secs_f64() * scale;
        last = now;
        let Ok(mut s) = lock_sim(&shared) else {
            r2r::log_error!(&logger, "simulator mutex poisoned; stopping the loop");
            return;
        };
        let mut n_steps = (budget_secs / st.step_secs).floor() as u64;
        if n_steps > MAX_STEPS_PER_TICK {
            if !lagging_warned {
                r2r::log_warn!(
                    &logger,
                    "cannot keep up with time_scale {scale}: simulated time runs slower than requested"
                );
                lagging_warned = true;
            }
            n_steps = MAX_STEPS_PER_TICK;
            budget_secs = 0.0;
        } else {
            budget_secs -= n_steps as f64 * st.step_secs;
        }
        for _ in 0..n_steps {
            let report = s.sim.step(st.step_secs);
            steps += 1;
            for w in report.warnings {
                let due = warned
                    .get(&w)
                    .is_none_or(|t| t.elapsed() > Duration::from_secs(2));
                if due {
                    r2r::log_warn!(&logger, "{w}");
                    warned.insert(w, Instant::now());
                }
            }
            if let Some((from, to)) = report.transition {
                r2r::log_info!(&logger, "t={:.2} s: {from} -> {to}", s.sim.time_secs());
                s.state_dirty = true;
            }
            if report.slam_sample {
                publish_slam(&s.sim, &pubs, &st);
            }
            if s.state_dirty {
                s.state_dirty = false;
                let _ = pubs.state.publish(&r2r::std_msgs::msg::String {
                    data: s.sim.state().to_owned(),
                });
            }
            if steps % st.publish_every_steps == 0 {
                publish_motion(&s.sim, &pubs, &st);
            }
        }
        if n_steps > 0 {
            last_motion = Instant::now();
        } else if last_motion.elapsed() >= PAUSED_REPUBLISH {
            // Paused (time_scale 0) or very slow: repeat the current state so that late joiners see it.
            last_motion = Instant::now();
            publish_motion(&s.sim, &pubs, &st);
        }
        if s.state_dirty {
            s.state_dirty = false;
            let _ = pubs.state.publish(&r2r::std_msgs::msg::String {
                data: s.sim.state().to_owned(),
            });
        }
        if s.grid_dirty {
            s.grid_dirty = false;
            let _ = pubs.grid.publish(&grid_markers(&s.sim, &st));
        }
        if last_markers.elapsed() >= st.marker_period {
            last_markers = Instant::now();
            let _ = pubs.markers.publish(&vehicle_markers(&s.sim, &st));
        }
    }
}

fn stamp(secs: f64) -> Time {
    let total_ns = (secs.max(0.0) * 1e9).round() as u64;
    Time {
        sec: (total_ns / 1_000_000_000).min(i32::MAX as u64) as i32,
        nanosec: (total_ns % 1_000_000_000) as u32,
    }
}

fn header(secs: f64, frame: &str) -> Header {
    Header {
        stamp: stamp(secs),
        frame_id: frame.to_owned(),
    }
}

fn quaternion(yaw: f64) -> Quaternion {
    Quaternion {
        x: 0.0,
        y: 0.0,
        z: (0.5 * yaw).sin(),
        w: (0.5 * yaw).cos(),
    }
}

fn pose_msg(p: &Pose2D, z: f64) -> Pose {
    Pose {
        position: Point {
            x: p.x_m,
            y: p.y_m,
            z,
        },
        orientation: quaternion(p.yaw_rad),
    }
}

fn diag_covariance(xy: f64, yaw: f64) -> Vec<f64> {
    let mut c = vec![0.0; 36];
    c[0] = xy;
    c[7] = xy;
    c[14] = 1e-6;
    c[21] = 1e-6;
    c[28] = 1e-6;
    c[35] = yaw;
    c
}

fn publish_motion(sim: &Simulator, pubs: &Publishers, st: &Statics) {
    let t = sim.time_secs();
    let pose = sim.pose();
    let _ = pubs.truth.publish(&PoseStamped {
        header: header(t, &st.map_frame),
        pose: pose_msg(&pose, 0.0),
    });
    let odom = sim.odometry();
    let _ = pubs.odom.publish(&Odometry {
        header: header(t, &st.odom_frame),
        child_frame_id: st.base_frame.clone(),
        pose: PoseWithCovariance {
            pose: pose_msg(&odom.pose, 0.0),
            covariance: diag_covariance(1e-3, 1e-3),
        },
        twist: TwistWithCovariance {
            twist: Twist {
                linear: Vector3 {
                    x: odom.v_mps,
                    y: 0.0,
                    z: 0.0,
                },
                angular: Vector3 {
                    x: 0.0,
                    y: 0.0,
                    z: odom.w_radps,
                },
            },
            covariance: diag_covariance(1e-3, 1e-3),
        },
    });
    let wheels = sim.wheels();
    let _ = pubs.joints.publish(&JointState {
        header: header(t, &st.base_frame),
        name: vec![st.left_wheel_joint.clone(), st.right_wheel_joint.clone()],
        position: vec![wheels.left_position_rad, wheels.right_position_rad],
        velocity: vec![wheels.left_velocity_radps, wheels.right_velocity_radps],
        effort: vec![],
    });
    if let Some(clock) = &pubs.clock {
        if st.publish_clock {
            let _ = clock.publish(&Clock { clock: stamp(t) });
        }
    }
}

fn publish_slam(sim: &Simulator, pubs: &Publishers, st: &Statics) {
    if let Some(sample) = sim.slam() {
        let _ = pubs.slam.publish(&PoseWithCovarianceStamped {
            header: header(sample.time_secs, &st.map_frame),
            pose: PoseWithCovariance {
                pose: pose_msg(&sample.pose, 0.0),
                covariance: diag_covariance(
                    st.slam_sigma_xy_m * st.slam_sigma_xy_m,
                    st.slam_sigma_yaw_rad * st.slam_sigma_yaw_rad,
                ),
            },
        });
    }
}

fn color(r: f32, g: f32, b: f32, a: f32) -> ColorRGBA {
    ColorRGBA { r, g, b, a }
}

/// A colour per surface: obstacles dark, faster surfaces greyer, slow ones browner, ice blue.
fn surface_color(name: &str, advised_speed_mps: f64) -> ColorRGBA {
    match name {
        "ice" => color(0.6, 0.85, 1.0, 1.0),
        "grass" => color(0.3, 0.7, 0.3, 1.0),
        "mud" => color(0.45, 0.3, 0.15, 1.0),
        "sand" => color(0.9, 0.8, 0.5, 1.0),
        "gravel" => color(0.6, 0.55, 0.5, 1.0),
        _ => {
            let k = (advised_speed_mps / 2.5).clamp(0.0, 1.0) as f32;
            color(0.35 + 0.4 * k, 0.35 + 0.4 * k, 0.4 + 0.4 * k, 1.0)
        }
    }
}

fn grid_markers(sim: &Simulator, st: &Statics) -> MarkerArray {
    let scene = sim.scene();
    let cs = scene.cell_size_m();
    let mut floor = Marker {
        header: header(0.0, &st.map_frame),
        ns: "grid".into(),
        id: 0,
        type_: Marker::CUBE_LIST as i32,
        action: Marker::ADD as i32,
        pose: pose_msg(&Pose2D::default(), 0.0),
        scale: Vector3 {
            x: cs,
            y: cs,
            z: 0.02,
        },
        color: color(1.0, 1.0, 1.0, 1.0),
        ..Default::default()
    };
    let mut walls = Marker {
        ns: "obstacles".into(),
        id: 1,
        scale: Vector3 { x: cs, y: cs, z: 0.5 },
        color: color(0.15, 0.15, 0.15, 1.0),
        ..floor.clone()
    };
    for row in 0..scene.rows() {
        for column in 0..scene.columns() {
            let cell = Cell { column, row };
            let (x, y) = scene.cell_center(cell);
            let Some(surface) = scene.code(cell).and_then(|c| sim.surfaces().get(c)) else {
                continue;
            };
            if surface.obstacle {
                walls.points.push(Point { x, y, z: 0.25 });
                walls.colors.push(color(0.15, 0.15, 0.15, 1.0));
            } else {
                floor.points.push(Point { x, y, z: -0.01 });
                floor
                    .colors
                    .push(surface_color(&surface.name, surface.advised_speed_mps));
            }
        }
    }
    MarkerArray {
        markers: vec![floor, walls],
    }
}

fn vehicle_markers(sim: &Simulator, st: &Statics) -> MarkerArray {
    let t = sim.time_secs();
    let pose = sim.pose();
    let base = Marker {
        header: header(t, &st.map_frame),
        action: Marker::ADD as i32,
        pose: pose_msg(&Pose2D::default(), 0.0),
        color: color(1.0, 1.0, 1.0, 1.0),
        ..Default::default()
    };
    let d = 2.0 * st.vehicle_radius_m;
    let vehicle = Marker {
        ns: "vehicle".into(),
        id: 0,
        type_: Marker::ARROW as i32,
        pose: pose_msg(&pose, 0.1),
        scale: Vector3 {
            x: d,
            y: 0.5 * d,
            z: 0.5 * d,
        },
        color: color(0.95, 0.4, 0.1, 1.0),
        ..base.clone()
    };
    let path = Marker {
        ns: "path".into(),
        id: 0,
        type_: Marker::LINE_STRIP as i32,
        scale: Vector3 {
            x: 0.05,
            y: 0.0,
            z: 0.0,
        },
        color: color(0.1, 0.3, 0.95, 1.0),
        points: sim
            .path()
            .iter()
            .map(|&(_, x, y)| Point { x, y, z: 0.05 })
            .collect(),
        ..base.clone()
    };
    let mut markers = vec![vehicle, path];
    if let Some(dest) = sim.destination() {
        let (x, y) = sim.scene().cell_center(dest);
        let cs = sim.scene().cell_size_m();
        markers.push(Marker {
            ns: "destination".into(),
            id: 0,
            type_: Marker::CUBE as i32,
            pose: Pose {
                position: Point { x, y, z: 0.05 },
                orientation: quaternion(0.0),
            },
            scale: Vector3 {
                x: cs * 0.8,
                y: cs * 0.8,
                z: 0.1,
            },
            color: color(0.1, 0.9, 0.2, 0.6),
            ..base.clone()
        });
    }
    markers.push(Marker {
        ns: "state".into(),
        id: 0,
        type_: Marker::TEXT_VIEW_FACING as i32,
        pose: pose_msg(
            &Pose2D {
                x_m: pose.x_m,
                y_m: pose.y_m,
                yaw_rad: 0.0,
            },
            0.8,
        ),
        scale: Vector3 {
            x: 0.0,
            y: 0.0,
            z: 0.4,
        },
        text: sim.state().to_owned(),
        ..base
    });
    MarkerArray { markers }
}

/// Modification stamps of the watched files; a file that cannot be read counts as "missing".
fn stamps(paths: &[PathBuf]) -> Vec<Option<(SystemTime, u64)>> {
    paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())))
        })
        .collect()
}

async fn watch_files(shared: SharedSim, logger: String, st: Statics) {
    if !st.watch_files {
        return future::pending().await;
    }
    let paths = match shared.lock() {
        Ok(s) => {
            let mut v = s.rule_files.clone();
            v.push(s.scene_file.clone());
            v
        }
        Err(_) => return,
    };
    let mut seen = stamps(&paths);
    let mut ticker = tokio::time::interval(st.watch_period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        // Stamp before reading: a write that lands while we reload changes the stamp again, so it is seen
        // on the next round.
        let now = stamps(&paths);
        if now == seen {
            continue;
        }
        seen = now;
        match reload(&shared) {
            Ok(message) => r2r::log_info!(&logger, "file change: {message}"),
            Err(message) => r2r::log_error!(
                &logger,
                "file change: reload failed, the previous rules and scene stay:\n{message}"
            ),
        }
    }
}
