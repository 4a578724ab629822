//! What the parameters make: the simulator's configuration (checked, an error naming the parameter), the slip
//! model a run-time set asks for, and the values read once at start.

use std::time::Duration;

use lockstep_sim::BatteryConfig;
use lockstep_sim::{
    cell_setting, check_time_scale, count_setting, history_depth, marker_period_secs, non_negative_setting,
    period_of_rate, positive_setting, watch_period, CommandLimits, DiffDriveParams, Mode, SimConfig,
    SlipModel, MAX_TIME_SCALE,
};
use r2r::ParameterValue;

use crate::params::SimParams;

impl SimParams {
    /// The battery model of the `battery.*` parameters; an error names `battery.chargers` and the pair.
    pub fn battery_config(&self) -> anyhow::Result<BatteryConfig> {
        let b = &self.battery;
        Ok(BatteryConfig {
            capacity_wh: b.capacity_wh,
            start_fraction: b.start_percent / 100.0,
            idle_w: b.idle_w,
            drive_wh_per_m: b.drive_wh_per_m,
            charge_w: b.charge_w,
            voltage_v: b.voltage_v,
            chargers: chargers(&b.chargers)?,
            charger_radius_m: b.charger_radius_m,
        })
    }

    /// The simulator's configuration; an error names the parameter.
    pub fn config(&self) -> anyhow::Result<SimConfig> {
        lockstep_ros::param_rules::check_all(&mut self.clone()).map_err(anyhow::Error::msg)?;
        let mode: Mode = self.mode.parse()?;
        for (name, rate) in [
            ("rate_hz", self.rate_hz),
            ("publish_rate_hz", self.publish_rate_hz),
            ("watch_period_secs", self.watch_period_secs),
            ("marker_rate_hz", self.marker_rate_hz),
        ] {
            positive_setting(name, rate)?;
        }
        non_negative_setting("range_rate_hz", self.range_rate_hz)?;
        non_negative_setting("slam_rate_hz", self.slam_rate_hz)?;
        anyhow::ensure!(
            check_time_scale(self.time_scale).is_ok(),
            "parameter `time_scale` is {}; it must be a finite number in [0, {MAX_TIME_SCALE}]",
            self.time_scale
        );
        anyhow::ensure!(
            self.seed >= 0,
            "parameter `seed` is {}; it must be >= 0",
            self.seed
        );
        Ok(SimConfig {
            mode,
            true_vehicle: DiffDriveParams::from(&self.true_vehicle),
            nominal_vehicle: DiffDriveParams::from(&self.nominal_vehicle),
            slip: self.slip()?,
            vehicle_radius_m: self.vehicle_radius_m,
            sensor_range_m: self.sensor_range_m,
            min_step_m: self.min_step_m,
            arrival_tolerance_m: self.arrival_tolerance_m,
            cmd_timeout_secs: self.cmd_timeout_secs,
            limits: CommandLimits {
                max_linear_mps: self.max_linear_mps,
                max_angular_radps: self.max_angular_radps,
            },
            slam_sigma_xy_m: self.slam_sigma_xy_m,
            slam_sigma_yaw_rad: self.slam_sigma_yaw_rad,
            slam_period_secs: period_of_rate(self.slam_rate_hz),
            seed: self.seed as u64,
            start: cell_setting(self.start_column, self.start_row, "start")?,
            start_yaw_rad: self.start_yaw_rad,
            destination: cell_setting(self.destination_column, self.destination_row, "destination")?,
            battery: self.battery_config()?,
            path_max_points: count_setting("path_max_points", self.path_max_points, 2)?,
            state_history_depth: count_setting("state_history_depth", self.state_history_depth, 1)?,
            rules_max_seconds: self.rules_max_seconds,
        })
    }
}

impl SimParams {
    /// The slip model `slip_model`, `lateral_slip_s` and `longitudinal_slip_s2pm` name; an error names the
    /// parameter (an unknown model: with the accepted names).
    pub fn slip(&self) -> anyhow::Result<SlipModel> {
        Ok(SlipModel::from_parameters(
            &self.slip_model,
            self.lateral_slip_s,
            self.longitudinal_slip_s2pm,
        )?)
    }

    /// The slip model once one of its parameters (`name`) is set to `value`, the others as in force: what a
    /// run-time set asks for. An error (the reason) when the value does not make a model.
    pub fn slip_with(&self, name: &str, value: &ParameterValue) -> Result<SlipModel, String> {
        let mut wanted = SimParams {
            slip_model: self.slip_model.clone(),
            lateral_slip_s: self.lateral_slip_s,
            longitudinal_slip_s2pm: self.longitudinal_slip_s2pm,
            ..SimParams::default()
        };
        match (name, value) {
            ("slip_model", ParameterValue::String(model)) => wanted.slip_model = model.clone(),
            ("lateral_slip_s", ParameterValue::Double(v)) => wanted.lateral_slip_s = *v,
            ("longitudinal_slip_s2pm", ParameterValue::Double(v)) => wanted.longitudinal_slip_s2pm = *v,
            _ => {
                return Err(format!(
                    "`{name}` = {value:?} is not a slip model parameter of its type"
                ))
            }
        }
        wanted.slip().map_err(|e| e.to_string())
    }
}

/// Parameters as read at start, and what derives from them. (The ones that change at run time -- see
/// `inputs::parameter_guard` -- are read from the simulator or the typed parameters, never from here.)
#[derive(Debug, Clone)]
pub struct Statics {
    /// The parameters as they were at start.
    pub p: SimParams,
    pub watch_period: Duration,
    pub marker_period_secs: f64,
    pub state_history_depth: usize,
}

impl From<&SimParams> for Statics {
    fn from(p: &SimParams) -> Self {
        Statics {
            p: p.clone(),
            watch_period: watch_period(p.watch_period_secs),
            marker_period_secs: marker_period_secs(p.marker_rate_hz),
            state_history_depth: history_depth(p.state_history_depth),
        }
    }
}

/// Charger positions from `x y` pairs separated by commas; an error names the parameter and the pair.
fn chargers(text: &str) -> anyhow::Result<Vec<[f64; 2]>> {
    /// More would be a typo (and every step looks at each).
    const MAX_CHARGERS: usize = 1000;
    let pairs = lockstep_ros::param_list(text);
    anyhow::ensure!(
        pairs.len() <= MAX_CHARGERS,
        "parameter `battery.chargers`: {} chargers, more than {MAX_CHARGERS}",
        pairs.len()
    );
    pairs
        .iter()
        .enumerate()
        .map(|(i, pair)| {
            let xy: Vec<f64> = pair
                .split_whitespace()
                .map(str::parse::<f64>)
                .collect::<Result<_, _>>()
                .unwrap_or_default();
            match xy[..] {
                [x, y] if x.is_finite() && y.is_finite() => Ok([x, y]),
                _ => anyhow::bail!(
                    "parameter `battery.chargers`: charger {} is `{pair}`; each is `x y` in metres (\"2.5 5.5, 17.5 12.5\")",
                    i + 1
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::params::{rule_paths, VehicleParams};

    #[test]
    fn defaults_make_a_valid_configuration() {
        let config = SimParams::default().config().unwrap();
        assert!(config.validate().is_ok());
        assert_eq!(config.true_vehicle, DiffDriveParams::default());
        assert_eq!((config.path_max_points, config.state_history_depth), (2000, 1000));
    }

    #[test]
    fn bad_counts_and_cells_are_named() {
        let p = SimParams {
            path_max_points: 1,
            ..SimParams::default()
        };
        assert!(p.config().unwrap_err().to_string().contains("path_max_points"));
        let p = SimParams {
            state_history_depth: -3,
            ..SimParams::default()
        };
        assert!(p
            .config()
            .unwrap_err()
            .to_string()
            .contains("state_history_depth"));
        let p = SimParams {
            start_column: 3,
            ..SimParams::default()
        };
        assert!(p.config().unwrap_err().to_string().contains("start"));
    }

    #[test]
    fn every_rule_names_a_parameter_and_bad_start_values_give_the_range() {
        assert!(lockstep_ros::param_rules::check_all(&mut SimParams::default()).is_ok());
        let mut p = SimParams::default();
        p.nominal_vehicle.track_width_m = f64::NAN;
        assert_eq!(
            p.config().unwrap_err().to_string(),
            "parameter 'nominal_vehicle.track_width_m' = NaN: must be finite and in [0.01, 10] m"
        );
        let p = SimParams {
            time_scale: 1e308,
            ..SimParams::default()
        };
        assert!(p
            .config()
            .unwrap_err()
            .to_string()
            .contains("'time_scale' = 1e308: must be finite and in [0, 10000]"));
        for bad in [0.0, -1.0, 3600.5, f64::INFINITY] {
            let p = SimParams {
                rules_max_seconds: bad,
                ..SimParams::default()
            };
            let e = p.config().unwrap_err().to_string();
            assert!(
                e.contains("'rules_max_seconds'") && e.contains("(0, 3600] s"),
                "{e}"
            );
        }
        let p = SimParams {
            rules_max_seconds: 0.5,
            ..SimParams::default()
        };
        assert_eq!(p.config().unwrap().rules_max_seconds, 0.5);
    }

    #[test]
    fn run_time_sets_breaking_a_rule_are_refused_and_the_value_stays() {
        use r2r::{ParameterValue, RosParams as _};
        let mut p = lockstep_ros::Guarded::new(SimParams::default());
        for (name, value) in [
            ("time_scale", ParameterValue::Double(f64::NAN)),
            ("true_vehicle.wheel_radius_m", ParameterValue::Double(-0.05)),
            ("min_step_m", ParameterValue::Double(f64::INFINITY)),
            ("map_frame", ParameterValue::String(String::new())),
        ] {
            let e = p.set_parameter(name, &value).unwrap_err().to_string();
            assert!(e.contains(&format!("parameter '{name}' = ")), "{e}");
        }
        assert_eq!(p.time_scale, 1.0);
        assert_eq!(
            p.true_vehicle.wheel_radius_m,
            DiffDriveParams::default().wheel_radius_m
        );
        assert_eq!(p.map_frame, "map");
        p.set_parameter("time_scale", &ParameterValue::Double(4.0))
            .unwrap();
        assert_eq!(p.time_scale, 4.0);
    }

    #[test]
    fn slip_parameters_make_the_model_and_bad_ones_are_named() {
        assert_eq!(
            SimParams::default().config().unwrap().slip,
            SlipModel::Centripetal
        );
        let p = SimParams {
            slip_model: "lateral".into(),
            lateral_slip_s: 0.1,
            longitudinal_slip_s2pm: 0.03,
            ..SimParams::default()
        };
        let lateral = SlipModel::Lateral {
            lateral_slip_s: 0.1,
            longitudinal_slip_s2pm: 0.03,
        };
        assert_eq!(p.config().unwrap().slip, lateral);
        let p = SimParams {
            slip_model: "sideways".into(),
            ..SimParams::default()
        };
        assert_eq!(
            p.config().unwrap_err().to_string(),
            "parameter 'slip_model' = \"sideways\": must be one of `centripetal`, `lateral`"
        );
        let p = SimParams {
            longitudinal_slip_s2pm: -0.5,
            ..SimParams::default()
        };
        assert!(p
            .config()
            .unwrap_err()
            .to_string()
            .contains("'longitudinal_slip_s2pm' = -0.5"));
        // A run-time set: the model with the one value changed.
        let d = SimParams::default();
        let model = d
            .slip_with("slip_model", &ParameterValue::String("lateral".into()))
            .unwrap();
        assert_eq!(
            model,
            SlipModel::Lateral {
                lateral_slip_s: 0.05,
                longitudinal_slip_s2pm: 0.02
            }
        );
        let e = d
            .slip_with("lateral_slip_s", &ParameterValue::Double(f64::NAN))
            .unwrap_err();
        assert!(e.contains("lateral_slip_s"), "{e}");
        let e = d
            .slip_with("slip_model", &ParameterValue::String("ice".into()))
            .unwrap_err();
        assert!(e.contains("`centripetal`") && e.contains("`lateral`"), "{e}");
    }

    #[test]
    fn vehicle_parameters_round_trip() {
        let d = DiffDriveParams {
            track_width_m: 0.42,
            wheel_radius_m: 0.052,
            delay_secs: 0.04,
            centripetal_factor: 0.05,
        };
        assert_eq!(DiffDriveParams::from(&VehicleParams::from(&d)), d);
    }

    #[test]
    fn rule_lists_split_on_commas() {
        assert_eq!(
            rule_paths(" a.dl, ,b.dl "),
            [PathBuf::from("a.dl"), PathBuf::from("b.dl")]
        );
    }

    #[test]
    fn chargers_are_x_y_pairs_and_a_bad_one_is_named() {
        assert_eq!(
            chargers(" 2.5 5.5, 17.5 12.5 ").unwrap(),
            [[2.5, 5.5], [17.5, 12.5]]
        );
        assert!(chargers("").unwrap().is_empty());
        let e = chargers("2.5 5.5, 3").unwrap_err().to_string();
        assert!(e.contains("charger 2 is `3`; each is `x y` in metres"), "{e}");
        assert!(chargers("1 nan").is_err());
    }
}
