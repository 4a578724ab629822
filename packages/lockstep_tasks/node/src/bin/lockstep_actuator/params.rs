//! Parameters of the simulated actuator and the kinds it can be. The names are contracts (tests, launch files,
//! the task manager's actuator mapping); each doc string is what `ros2 param describe` shows.

use lockstep_ros::{ParamRule, ParamRules, Real};

#[derive(r2r::RosParams, Debug, Clone)]
pub struct ActuatorParams {
    /// Which actuator this process is (required): navigation, localization, lift, roller, loader, display or hmi.
    pub kind: String,
    /// The action server's name; empty: the kind's default (navigate, localize, lift, roll, load, display, prompt).
    pub server: String,
    /// Every goal ends aborted (success false, "simulated failure (parameter fail)") after its normal duration; navigation aborts at once.
    pub fail: bool,
    /// Timed kinds: the first this many goals end aborted as with `fail`, the later ones succeed (an actuator
    /// that recovers: retries).
    pub fail_first: i64,
    /// Wall time to wait before accepting each goal [s] (a late acceptance); 0 = at once.
    pub accept_delay_s: f64,
    /// Timed kinds (localization, lift, roller, loader, display): wall time each goal takes [s].
    pub duration_s: f64,
    /// Navigation: cmd_vel commands (and feedback) per second.
    pub control_rate_hz: f64,
    /// Navigation: the largest linear speed ever commanded [m/s] (the goal's speed_mps caps it further).
    pub max_linear_mps: f64,
    /// Navigation: the largest |angular speed| commanded [rad/s].
    pub max_angular_radps: f64,
    /// Navigation: angular command per radian of heading error [1/s].
    pub k_heading: f64,
    /// Navigation: a waypoint counts as reached within this distance [m].
    pub waypoint_tolerance_m: f64,
    /// Navigation: the deceleration the approach to the last waypoint plans with [m/s^2] (speed <= sqrt(2 a d)).
    pub approach_decel_mps2: f64,
    /// Navigation: abort when no ground_truth pose came for this long [s] (also the wait for the first one).
    pub pose_timeout_s: f64,
}

impl Default for ActuatorParams {
    fn default() -> Self {
        Self {
            kind: String::new(),
            server: String::new(),
            fail: false,
            fail_first: 0,
            accept_delay_s: 0.0,
            duration_s: 1.0,
            control_rate_hz: 20.0,
            max_linear_mps: 1.0,
            max_angular_radps: 1.5,
            k_heading: 2.0,
            waypoint_tolerance_m: 0.15,
            approach_decel_mps2: 0.5,
            pose_timeout_s: 5.0,
        }
    }
}

/// What each parameter may hold (`lockstep_ros::ParamRules`), checked at start and on every run-time set.
const RULES: &[ParamRule] = &[
    ParamRule::one_of(
        "kind",
        &[
            "navigation",
            "localization",
            "lift",
            "roller",
            "loader",
            "display",
            "hmi",
        ],
    ),
    ParamRule::int("fail_first", lockstep_ros::Int::closed(0, 1_000_000, "goals")),
    ParamRule::real("accept_delay_s", Real::closed(0.0, 3600.0, "s")),
    ParamRule::real("duration_s", Real::closed(0.0, 3600.0, "s")),
    ParamRule::real("control_rate_hz", Real::above(0.0, 1000.0, "Hz")),
    ParamRule::real("max_linear_mps", Real::above(0.0, 100.0, "m/s")),
    ParamRule::real("max_angular_radps", Real::above(0.0, 100.0, "rad/s")),
    ParamRule::real("k_heading", Real::above(0.0, 100.0, "1/s")),
    ParamRule::real("waypoint_tolerance_m", Real::above(0.0, 100.0, "m")),
    ParamRule::real("approach_decel_mps2", Real::above(0.0, 100.0, "m/s^2")),
    ParamRule::real("pose_timeout_s", Real::above(0.0, 3600.0, "s")),
];

impl ParamRules for ActuatorParams {
    fn param_rules() -> &'static [ParamRule] {
        RULES
    }
}

pub use lockstep_tasks::sim::kind::Kind;

impl ActuatorParams {
    /// The kind parameter `kind` names (the core's rules), or why there is none.
    pub fn kind(&self) -> anyhow::Result<Kind> {
        Kind::parse(&self.kind).map_err(anyhow::Error::msg)
    }

    /// The action server's name as given (relative unless it starts with `/`).
    pub fn server_name(&self, kind: Kind) -> String {
        kind.server_name(&self.server)
    }
}

pub use lockstep_tasks_node::qualified;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_take_every_kind_and_refuse_bad_numbers_with_the_range() {
        use lockstep_ros::param_rules::check_all;
        for kind in Kind::ALL {
            let mut p = ActuatorParams {
                kind: kind.name().into(),
                ..ActuatorParams::default()
            };
            assert_eq!(check_all(&mut p), Ok(()), "{}", kind.name());
        }
        let mut p = ActuatorParams::default();
        assert_eq!(
            check_all(&mut p).err().as_deref(),
            Some(
                "parameter 'kind' = \"\": must be one of `navigation`, `localization`, `lift`, `roller`, \
                 `loader`, `display`, `hmi`"
            )
        );
        let mut p = ActuatorParams {
            kind: "lift".into(),
            duration_s: f64::NAN,
            ..ActuatorParams::default()
        };
        assert_eq!(
            check_all(&mut p).err().as_deref(),
            Some("parameter 'duration_s' = NaN: must be finite and in [0, 3600] s")
        );
        let mut p = ActuatorParams {
            kind: "navigation".into(),
            control_rate_hz: 0.0,
            ..ActuatorParams::default()
        };
        assert_eq!(
            check_all(&mut p).err().as_deref(),
            Some("parameter 'control_rate_hz' = 0: must be finite and in (0, 1000] Hz")
        );
    }

    #[test]
    fn names_resolve_against_the_namespace() {
        assert_eq!(qualified("/", "load"), "/load");
        assert_eq!(qualified("/robot", "load"), "/robot/load");
        assert_eq!(qualified("/robot", "/load"), "/load");
    }
}
