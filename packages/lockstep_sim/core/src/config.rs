//! The simulator's configuration: who drives, the two vehicle models, sensing, noise, limits and bounds.

use std::str::FromStr;

use crate::battery::BatteryConfig;
use crate::error::{check_finite, Error, Result};
use crate::input::CommandLimits;
use crate::scene::Cell;
use crate::slip::SlipModel;
use crate::vehicle::DiffDriveParams;

/// Who drives the vehicle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The behaviour rules decide every tick (`next_state`, `drive`).
    Autonomous,
    /// Commands come from outside ([`crate::Simulator::set_command`], i.e. `cmd_vel`).
    Commanded,
}

impl FromStr for Mode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Mode> {
        match s.trim() {
            "autonomous" => Ok(Mode::Autonomous),
            "commanded" => Ok(Mode::Commanded),
            other => Err(Error::BadParameter {
                name: "mode",
                reason: format!("is `{other}`; expected `autonomous` or `commanded`"),
            }),
        }
    }
}

/// Everything about a run that is not the scene or the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Who drives.
    pub mode: Mode,
    /// The parameters the ground obeys.
    pub true_vehicle: DiffDriveParams,
    /// How the ground slips under the TRUE vehicle. [`SlipModel::Centripetal`] (the default) uses the true
    /// `centripetal_factor`; [`SlipModel::Lateral`] does not use it. The encoders and odometry never see the
    /// slip.
    pub slip: SlipModel,
    /// The parameters the base controller (wheel speeds from `cmd_vel`, odometry) believes in.
    pub nominal_vehicle: DiffDriveParams,
    /// Radius of the vehicle's circular footprint (m), used for collisions and clearances.
    pub vehicle_radius_m: f64,
    /// Range of the free-distance sensors (m).
    pub sensor_range_m: f64,
    /// Asserted as `min_step(D)`: a direction with less free distance is closed (m). 0 = half the scene's
    /// cell size (the smallest step is set from the scene).
    pub min_step_m: f64,
    /// `at_destination` holds within this distance of the destination cell's centre (m).
    pub arrival_tolerance_m: f64,
    /// In commanded mode, a command older than this (simulated seconds) is replaced by a stop; 0 = never.
    pub cmd_timeout_secs: f64,
    /// The largest velocities taken from `cmd_vel` or the rules' `drive`; a larger command is dropped (a
    /// command that large comes from a broken sender, and it would overflow the wheel arithmetic).
    pub limits: CommandLimits,
    /// Standard deviation of the SLAM pose's x and y noise (m).
    pub slam_sigma_xy_m: f64,
    /// Standard deviation of the SLAM pose's heading noise (rad).
    pub slam_sigma_yaw_rad: f64,
    /// Simulated seconds between two SLAM samples; 0 = no SLAM.
    pub slam_period_secs: f64,
    /// Seed of the SLAM noise.
    pub seed: u64,
    /// Start cell; `None` = the first enterable cell in row-major order.
    pub start: Option<Cell>,
    /// Start heading (rad, counter-clockwise from +x).
    pub start_yaw_rad: f64,
    /// Destination cell; `None` = hold still (state `idle`) until one is set.
    pub destination: Option<Cell>,
    /// Most points the path history keeps (>= 2): beyond it every other point is dropped and the spacing
    /// doubles, so the path still spans the whole run (see [`crate::PathHistory`]).
    pub path_max_points: usize,
    /// Most entries the state history keeps (>= 1): the oldest go first.
    pub state_history_depth: usize,
    /// Wall seconds one evaluation of the rules may take (> 0). One runs every step (in milliseconds for
    /// real rules); a rule that never reaches a fixpoint is stopped after this long and the step goes on
    /// without it, with a warning naming the rule files and the limit.
    pub rules_max_seconds: f64,
    /// The battery (capacity 0: none).
    pub battery: BatteryConfig,
}

/// The default of [`SimConfig::rules_max_seconds`]: a step's evaluation takes milliseconds, and a scene's
/// decoding at start or on a reload well under a second even on a loaded machine; a rule that runs away
/// stalls a step for at most this long.
pub const DEFAULT_RULES_MAX_SECONDS: f64 = 1.0;

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            mode: Mode::Autonomous,
            true_vehicle: DiffDriveParams::default(),
            slip: SlipModel::Centripetal,
            nominal_vehicle: DiffDriveParams::default(),
            vehicle_radius_m: 0.25,
            sensor_range_m: 10.0,
            min_step_m: 0.0,
            arrival_tolerance_m: 0.3,
            cmd_timeout_secs: 0.5,
            limits: CommandLimits {
                max_linear_mps: 10.0,
                max_angular_radps: 10.0,
            },
            slam_sigma_xy_m: 0.05,
            slam_sigma_yaw_rad: 0.02,
            slam_period_secs: 0.2,
            seed: 0,
            start: None,
            start_yaw_rad: 0.0,
            destination: None,
            path_max_points: 2000,
            state_history_depth: 1000,
            rules_max_seconds: DEFAULT_RULES_MAX_SECONDS,
            battery: BatteryConfig::default(),
        }
    }
}

impl SimConfig {
    /// Checks every value; the error names the field.
    pub fn validate(&self) -> Result<()> {
        self.true_vehicle.validate("true")?;
        self.nominal_vehicle.validate("nominal")?;
        self.slip.validate()?;
        check_finite("vehicle_radius_m", self.vehicle_radius_m, true)?;
        check_finite("sensor_range_m", self.sensor_range_m, true)?;
        check_finite("min_step_m", self.min_step_m, false)?;
        check_finite("arrival_tolerance_m", self.arrival_tolerance_m, true)?;
        check_finite("cmd_timeout_secs", self.cmd_timeout_secs, false)?;
        check_finite("max_linear_mps", self.limits.max_linear_mps, true)?;
        check_finite("max_angular_radps", self.limits.max_angular_radps, true)?;
        check_finite("slam_sigma_xy_m", self.slam_sigma_xy_m, false)?;
        check_finite("slam_sigma_yaw_rad", self.slam_sigma_yaw_rad, false)?;
        check_finite("slam_period_secs", self.slam_period_secs, false)?;
        check_finite("rules_max_seconds", self.rules_max_seconds, true)?;
        let b = &self.battery;
        check_finite("battery.capacity_wh", b.capacity_wh, false)?;
        check_finite("battery.idle_w", b.idle_w, false)?;
        check_finite("battery.drive_wh_per_m", b.drive_wh_per_m, false)?;
        check_finite("battery.charge_w", b.charge_w, false)?;
        check_finite("battery.voltage_v", b.voltage_v, true)?;
        check_finite("battery.charger_radius_m", b.charger_radius_m, false)?;
        if !(0.0..=1.0).contains(&b.start_fraction) {
            return Err(Error::BadParameter {
                name: "battery.start_fraction",
                reason: format!("is {}; it must be in [0, 1]", b.start_fraction),
            });
        }
        if !self.start_yaw_rad.is_finite() {
            return Err(Error::BadParameter {
                name: "start_yaw_rad",
                reason: "is not finite".into(),
            });
        }
        if self.path_max_points < 2 {
            return Err(Error::BadParameter {
                name: "path_max_points",
                reason: format!("is {}; it must be >= 2", self.path_max_points),
            });
        }
        if self.state_history_depth < 1 {
            return Err(Error::BadParameter {
                name: "state_history_depth",
                reason: "is 0; it must be >= 1".into(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_number_is_checked_and_named() {
        assert!(SimConfig::default().validate().is_ok());
        type Spoil = fn(&mut SimConfig);
        let cases: [(&str, Spoil); 7] = [
            ("max_linear_mps", |c| c.limits.max_linear_mps = f64::INFINITY),
            ("lateral_slip_s", |c| {
                c.slip = SlipModel::Lateral {
                    lateral_slip_s: -0.1,
                    longitudinal_slip_s2pm: 0.0,
                }
            }),
            ("max_angular_radps", |c| c.limits.max_angular_radps = 0.0),
            ("vehicle_radius_m", |c| c.vehicle_radius_m = f64::NAN),
            ("path_max_points", |c| c.path_max_points = 1),
            ("state_history_depth", |c| c.state_history_depth = 0),
            ("rules_max_seconds", |c| c.rules_max_seconds = 0.0),
        ];
        for (name, spoil) in cases {
            let mut config = SimConfig::default();
            spoil(&mut config);
            let e = config.validate().unwrap_err();
            assert!(e.to_string().contains(name), "{name}: {e}");
        }
    }
}
