//! The node's parameters. Their names are contracts (tests, launch files); each doc string is what
//! `ros2 param describe` shows.

use anyhow::ensure;
use lockstep_calibrator::{ranges, Config, Gate, ModelParams, Observability, PoseNoise};
use lockstep_ros::{Int, ParamRule, ParamRules, Real};

/// Differential-drive parameters.
#[derive(r2r::RosParams, Debug, Clone)]
pub struct VehicleParams {
    /// Distance between the wheels' contact points [m].
    pub track_width_m: f64,
    /// Wheel radius [m].
    pub wheel_radius_m: f64,
    /// Delay from a command to the motion it causes [s].
    pub delay_secs: f64,
    /// Centripetal factor beta [s^2/m] (reconstructed model: yaw rate = w / (1 + beta*|v*w|)).
    pub centripetal_factor: f64,
}

impl From<&VehicleParams> for ModelParams {
    fn from(v: &VehicleParams) -> Self {
        ModelParams {
            track_width_m: v.track_width_m,
            wheel_radius_m: v.wheel_radius_m,
            delay_secs: v.delay_secs,
            centripetal_factor: v.centripetal_factor,
            wheel_radius_asymmetry: 0.0,
            lateral_slip_s: 0.0,
        }
    }
}

/// Parameters of the calibrator node.
#[derive(r2r::RosParams, Debug, Clone)]
pub struct CalibratorParams {
    /// The parameters the base controller uses now (its wheel speeds and odometry): the starting point and the drift reference.
    pub nominal: VehicleParams,
    /// `cmd_vel` is geometry_msgs/TwistStamped (Jazzy's diff_drive_controller, the simulator's cmd_vel_out) instead of Twist (stamped then with the node's clock: use_sim_time).
    pub cmd_vel_stamped: bool,
    /// Type of `slam_pose`: `PoseWithCovarianceStamped` or `PoseStamped`.
    pub pose_type: String,
    /// Length of a fitting window [s of data time].
    pub window_secs: f64,
    /// The calibrator steps on the latest window once per this much data time [s] (windows overlap when it is shorter than window_secs).
    pub step_period_secs: f64,
    /// Upper bound of the delay search [s].
    pub max_delay_secs: f64,
    /// Standard deviation of the observed pose's x and y [m].
    pub pose_sigma_xy_m: f64,
    /// Standard deviation of the observed pose's heading [rad].
    pub pose_sigma_yaw_rad: f64,
    /// Threshold 1: `fixed` (the value `threshold1`) or `best_of_candidates` (the smallest residual among candidate fits).
    pub gate: String,
    /// Threshold 1 of the fixed gate: a window whose residual (normalized RMS) is below it is not fitted.
    pub threshold1: f64,
    /// Threshold 2: every validation segment's residual must be below it, or the fit is rejected.
    pub threshold2: f64,
    /// Held-out windows every update is validated on (the newest that moved).
    pub validation_segments: i64,
    /// No longer used: the held-out windows are `window_secs` long [s].
    pub validation_segment_secs: f64,
    /// History older than this is not used [s].
    pub history_limit_secs: f64,
    /// Disjoint windows fitted jointly (the newest this many that are not held out).
    pub accumulate_windows: i64,
    /// No longer used: the radius is fitted jointly over `accumulate_windows`.
    pub radius_accumulate_windows: i64,
    /// Every this many disjoint windows, one is held out of the fit and only validates.
    pub holdout_every: i64,
    /// Consecutive windows are fitted as one stretch from one start pose, up to this long [s].
    pub stretch_secs: f64,
    /// The newest 3 windows' single-window estimates this many standard deviations off those before them: the vehicle changed, older windows are dropped.
    pub change_sigmas: f64,
    /// Below threshold 1, the joint estimate still replaces the parameters (after validation) when it differs from them by more than this many standard deviations in any parameter; 0: threshold 1 alone decides.
    pub significance_sigmas: f64,
    /// An observed pose that moves this much more than the wheels say is a jump; its window is skipped [m].
    pub jump_m: f64,
    /// An accepted radius or track width this many percent from nominal raises a drift alarm.
    pub drift_alarm_percent: f64,
    /// Least distance a window must cover to determine the radius [m].
    pub min_distance_m: f64,
    /// Least rotation a window must cover to determine the track width [rad].
    pub min_rotation_rad: f64,
    /// Least gap between two |v*w| levels in a window to determine beta [m/s^2].
    pub min_level_gap: f64,
    /// Node to push accepted parameters to through its SetParameters service ("" = no push), e.g. /lockstep_sim_node.
    pub push_node: String,
    /// Prefix of the pushed parameter names (`<prefix>wheel_radius_m`...).
    pub push_prefix: String,
    /// Where the wheel motion comes from: `odom` (nav_msgs/Odometry, through the nominal parameters) or `joint_states` (the wheel encoders, sensor_msgs/JointState).
    pub wheel_source: String,
    /// With wheel_source joint_states: the left wheel's joint name.
    pub left_wheel_joint: String,
    /// With wheel_source joint_states: the right wheel's joint name.
    pub right_wheel_joint: String,
    /// Weight each observed pose by the x, y and yaw variances of its PoseWithCovarianceStamped covariance, when they are finite and above zero (else pose_sigma_xy_m and pose_sigma_yaw_rad).
    pub use_pose_covariance: bool,
    /// Topic the drive_pattern action publishes its velocity commands on (Twist, or TwistStamped with cmd_vel_stamped); the default is the calibrator's own cmd_vel input, where the base listens.
    pub pattern_cmd_vel_topic: String,
    /// drive_pattern succeeds once the wheel radius's uncertainty (standard deviation) is below this [m].
    pub target_radius_std_m: f64,
    /// drive_pattern succeeds once the track width's uncertainty is below this [m] (and every other target is met).
    pub target_track_std_m: f64,
    /// drive_pattern succeeds once the delay's uncertainty is below this [s] (and every other target is met).
    pub target_delay_std_s: f64,
    /// drive_pattern succeeds once the centripetal factor's uncertainty is below this [s^2/m] (and every other target is met).
    pub target_beta_std: f64,
}

impl Default for CalibratorParams {
    fn default() -> Self {
        let c = Config::default();
        let n = ModelParams::default();
        CalibratorParams {
            nominal: VehicleParams {
                track_width_m: n.track_width_m,
                wheel_radius_m: n.wheel_radius_m,
                delay_secs: n.delay_secs,
                centripetal_factor: n.centripetal_factor,
            },
            cmd_vel_stamped: false,
            pose_type: "PoseWithCovarianceStamped".into(),
            window_secs: c.window_secs,
            step_period_secs: 1.0,
            max_delay_secs: c.max_delay_secs,
            pose_sigma_xy_m: c.noise.sigma_xy_m,
            pose_sigma_yaw_rad: c.noise.sigma_yaw_rad,
            gate: "fixed".into(),
            threshold1: match c.gate {
                Gate::Fixed(t) => t,
                Gate::BestOfCandidates => 1.1,
            },
            threshold2: c.threshold2,
            validation_segments: c.validation_segments as i64,
            validation_segment_secs: c.validation_segment_secs,
            history_limit_secs: c.history_limit_secs,
            accumulate_windows: c.accumulate_windows as i64,
            radius_accumulate_windows: c.radius_accumulate_windows as i64,
            holdout_every: c.holdout_every as i64,
            stretch_secs: c.stretch_secs,
            change_sigmas: c.change_sigmas,
            significance_sigmas: c.significance_sigmas,
            jump_m: c.jump_m,
            drift_alarm_percent: c.drift_alarm_percent,
            min_distance_m: c.observability.min_distance_m,
            min_rotation_rad: c.observability.min_rotation_rad,
            min_level_gap: c.observability.min_level_gap,
            push_node: String::new(),
            push_prefix: "nominal_vehicle.".into(),
            wheel_source: "odom".into(),
            left_wheel_joint: "left_wheel_joint".into(),
            right_wheel_joint: "right_wheel_joint".into(),
            use_pose_covariance: true,
            pattern_cmd_vel_topic: "cmd_vel".into(),
            target_radius_std_m: 0.00005,
            target_track_std_m: 0.0004,
            target_delay_std_s: 0.005,
            target_beta_std: 0.02,
        }
    }
}

/// A count of windows or segments.
const COUNT: Int = Int::closed(1, 100_000, "");
const SIGMAS: Real = Real::above(0.0, 1e6, "");

/// What each parameter may hold, checked at start and on every run-time set (the calibrator reads its
/// parameters at start: a valid set is refused too, with a reason saying to restart it).
const RULES: &[ParamRule] = &[
    ParamRule::real("nominal.track_width_m", ranges::TRACK_WIDTH_M),
    ParamRule::real("nominal.wheel_radius_m", ranges::WHEEL_RADIUS_M),
    ParamRule::real("nominal.delay_secs", ranges::DELAY_SECS),
    ParamRule::real("nominal.centripetal_factor", ranges::CENTRIPETAL_FACTOR),
    ParamRule::one_of(
        "pose_type",
        &[
            "PoseWithCovarianceStamped",
            "geometry_msgs/msg/PoseWithCovarianceStamped",
            "PoseStamped",
            "geometry_msgs/msg/PoseStamped",
        ],
    ),
    ParamRule::real("window_secs", ranges::WINDOW_SECS),
    ParamRule::real("step_period_secs", Real::above(0.0, 3600.0, "s")),
    ParamRule::real("max_delay_secs", Real::above(0.0, 10.0, "s")),
    ParamRule::real("pose_sigma_xy_m", ranges::POSE_SIGMA_XY_M),
    ParamRule::real("pose_sigma_yaw_rad", ranges::POSE_SIGMA_YAW_RAD),
    ParamRule::one_of("gate", &["fixed", "best_of_candidates"]),
    ParamRule::real("threshold1", SIGMAS),
    ParamRule::real("threshold2", SIGMAS),
    ParamRule::int("validation_segments", COUNT),
    ParamRule::real("validation_segment_secs", Real::above(0.0, 3600.0, "s")),
    ParamRule::real("history_limit_secs", Real::above(0.0, 1e6, "s")),
    ParamRule::int("accumulate_windows", COUNT),
    ParamRule::int("radius_accumulate_windows", COUNT),
    ParamRule::int("holdout_every", COUNT),
    ParamRule::real("stretch_secs", Real::above(0.0, 3600.0, "s")),
    ParamRule::real("change_sigmas", SIGMAS),
    ParamRule::real("significance_sigmas", Real::closed(0.0, 1e6, "")),
    ParamRule::real("jump_m", Real::above(0.0, 1e3, "m")),
    ParamRule::real("drift_alarm_percent", Real::above(0.0, 1e3, "%")),
    ParamRule::real("min_distance_m", Real::above(0.0, 1e4, "m")),
    ParamRule::real("min_rotation_rad", Real::above(0.0, 1e4, "rad")),
    ParamRule::real("min_level_gap", Real::above(0.0, 1e3, "m/s^2")),
    ParamRule::one_of("wheel_source", &["odom", "joint_states"]),
    ParamRule::non_empty("left_wheel_joint"),
    ParamRule::non_empty("right_wheel_joint"),
    ParamRule::non_empty("pattern_cmd_vel_topic"),
    ParamRule::real("target_radius_std_m", Real::above(0.0, 1.0, "m")),
    ParamRule::real("target_track_std_m", Real::above(0.0, 1.0, "m")),
    ParamRule::real("target_delay_std_s", Real::above(0.0, 10.0, "s")),
    ParamRule::real("target_beta_std", Real::above(0.0, 100.0, "s^2/m")),
];

impl ParamRules for CalibratorParams {
    fn param_rules() -> &'static [ParamRule] {
        RULES
    }
}

/// Where the wheel motion comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WheelSource {
    /// nav_msgs/Odometry on `odom`.
    Odometry,
    /// sensor_msgs/JointState on `joint_states`: the two wheels' joints (left, right).
    JointStates { left: String, right: String },
}

/// The observed pose's message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoseType {
    /// geometry_msgs/PoseWithCovarianceStamped (slam_toolbox, AMCL, the simulator).
    WithCovariance,
    /// geometry_msgs/PoseStamped.
    Plain,
}

impl CalibratorParams {
    /// The pose type; an error names the parameter and the accepted values.
    pub fn pose_type(&self) -> anyhow::Result<PoseType> {
        match self.pose_type.as_str() {
            "PoseWithCovarianceStamped" | "geometry_msgs/msg/PoseWithCovarianceStamped" => {
                Ok(PoseType::WithCovariance)
            }
            "PoseStamped" | "geometry_msgs/msg/PoseStamped" => Ok(PoseType::Plain),
            other => anyhow::bail!(
                "parameter `pose_type` is `{other}`; it must be `PoseWithCovarianceStamped` or `PoseStamped`"
            ),
        }
    }

    /// The wheel source; an error names the parameter and the accepted values.
    pub fn wheel_source(&self) -> anyhow::Result<WheelSource> {
        match self.wheel_source.as_str() {
            "odom" => Ok(WheelSource::Odometry),
            "joint_states" => {
                for (name, joint) in [
                    ("left_wheel_joint", &self.left_wheel_joint),
                    ("right_wheel_joint", &self.right_wheel_joint),
                ] {
                    ensure!(
                        !joint.trim().is_empty(),
                        "parameter `{name}` is empty; name the wheel's joint"
                    );
                }
                ensure!(
                    self.left_wheel_joint != self.right_wheel_joint,
                    "parameters `left_wheel_joint` and `right_wheel_joint` are both `{}`; name two joints",
                    self.left_wheel_joint
                );
                Ok(WheelSource::JointStates {
                    left: self.left_wheel_joint.clone(),
                    right: self.right_wheel_joint.clone(),
                })
            }
            other => {
                anyhow::bail!("parameter `wheel_source` is `{other}`; it must be `odom` or `joint_states`")
            }
        }
    }

    /// The drive_pattern targets (radius, track width, delay, beta); an error names the bad one.
    pub fn targets(&self) -> anyhow::Result<[f64; 4]> {
        let targets = [
            ("target_radius_std_m", self.target_radius_std_m),
            ("target_track_std_m", self.target_track_std_m),
            ("target_delay_std_s", self.target_delay_std_s),
            ("target_beta_std", self.target_beta_std),
        ];
        for (name, v) in targets {
            ensure!(
                v.is_finite() && v > 0.0,
                "parameter `{name}` is {v}; it must be > 0"
            );
        }
        Ok(targets.map(|(_, v)| v))
    }

    /// The nominal parameters; an error names the bad one.
    pub fn nominal(&self) -> anyhow::Result<ModelParams> {
        let n = ModelParams::from(&self.nominal);
        for (name, v, positive) in [
            ("nominal.track_width_m", n.track_width_m, true),
            ("nominal.wheel_radius_m", n.wheel_radius_m, true),
            ("nominal.delay_secs", n.delay_secs, false),
            ("nominal.centripetal_factor", n.centripetal_factor, false),
        ] {
            ensure!(
                v.is_finite() && (v > 0.0 || (!positive && v == 0.0)),
                "parameter `{name}` is {v}; it must be {}",
                if positive { "> 0" } else { ">= 0" }
            );
        }
        Ok(n)
    }

    /// The step period; an error names the parameter.
    pub fn step_period_secs(&self) -> anyhow::Result<f64> {
        let v = self.step_period_secs;
        ensure!(
            v.is_finite() && v > 0.0,
            "parameter `step_period_secs` is {v}; it must be > 0"
        );
        Ok(v)
    }

    /// The library's configuration; an error names the parameter.
    pub fn config(&self) -> anyhow::Result<Config> {
        let positive = |name: &str, v: f64| {
            ensure!(
                v.is_finite() && v > 0.0,
                "parameter `{name}` is {v}; it must be > 0"
            );
            Ok(v)
        };
        let count = |name: &str, v: i64| {
            ensure!(v >= 1, "parameter `{name}` is {v}; it must be >= 1");
            Ok(v as usize)
        };
        let gate = match self.gate.as_str() {
            "fixed" => Gate::Fixed(positive("threshold1", self.threshold1)?),
            "best_of_candidates" => Gate::BestOfCandidates,
            other => {
                anyhow::bail!("parameter `gate` is `{other}`; it must be `fixed` or `best_of_candidates`")
            }
        };
        Ok(Config {
            window_secs: positive("window_secs", self.window_secs)?,
            max_delay_secs: positive("max_delay_secs", self.max_delay_secs)?,
            noise: PoseNoise {
                sigma_xy_m: positive("pose_sigma_xy_m", self.pose_sigma_xy_m)?,
                sigma_yaw_rad: positive("pose_sigma_yaw_rad", self.pose_sigma_yaw_rad)?,
            },
            observability: Observability {
                min_distance_m: positive("min_distance_m", self.min_distance_m)?,
                min_rotation_rad: positive("min_rotation_rad", self.min_rotation_rad)?,
                min_level_gap: positive("min_level_gap", self.min_level_gap)?,
            },
            gate,
            threshold2: positive("threshold2", self.threshold2)?,
            validation_segments: count("validation_segments", self.validation_segments)?,
            validation_segment_secs: positive("validation_segment_secs", self.validation_segment_secs)?,
            history_limit_secs: positive("history_limit_secs", self.history_limit_secs)?,
            accumulate_windows: count("accumulate_windows", self.accumulate_windows)?,
            radius_accumulate_windows: count("radius_accumulate_windows", self.radius_accumulate_windows)?,
            holdout_every: count("holdout_every", self.holdout_every)?,
            stretch_secs: positive("stretch_secs", self.stretch_secs)?,
            change_sigmas: positive("change_sigmas", self.change_sigmas)?,
            significance_sigmas: {
                let v = self.significance_sigmas;
                ensure!(
                    v.is_finite() && v >= 0.0,
                    "parameter `significance_sigmas` is {v}; it must be >= 0"
                );
                v
            },
            jump_m: positive("jump_m", self.jump_m)?,
            drift_alarm_percent: positive("drift_alarm_percent", self.drift_alarm_percent)?,
        })
    }
}

#[cfg(test)]
mod tests;
