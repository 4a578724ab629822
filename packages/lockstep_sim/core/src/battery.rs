//! The vehicle's battery: it drains with time (the electronics) and with distance driven (the motors), and
//! charges while the vehicle stands within reach of a charger. Empty, the vehicle cannot drive. Energies in
//! watt-hours, powers in watts, times in simulated seconds.

/// The battery's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct BatteryConfig {
    /// Full charge [Wh]; 0 = no battery model (never empty, nothing published).
    pub capacity_wh: f64,
    /// Charge at start, as a fraction of the capacity [0, 1].
    pub start_fraction: f64,
    /// Drain while on, driving or not [W].
    pub idle_w: f64,
    /// Drain per metre driven [Wh/m].
    pub drive_wh_per_m: f64,
    /// Charging power at a charger [W].
    pub charge_w: f64,
    /// Nominal voltage, for the current and the charge in Ah that BatteryState reports [V].
    pub voltage_v: f64,
    /// Charger positions in the map frame [m].
    pub chargers: Vec<[f64; 2]>,
    /// The vehicle charges within this distance of a charger, standing still [m].
    pub charger_radius_m: f64,
}

impl Default for BatteryConfig {
    fn default() -> Self {
        BatteryConfig {
            capacity_wh: 0.0,
            start_fraction: 1.0,
            idle_w: 10.0,
            drive_wh_per_m: 0.05,
            charge_w: 200.0,
            voltage_v: 24.0,
            chargers: Vec::new(),
            charger_radius_m: 0.5,
        }
    }
}

/// Whether the battery charges, drains or is full (BatteryState's power supply status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Supply {
    Charging,
    Discharging,
    Full,
}

/// What the battery says after a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatteryReading {
    pub charge_wh: f64,
    pub fraction: f64,
    /// Positive while charging, negative while draining [W].
    pub power_w: f64,
    pub supply: Supply,
}

/// The battery's state.
#[derive(Debug, Clone)]
pub struct Battery {
    config: BatteryConfig,
    charge_wh: f64,
    power_w: f64,
}

impl Battery {
    /// A battery at its start charge; `None` when the configuration has no battery (capacity 0).
    pub fn new(config: BatteryConfig) -> Option<Self> {
        (config.capacity_wh > 0.0).then(|| Battery {
            charge_wh: config.capacity_wh * config.start_fraction.clamp(0.0, 1.0),
            power_w: 0.0,
            config,
        })
    }

    /// Take a new configuration (a parameter set at run time), keeping the charge (within the new capacity).
    pub fn reconfigure(&mut self, config: BatteryConfig) {
        self.charge_wh = self.charge_wh.min(config.capacity_wh);
        self.config = config;
    }

    /// Whether the battery is empty: the vehicle cannot drive.
    pub fn empty(&self) -> bool {
        self.charge_wh <= 0.0
    }

    /// Whether `xy` is within reach of a charger.
    pub fn at_charger(&self, xy: [f64; 2]) -> bool {
        self.config
            .chargers
            .iter()
            .any(|c| (c[0] - xy[0]).hypot(c[1] - xy[1]) <= self.config.charger_radius_m)
    }

    /// Advance `dt_s` during which the vehicle drove `driven_m` and ended at `xy`: drain, or charge when it
    /// stood (drove nothing) at a charger.
    pub fn step(&mut self, dt_s: f64, driven_m: f64, xy: [f64; 2]) -> BatteryReading {
        let c = &self.config;
        let dt_h = dt_s.max(0.0) / 3600.0;
        let drained_wh = c.idle_w * dt_h + c.drive_wh_per_m * driven_m.abs();
        let charging = driven_m == 0.0 && self.at_charger(xy);
        let gained_wh = if charging { c.charge_w * dt_h } else { 0.0 };
        let before = self.charge_wh;
        self.charge_wh = (self.charge_wh - drained_wh + gained_wh).clamp(0.0, c.capacity_wh);
        self.power_w = match dt_h > 0.0 {
            true => (self.charge_wh - before) / dt_h,
            false => 0.0,
        };
        self.reading(charging)
    }

    fn reading(&self, charging: bool) -> BatteryReading {
        let fraction = self.charge_wh / self.config.capacity_wh;
        let supply = if fraction >= 1.0 {
            Supply::Full
        } else if charging {
            Supply::Charging
        } else {
            Supply::Discharging
        };
        BatteryReading {
            charge_wh: self.charge_wh,
            fraction,
            power_w: self.power_w,
            supply,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &BatteryConfig {
        &self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn battery(start_fraction: f64) -> Battery {
        Battery::new(BatteryConfig {
            capacity_wh: 100.0,
            start_fraction,
            chargers: vec![[2.5, 5.5]],
            ..BatteryConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn no_capacity_is_no_battery() {
        assert!(Battery::new(BatteryConfig::default()).is_none());
    }

    #[test]
    fn it_drains_with_time_and_distance_and_stops_empty() {
        let mut b = battery(0.5);
        // One hour standing away from the charger: the 10 W idle drain.
        let r = b.step(3600.0, 0.0, [10.0, 10.0]);
        assert!((r.charge_wh - 40.0).abs() < 1e-9, "{r:?}");
        assert!((r.power_w + 10.0).abs() < 1e-9);
        assert_eq!(r.supply, Supply::Discharging);
        // 100 m driven: 5 Wh more.
        let r = b.step(0.0, 100.0, [10.0, 10.0]);
        assert!((r.charge_wh - 35.0).abs() < 1e-9, "{r:?}");
        // Far more than is left: empty, never below 0.
        let r = b.step(0.0, 10_000.0, [10.0, 10.0]);
        assert_eq!((r.charge_wh, r.fraction), (0.0, 0.0));
        assert!(b.empty());
    }

    #[test]
    fn it_charges_standing_at_a_charger_up_to_full() {
        let mut b = battery(0.5);
        // 0.3 m from the charger, standing: 200 W in, 10 W out, for 6 minutes: +19 Wh.
        let r = b.step(360.0, 0.0, [2.8, 5.5]);
        assert!((r.charge_wh - 69.0).abs() < 1e-9, "{r:?}");
        assert_eq!(r.supply, Supply::Charging);
        // Driving past it does not charge.
        let r = b.step(360.0, 1.0, [2.5, 5.5]);
        assert_eq!(r.supply, Supply::Discharging);
        // An hour more at the charger: full, not over.
        let r = b.step(3600.0, 0.0, [2.5, 5.5]);
        assert_eq!((r.charge_wh, r.supply), (100.0, Supply::Full));
    }
}
