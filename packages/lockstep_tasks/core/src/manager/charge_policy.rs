//! When robots charge (the manager's parameters `recharge_below`, `charge_to`, `charge_task`,
//! `charge_stall_s`), and how far a charging task at its charger charges. See [`super::charging`].

use std::collections::{BTreeMap, BTreeSet};

/// The parameter of a charging task that says how full it charges [Wh] (kept in the state file with the
/// task, so a restored charging task charges as far).
pub const CHARGE_TO_WH: &str = "charge_to_wh";

/// When robots charge, and with which task.
#[derive(Debug, Clone, PartialEq)]
pub struct ChargePolicy {
    /// Below this share of its capacity a robot charges before its next task, in [0, 1].
    pub recharge_below: f64,
    /// It charges to this share of its capacity, in (0, 1].
    pub charge_to: f64,
    /// The task type (template) that drives a robot to the charger `to`.
    pub task_type: String,
    /// A battery that does not rise for this long at the charger fails the charging task [s].
    pub stall_s: f64,
    /// Robots told once that no charger is free (told again after they found one).
    pub(crate) told: BTreeSet<String>,
    /// (robot, charger) where the robot's battery did not rise: not tried again until it rises somewhere.
    pub(crate) stalled: BTreeSet<(String, String)>,
    /// Each robot's latest battery reading (time [s], charge [Wh]), and the rate it was last seen charging
    /// at [Wh/s]: how long a charge takes, for the assignment.
    pub(crate) readings: BTreeMap<String, (f64, f64)>,
    pub(crate) rates: BTreeMap<String, f64>,
}

impl ChargePolicy {
    pub fn new(recharge_below: f64, charge_to: f64, task_type: &str, stall_s: f64) -> Self {
        Self {
            recharge_below,
            charge_to,
            task_type: task_type.to_owned(),
            stall_s,
            told: BTreeSet::new(),
            stalled: BTreeSet::new(),
            readings: BTreeMap::new(),
            rates: BTreeMap::new(),
        }
    }

    /// A battery reading of `robot` at `now_s`: a rise since the last one gives its charging rate.
    pub fn heard(&mut self, robot: &str, now_s: f64, charge_wh: f64) {
        if let Some((t, wh)) = self.readings.insert(robot.to_owned(), (now_s, charge_wh)) {
            if charge_wh > wh && now_s > t {
                self.rates
                    .insert(robot.to_owned(), (charge_wh - wh) / (now_s - t));
            }
        }
    }

    /// Seconds `robot` would spend charging from `charge_wh` to this policy's `charge_to` of `capacity_wh`,
    /// at the rate it was last seen charging (a full charge per hour while it has never been seen charging).
    pub fn charge_time_s(&self, robot: &str, charge_wh: f64, capacity_wh: f64) -> f64 {
        let rate = (self.rates.get(robot).copied())
            .filter(|r| r.is_finite() && *r > 0.0)
            .unwrap_or(capacity_wh / 3600.0);
        ((self.charge_to * capacity_wh - charge_wh).max(0.0) / rate).min(86_400.0)
    }
}

/// The charging policy of the node's parameters: `None` when robots do not charge by themselves. With
/// `recharge_below_percent` above 0 the map must have chargers and the configuration the charging task
/// (else the error names the parameter); at 0, robots still charge when a task would not fit in their
/// battery, where the map and the configuration allow it.
pub fn policy(
    recharge_below_percent: f64,
    charge_to_percent: f64,
    task_type: &str,
    stall_s: f64,
    config: &crate::Config,
    map: Option<&crate::StationMap>,
) -> Result<Option<ChargePolicy>, String> {
    let chargers = map.map_or(0, |m| m.chargers().len());
    let template = config.templates.contains_key(task_type);
    if recharge_below_percent > 0.0 {
        if chargers == 0 {
            return Err(format!(
                "parameter 'recharge_below' = {recharge_below_percent}: the station map has no charger (a station \
                 with `charger: true`){}",
                map.map(|m| format!(" in {}", m.file())).unwrap_or_else(|| ": no map_file".into())
            ));
        }
        if !template {
            return Err(format!(
                "parameter 'charge_task' = '{task_type}': not a template of config_file (templates: {})",
                config.templates.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    Ok((chargers > 0 && template).then(|| {
        ChargePolicy::new(
            recharge_below_percent / 100.0,
            charge_to_percent / 100.0,
            task_type,
            stall_s,
        )
    }))
}

/// A charging task whose drive is done: how far it charges and how its battery moves.
#[derive(Debug, Clone, PartialEq)]
pub struct Charging {
    pub to_wh: f64,
    /// The highest charge seen at the charger, and when it was first seen [s].
    pub best_wh: f64,
    pub rose_s: f64,
}
