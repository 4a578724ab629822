//! Parameters of the interpolation player. Their names are contracts (tests, launch files); each doc string is
//! what `ros2 param describe` shows.

use std::path::PathBuf;

use anyhow::ensure;
use lockstep_interpolation::{speed_limit, AxisLimits, Interpolation, InterpolationChoice, PERIOD_S};
use lockstep_ros::{Int, ParamRule, ParamRules, Real};

/// What each parameter may hold, checked at start and on every run-time set (the player reads its parameters
/// at start: a valid set is refused too, with a reason saying to restart it).
const RULES: &[ParamRule] = &[
    ParamRule::non_empty("limits_file"),
    ParamRule::real("period_s", PERIOD_S),
    ParamRule::one_of("output", &["forward", "trajectory"]),
    ParamRule::non_empty("controller"),
    ParamRule::real("align_tolerance", Real::above(0.0, 1e3, "rad or m")),
    ParamRule::real("joint_states_timeout_secs", Real::above(0.0, 3600.0, "s")),
    ParamRule::real("settle_timeout_secs", Real::above(0.0, 3600.0, "s")),
    ParamRule::real("feedback_period_s", Real::closed(1e-3, 3600.0, "s")),
    ParamRule::one_of("interpolation", &["linear", "cubic", "auto"]),
    ParamRule::int("trajectory_window_points", Int::closed(2, 10_000, "points")),
    ParamRule::int("trajectory_resend_ticks", Int::closed(1, 9_999, "ticks")),
    ParamRule::one_of("mode", &["player", "trajectory_controller"]),
    ParamRule::real("path_tolerance", Real::closed(0.0, 1e3, "rad or m")),
    ParamRule::real("goal_tolerance", Real::closed(0.0, 1e3, "rad or m")),
    ParamRule::real(
        "stopped_velocity_tolerance",
        Real::closed(0.0, 1e3, "rad/s or m/s"),
    ),
    ParamRule::real("goal_time_tolerance_s", Real::closed(0.0, 3600.0, "s")),
    ParamRule::real("initial_speed_scaling_factor", Real::closed(0.0, 100.0, "")),
];

#[derive(r2r::RosParams, Debug, Clone)]
pub struct PlayerParams {
    /// Comma-separated directories interpolation files may be read from (relative goal paths: under the first).
    pub roots: String,
    /// Joint-limits YAML (ros2_control's joint_limits layout): max_velocity and max_acceleration for every played joint, max_jerk optional.
    pub limits_file: String,
    /// Output period T_c [s].
    pub period_s: f64,
    /// `forward`: std_msgs/Float64MultiArray on <controller>/commands, one per tick; `trajectory`: trajectory_msgs/JointTrajectory on <controller>/joint_trajectory, a window of trajectory_window_points future points for a joint_trajectory_controller.
    pub output: String,
    /// The controller's name (topic prefix).
    pub controller: String,
    /// Comma-separated joint order of the controller's command; empty: the file's order.
    pub controller_joints: String,
    /// Insert an alignment motion when /joint_states is more than align_tolerance from the section's first point.
    pub align: bool,
    /// Position tolerance for "at the first point" [rad or m].
    pub align_tolerance: f64,
    /// A goal needs /joint_states for every played joint within this time [s] (only with align).
    pub joint_states_timeout_secs: f64,
    /// After the alignment, the joints must reach the first point within this time [s].
    pub settle_timeout_secs: f64,
    /// Seconds between two MovePlay feedback messages.
    pub feedback_period_s: f64,
    /// Between file points: `linear`, `cubic` (a C2 spline through the same points, whose jerk is bounded) or `auto` (cubic when a played joint has a jerk limit, else linear).
    pub interpolation: String,
    /// With output:=trajectory: points per JointTrajectory, the commands of the next ticks at time_from_start 1, 2, ... times period_s (header stamp: the tick's time).
    pub trajectory_window_points: i64,
    /// With output:=trajectory: a new window every this many ticks (fewer than trajectory_window_points), and at once when a pause, resume, speed change or cancel changes the motion ahead.
    pub trajectory_resend_ticks: i64,
    /// `player`: MovePlay goals only; `trajectory_controller`: also what a joint_trajectory_controller offers (~/follow_joint_trajectory, ~/joint_trajectory, ~/controller_state, ~/speed_scaling_input) for controller_joints; run the node under the controller's name (-r __node:=joint_trajectory_controller) so clients find it where they look.
    pub mode: String,
    /// Default path tolerance of a trajectory [rad or m], every joint: further from the command while moving aborts with PATH_TOLERANCE_VIOLATED; 0: not checked.
    pub path_tolerance: f64,
    /// Default goal tolerance [rad or m], every joint: how close to the last point a trajectory must end; 0: not checked.
    pub goal_tolerance: f64,
    /// Largest speed at the end of a trajectory [rad/s or m/s] (checked when joint_states carry velocities); 0: not checked.
    pub stopped_velocity_tolerance: f64,
    /// Default time after a trajectory's end to get within the goal tolerance [s], else GOAL_TOLERANCE_VIOLATED; 0: wait as long as it takes.
    pub goal_time_tolerance_s: f64,
    /// The speed scaling factor until one arrives on ~/speed_scaling_input (0: trajectories wait, paused).
    pub initial_speed_scaling_factor: f64,
}

impl Default for PlayerParams {
    fn default() -> Self {
        Self {
            roots: String::new(),
            limits_file: String::new(),
            period_s: 0.002,
            output: "forward".into(),
            controller: "forward_position_controller".into(),
            controller_joints: String::new(),
            align: true,
            align_tolerance: 1e-3,
            joint_states_timeout_secs: 2.0,
            settle_timeout_secs: 5.0,
            feedback_period_s: 0.05,
            interpolation: "auto".into(),
            trajectory_window_points: 50,
            trajectory_resend_ticks: 10,
            mode: "player".into(),
            path_tolerance: 0.0,
            goal_tolerance: 0.0,
            stopped_velocity_tolerance: 0.01,
            goal_time_tolerance_s: 0.0,
            initial_speed_scaling_factor: 1.0,
        }
    }
}

impl ParamRules for PlayerParams {
    fn param_rules() -> &'static [ParamRule] {
        RULES
    }
}

/// Where commands go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Forward,
    Trajectory,
}

pub use lockstep_ros::param_list as list;

impl PlayerParams {
    pub fn roots(&self) -> Vec<PathBuf> {
        list(&self.roots).into_iter().map(PathBuf::from).collect()
    }

    pub fn output(&self) -> anyhow::Result<Output> {
        match self.output.as_str() {
            "forward" => Ok(Output::Forward),
            "trajectory" => Ok(Output::Trajectory),
            other => anyhow::bail!("parameter `output` is `{other}`; it must be `forward` or `trajectory`"),
        }
    }

    /// The interpolation for joints `names` with `limits`, resolved by the core as `lockstep player check`
    /// does (`auto` is cubic when one of them has a jerk limit). `linear` with a jerk limit is refused: between
    /// file points its velocity steps, so at any s but 1 its commands break the jerk limit (see
    /// `lockstep_interpolation::spline`).
    pub fn interpolation(&self, names: &[String], limits: &[AxisLimits]) -> anyhow::Result<Interpolation> {
        let choice: InterpolationChoice = self
            .interpolation
            .parse()
            .map_err(|e| anyhow::anyhow!("parameter `interpolation` is {e}"))?;
        let interpolation = choice.resolve(limits);
        let jerk_limited = speed_limit::jerk_limited(limits).and_then(|axis| names.get(axis));
        if let (Interpolation::Linear, Some(joint)) = (interpolation, jerk_limited) {
            anyhow::bail!(
                "joint `{joint}` has a jerk limit, which the linear interpolation breaks at any speed but 1: set parameter `interpolation` to `cubic` or `auto`"
            );
        }
        Ok(interpolation)
    }

    /// Whether the node also acts as a joint_trajectory_controller.
    pub fn trajectory_controller(&self) -> bool {
        self.mode == "trajectory_controller"
    }

    /// Check the numbers; an error names the parameter.
    pub fn check(&self) -> anyhow::Result<()> {
        // Each parameter's own range (the table above); then what ties parameters together.
        lockstep_ros::param_rules::check_all(&mut self.clone()).map_err(anyhow::Error::msg)?;
        self.output()?;
        self.interpolation(&[], &[])?;
        ensure!(
            !self.trajectory_controller() || !list(&self.controller_joints).is_empty(),
            "parameter `controller_joints` is empty; mode `trajectory_controller` needs the joints it controls"
        );
        ensure!(
            self.trajectory_resend_ticks < self.trajectory_window_points,
            "parameter `trajectory_resend_ticks` is {}; it must be less than `trajectory_window_points` ({}): \
             a window must reach past the next one",
            self.trajectory_resend_ticks,
            self.trajectory_window_points
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use r2r::{ParameterValue, RosParams as _};

    #[test]
    fn a_bad_start_value_or_run_time_set_is_refused_with_the_range() {
        let p = PlayerParams {
            period_s: 1e-300,
            limits_file: "limits.yaml".into(),
            ..PlayerParams::default()
        };
        assert_eq!(
            p.check().unwrap_err().to_string(),
            "parameter 'period_s' = 1e-300: must be finite and in [1e-5, 10] s"
        );
        let mut guarded = lockstep_ros::Guarded::new(PlayerParams::default());
        guarded.set_guard(lockstep_ros::start_only(&[]));
        let e = guarded
            .set_parameter("feedback_period_s", &ParameterValue::Double(f64::NAN))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'feedback_period_s' = NaN: must be finite and in [0.001, 3600] s"),
            "{e}"
        );
        let e = guarded
            .set_parameter("period_s", &ParameterValue::Double(0.004))
            .unwrap_err()
            .to_string();
        assert!(e.contains("read at start only"), "{e}");
        assert_eq!(guarded.period_s, 0.002);
    }
}
