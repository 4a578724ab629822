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
    /// Held-out validation segments before the window.
    pub validation_segments: i64,
    /// Length of a validation segment [s].
    pub validation_segment_secs: f64,
    /// History older than this is not used [s].
    pub history_limit_secs: f64,
    /// Window fits accumulated into the estimate of track width, delay and beta.
    pub accumulate_windows: i64,
    /// Window fits accumulated into the wheel-radius estimate (every moving window observes the radius).
    pub radius_accumulate_windows: i64,
    /// The mean of the newest 3 windows this many standard deviations off the estimate before them restarts the accumulation (the vehicle changed).
    pub change_sigmas: f64,
    /// Below threshold 1, the accumulated estimate still replaces the parameters (after validation) when it differs from them by more than this many standard deviations in radius, track width or beta; 0: threshold 1 alone decides.
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
            change_sigmas: c.change_sigmas,
            significance_sigmas: c.significance_sigmas,
            jump_m: c.jump_m,
            drift_alarm_percent: c.drift_alarm_percent,
            min_distance_m: c.observability.min_distance_m,
            min_rotation_rad: c.observability.min_rotation_rad,
            min_level_gap: c.observability.min_level_gap,
            push_node: String::new(),
            push_prefix: "nominal_vehicle.".into(),
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
    ParamRule::real("change_sigmas", SIGMAS),
    ParamRule::real("significance_sigmas", Real::closed(0.0, 1e6, "")),
    ParamRule::real("jump_m", Real::above(0.0, 1e3, "m")),
    ParamRule::real("drift_alarm_percent", Real::above(0.0, 1e3, "%")),
    ParamRule::real("min_distance_m", Real::above(0.0, 1e4, "m")),
    ParamRule::real("min_rotation_rad", Real::above(0.0, 1e4, "rad")),
    ParamRule::real("min_level_gap", Real::above(0.0, 1e3, "m/s^2")),
];

impl ParamRules for CalibratorParams {
    fn param_rules() -> &'static [ParamRule] {
        RULES
    }
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
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_library_defaults() {
        let p = CalibratorParams::default();
        assert_eq!(p.config().unwrap(), Config::default());
        assert_eq!(p.nominal().unwrap(), ModelParams::default());
        assert_eq!(p.pose_type().unwrap(), PoseType::WithCovariance);
    }

    #[test]
    fn defaults_follow_the_rules_and_a_bad_set_is_refused_with_the_range() {
        use r2r::{ParameterValue, RosParams as _};
        assert!(lockstep_ros::param_rules::check_all(&mut CalibratorParams::default()).is_ok());
        let mut p = lockstep_ros::Guarded::new(CalibratorParams::default());
        let e = p
            .set_parameter("window_secs", &ParameterValue::Double(f64::NAN))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("parameter 'window_secs' = NaN: must be finite and in [0.1, 3600] s"),
            "{e}"
        );
        let e = p
            .set_parameter("nominal.wheel_radius_m", &ParameterValue::Double(f64::INFINITY))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'nominal.wheel_radius_m' = inf"), "{e}");
        assert_eq!(p.window_secs, Config::default().window_secs);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        let p = CalibratorParams {
            window_secs: f64::NAN,
            ..CalibratorParams::default()
        };
        assert!(p.config().unwrap_err().to_string().contains("`window_secs`"));
        let p = CalibratorParams {
            gate: "loose".into(),
            ..CalibratorParams::default()
        };
        assert!(p.config().unwrap_err().to_string().contains("`gate` is `loose`"));
        let mut p = CalibratorParams::default();
        p.nominal.wheel_radius_m = 0.0;
        assert!(p
            .nominal()
            .unwrap_err()
            .to_string()
            .contains("nominal.wheel_radius_m"));
        let p = CalibratorParams {
            pose_type: "Odometry".into(),
            ..CalibratorParams::default()
        };
        assert!(p.pose_type().unwrap_err().to_string().contains("`pose_type`"));
    }
}
