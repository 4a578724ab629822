//! The node's parameters. Their names and meanings are contracts (config/sim.yaml, the launch file and tests
//! use them); each has a doc string that `ros2 param describe` shows.

use std::path::PathBuf;

use lockstep_ros::{Int, ParamRule, ParamRules, Real};
use lockstep_sim::{DiffDriveParams, SimConfig, SlipModel, MAX_TIME_SCALE};

/// Conversions both ways between two structs with the same `f64` fields, written once.
macro_rules! mirror_structs {
    ($a:ident <-> $b:ident { $($field:ident),+ $(,)? }) => {
        impl From<&$a> for $b {
            fn from(x: &$a) -> $b {
                $b { $($field: x.$field),+ }
            }
        }
        impl From<&$b> for $a {
            fn from(x: &$b) -> $a {
                $a { $($field: x.$field),+ }
            }
        }
    };
}

/// One set of differential-drive parameters (settable at run time: the simulator applies a change at once).
#[derive(r2r::RosParams, Debug, Clone)]
pub struct VehicleParams {
    /// Distance between the wheels' contact points [m].
    pub(crate) track_width_m: f64,
    /// Wheel radius [m].
    pub(crate) wheel_radius_m: f64,
    /// Delay from a command to the motion it causes [s] (only the true value acts).
    delay_secs: f64,
    /// Centripetal compensation factor beta [s^2/m]: yaw rate = w / (1 + beta*|v*w|) (only the true value acts).
    centripetal_factor: f64,
}

mirror_structs!(VehicleParams <-> DiffDriveParams {
    track_width_m,
    wheel_radius_m,
    delay_secs,
    centripetal_factor
});

impl Default for VehicleParams {
    fn default() -> Self {
        VehicleParams::from(&DiffDriveParams::default())
    }
}

/// The battery model's parameters (read at start).
#[derive(r2r::RosParams, Debug, Clone)]
pub struct BatteryParams {
    /// Full charge [Wh]; 0 = no battery model (the vehicle never runs out, battery_state is not published).
    pub capacity_wh: f64,
    /// Charge at start [% of the capacity].
    pub start_percent: f64,
    /// Drain while on, driving or not [W].
    pub idle_w: f64,
    /// Drain per metre driven [Wh/m].
    pub drive_wh_per_m: f64,
    /// Charging power at a charger [W].
    pub charge_w: f64,
    /// Nominal voltage: battery_state's current and charge in Ah follow from it [V].
    pub voltage_v: f64,
    /// Charger positions in the map frame, `x y` pairs separated by commas ("2.5 5.5, 17.5 12.5") [m]; "" = none.
    pub chargers: String,
    /// The vehicle charges standing still within this distance of a charger [m].
    pub charger_radius_m: f64,
    /// battery_state messages per simulated second.
    pub rate_hz: f64,
}

impl Default for BatteryParams {
    fn default() -> Self {
        let c = lockstep_sim::BatteryConfig::default();
        BatteryParams {
            capacity_wh: c.capacity_wh,
            start_percent: c.start_fraction * 100.0,
            idle_w: c.idle_w,
            drive_wh_per_m: c.drive_wh_per_m,
            charge_w: c.charge_w,
            voltage_v: c.voltage_v,
            chargers: String::new(),
            charger_radius_m: c.charger_radius_m,
            rate_hz: 1.0,
        }
    }
}

/// Parameters of the simulator node.
#[derive(r2r::RosParams, Debug, Clone)]
pub struct SimParams {
    /// Scene matrix file (first line `columns rows [cell_size_m]`, then one typecode per cell). Watched and reloaded.
    pub scene_file: String,
    /// Rule files loaded as one program (surface decoding + behaviour), comma separated. Watched and reloaded.
    pub rule_files: String,
    /// `autonomous` (the behaviour rules drive) or `commanded` (cmd_vel drives).
    pub mode: String,
    /// Start cell column (0-based); -1 with start_row -1 = the first enterable cell.
    pub start_column: i64,
    /// Start cell row (0-based, row 0 = first matrix line).
    pub start_row: i64,
    /// Start heading [rad], counter-clockwise from +x (east).
    pub start_yaw_rad: f64,
    /// Destination cell column; -1 = none (the vehicle idles until ~/set_destination).
    pub destination_column: i64,
    /// Destination cell row; -1 = none.
    pub destination_row: i64,
    /// Simulation steps per simulated second (fixed step 1/rate_hz).
    pub rate_hz: f64,
    /// odom, ground_truth, joint_states and /clock per simulated second.
    pub publish_rate_hz: f64,
    /// Range readings (scan_front, scan_rear) per simulated second, at most one per publish; 0 = none.
    pub range_rate_hz: f64,
    /// Simulated seconds per wall second (e.g. 10 for tests), in [0, 1e4]; 0 pauses. Can be changed at run time: a value outside the range is dropped (counted in the bad-input log line) and the previous one stays.
    pub time_scale: f64,
    /// Publish /clock (rosgraph_msgs/Clock) with the simulated time.
    pub publish_clock: bool,
    /// Radius of the vehicle's circular footprint [m].
    pub vehicle_radius_m: f64,
    /// Range of the free-distance sensors [m].
    pub sensor_range_m: f64,
    /// A direction with less free distance is closed [m] (the rules' min_step); 0 = half the scene's cell size. Can be changed at run time.
    pub min_step_m: f64,
    /// The destination is reached within this distance of its cell centre [m].
    pub arrival_tolerance_m: f64,
    /// Commanded mode: stop when no cmd_vel came for this long [simulated s]; 0 = never.
    pub cmd_timeout_secs: f64,
    /// Largest |linear velocity| [m/s] taken from cmd_vel (any of its linear components) or the rules' drive; a larger command is dropped and counted.
    pub max_linear_mps: f64,
    /// Largest |angular velocity| [rad/s] taken from cmd_vel (any of its angular components) or the rules' drive; a larger command is dropped and counted.
    pub max_angular_radps: f64,
    /// Parameters the ground obeys.
    pub true_vehicle: VehicleParams,
    /// Parameters the base controller believes (wheel speeds from cmd_vel, odometry).
    pub nominal_vehicle: VehicleParams,
    /// How the ground slips under the true vehicle: `centripetal` (yaw rate = w / (1 + beta*|v*w|), beta = true_vehicle.centripetal_factor) or `lateral` (kinematic yaw rate, true_vehicle.centripetal_factor unused; the body slides sideways in turns and the wheels slip while speeding up or braking). Encoders and odometry never see the slip. Can be changed at run time.
    pub slip_model: String,
    /// Lateral model: sideways body velocity = -lateral_slip_s * v * w [s] (outward of the turn); 0 = none. Can be changed at run time.
    pub lateral_slip_s: f64,
    /// Lateral model: a wheel's ground speed is its surface speed times (1 - longitudinal_slip_s2pm * its acceleration), kept within [0.5, 1.5] [s^2/m]; 0 = none. Can be changed at run time.
    pub longitudinal_slip_s2pm: f64,
    /// Standard deviation of the SLAM pose's x/y noise [m].
    pub slam_sigma_xy_m: f64,
    /// Standard deviation of the SLAM pose's heading noise [rad].
    pub slam_sigma_yaw_rad: f64,
    /// SLAM poses per simulated second; 0 = none.
    pub slam_rate_hz: f64,
    /// Seed of the SLAM noise (same seed, same samples).
    pub seed: i64,
    /// Fixed frame of the scene, ground truth and SLAM pose.
    pub map_frame: String,
    /// Odometry frame.
    pub odom_frame: String,
    /// Vehicle frame.
    pub base_frame: String,
    /// Joint name of the left wheel in joint_states.
    pub left_wheel_joint: String,
    /// Joint name of the right wheel in joint_states.
    pub right_wheel_joint: String,
    /// Watch the rule files and the scene file and reload them when they change.
    pub watch_files: bool,
    /// How often to look at the files' modification times [wall s].
    pub watch_period_secs: f64,
    /// Vehicle/path/destination markers per wall second.
    pub marker_rate_hz: f64,
    /// Most points of the path kept and drawn in `markers` (>= 2); beyond it the path is thinned (every other point dropped, spacing doubled), so it still spans the whole run.
    pub path_max_points: i64,
    /// Most behaviour states kept for late subscribers of ~/state (>= 1): its transient-local history depth.
    pub state_history_depth: i64,
    /// Commanded mode: a drive script (lines `v_mps w_radps duration_secs`, e.g. config/drives/mixed.drive) fed in simulated time instead of cmd_vel; "" = none. Setting it at run time (re)starts the script.
    pub drive_script: String,
    /// Start the drive script over when it ends (otherwise the vehicle stops).
    pub drive_repeat: bool,
    /// Wall seconds one evaluation of the rules may take, in (0, 3600]. The rules are evaluated every step, in milliseconds for real rules; 1 s leaves room for decoding a large scene on a loaded machine while a rule that never reaches a fixpoint (`n(X + 1) :- n(X).`) stalls a step for at most that long: the step goes on without the rules (the vehicle holds still) and a warning names the rule files and the limit.
    pub rules_max_seconds: f64,
    /// The battery: it drains with time and distance, charges at chargers, and stops the vehicle when empty; published as sensor_msgs/BatteryState on battery_state.
    pub battery: BatteryParams,
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
            range_rate_hz: 10.0,
            time_scale: 1.0,
            publish_clock: true,
            vehicle_radius_m: c.vehicle_radius_m,
            sensor_range_m: c.sensor_range_m,
            min_step_m: c.min_step_m,
            arrival_tolerance_m: c.arrival_tolerance_m,
            cmd_timeout_secs: c.cmd_timeout_secs,
            max_linear_mps: c.limits.max_linear_mps,
            max_angular_radps: c.limits.max_angular_radps,
            true_vehicle: VehicleParams::default(),
            nominal_vehicle: VehicleParams::default(),
            slip_model: SlipModel::default().name().into(),
            lateral_slip_s: 0.05,
            longitudinal_slip_s2pm: 0.02,
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
            path_max_points: c.path_max_points as i64,
            state_history_depth: c.state_history_depth as i64,
            drive_script: String::new(),
            drive_repeat: false,
            rules_max_seconds: c.rules_max_seconds,
            battery: BatteryParams::default(),
        }
    }
}

/// A cell coordinate: -1 (none) or a column/row number.
const CELL: Int = Int::closed(-1, 1_000_000, "");
const TRACK_WIDTH: Real = Real::closed(0.01, 10.0, "m");
const WHEEL_RADIUS: Real = Real::closed(0.001, 5.0, "m");
const DELAY: Real = Real::closed(0.0, 10.0, "s");
const CENTRIPETAL: Real = Real::closed(0.0, 100.0, "s^2/m");
/// Slip coefficients of the lateral model.
const LATERAL_SLIP: Real = Real::closed(0.0, 10.0, "s");
const LONGITUDINAL_SLIP: Real = Real::closed(0.0, 10.0, "s^2/m");

/// What each parameter may hold, checked at start ([`SimParams::config`]) and on every run-time set (a bad
/// one is refused with the reason and the value in force stays).
const RULES: &[ParamRule] = &[
    ParamRule::non_empty("scene_file"),
    ParamRule::non_empty("rule_files"),
    ParamRule::int("start_column", CELL),
    ParamRule::int("start_row", CELL),
    ParamRule::real("start_yaw_rad", Real::closed(-1e3, 1e3, "rad")),
    ParamRule::int("destination_column", CELL),
    ParamRule::int("destination_row", CELL),
    ParamRule::real("rate_hz", Real::above(0.0, 1e4, "Hz")),
    ParamRule::real("publish_rate_hz", Real::above(0.0, 1e4, "Hz")),
    ParamRule::real("range_rate_hz", Real::closed(0.0, 1e4, "Hz")),
    ParamRule::real("time_scale", Real::closed(0.0, MAX_TIME_SCALE, "")),
    ParamRule::real("vehicle_radius_m", Real::above(0.0, 100.0, "m")),
    ParamRule::real("sensor_range_m", Real::above(0.0, 1e4, "m")),
    ParamRule::real("min_step_m", Real::closed(0.0, 100.0, "m")),
    ParamRule::real("arrival_tolerance_m", Real::above(0.0, 1e3, "m")),
    ParamRule::real("cmd_timeout_secs", Real::closed(0.0, 86_400.0, "s")),
    ParamRule::real("max_linear_mps", Real::above(0.0, 1e3, "m/s")),
    ParamRule::real("max_angular_radps", Real::above(0.0, 1e3, "rad/s")),
    ParamRule::real("true_vehicle.track_width_m", TRACK_WIDTH),
    ParamRule::real("true_vehicle.wheel_radius_m", WHEEL_RADIUS),
    ParamRule::real("true_vehicle.delay_secs", DELAY),
    ParamRule::real("true_vehicle.centripetal_factor", CENTRIPETAL),
    ParamRule::real("nominal_vehicle.track_width_m", TRACK_WIDTH),
    ParamRule::real("nominal_vehicle.wheel_radius_m", WHEEL_RADIUS),
    ParamRule::real("nominal_vehicle.delay_secs", DELAY),
    ParamRule::real("nominal_vehicle.centripetal_factor", CENTRIPETAL),
    ParamRule::one_of("slip_model", SlipModel::NAMES),
    ParamRule::real("lateral_slip_s", LATERAL_SLIP),
    ParamRule::real("longitudinal_slip_s2pm", LONGITUDINAL_SLIP),
    ParamRule::real("slam_sigma_xy_m", Real::closed(0.0, 100.0, "m")),
    ParamRule::real("slam_sigma_yaw_rad", Real::closed(0.0, 10.0, "rad")),
    ParamRule::real("slam_rate_hz", Real::closed(0.0, 1e4, "Hz")),
    ParamRule::int("seed", Int::closed(0, i64::MAX, "")),
    ParamRule::non_empty("map_frame"),
    ParamRule::non_empty("odom_frame"),
    ParamRule::non_empty("base_frame"),
    ParamRule::non_empty("left_wheel_joint"),
    ParamRule::non_empty("right_wheel_joint"),
    ParamRule::real("watch_period_secs", Real::closed(0.01, 3600.0, "s")),
    ParamRule::real("marker_rate_hz", Real::above(0.0, 1e3, "Hz")),
    ParamRule::int("path_max_points", Int::closed(2, 10_000_000, "points")),
    ParamRule::int("state_history_depth", Int::closed(1, 1_000_000, "states")),
    ParamRule::real("rules_max_seconds", Real::above(0.0, 3600.0, "s")),
    ParamRule::real("battery.capacity_wh", Real::closed(0.0, 1e6, "Wh")),
    ParamRule::real("battery.start_percent", Real::closed(0.0, 100.0, "%")),
    ParamRule::real("battery.idle_w", Real::closed(0.0, 1e5, "W")),
    ParamRule::real("battery.drive_wh_per_m", Real::closed(0.0, 1e3, "Wh/m")),
    ParamRule::real("battery.charge_w", Real::closed(0.0, 1e6, "W")),
    ParamRule::real("battery.voltage_v", Real::above(0.0, 1e4, "V")),
    ParamRule::real("battery.charger_radius_m", Real::closed(0.0, 100.0, "m")),
    ParamRule::real("battery.rate_hz", Real::above(0.0, 1e3, "Hz")),
];

impl ParamRules for SimParams {
    fn param_rules() -> &'static [ParamRule] {
        RULES
    }
}

/// The rule files of a comma-separated list.
pub fn rule_paths(list: &str) -> Vec<PathBuf> {
    lockstep_ros::param_list(list)
        .into_iter()
        .map(PathBuf::from)
        .collect()
}
