//! Whether a task fits in a battery: the energy its drives take (metres driven, and the time they take with
//! the robot's electronics on) against the largest battery of the fleet above its reserve. A task no battery
//! can finish is refused at once with the figures, instead of leaving a robot empty halfway.

use std::collections::BTreeMap;

use crate::tree::Tree;

/// How robots spend energy, and how much of a battery stays untouched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnergyModel {
    /// Drain per metre driven [Wh/m].
    pub drive_wh_per_m: f64,
    /// Drain while on [W].
    pub idle_w: f64,
    /// The part of a battery a task may not use, in [0, 1).
    pub reserve_fraction: f64,
}

impl EnergyModel {
    /// The energy a task's drives take [Wh].
    pub fn need_wh(&self, tree: &Tree) -> f64 {
        let (length_m, time_s) = task_drives(tree);
        self.drive_wh_per_m * length_m + self.idle_w * time_s / 3600.0
    }
}

/// What a robot's battery says (its latest `battery_state`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatteryView {
    pub charge_wh: f64,
    pub capacity_wh: f64,
}

/// A task's drives: metres and seconds (each route's length at its speed). A route is counted once, at the
/// subtask it was planned for; the subtasks under it inherit it and are not counted again.
pub fn task_drives(tree: &Tree) -> (f64, f64) {
    let route = |id: usize| {
        let p = &tree.nodes[id].params;
        let length = p.get("route_length_m").and_then(serde_json::Value::as_f64)?;
        Some((
            length,
            p.get("route_stations").cloned(),
            p.get("speed").and_then(serde_json::Value::as_f64),
        ))
    };
    (0..tree.nodes.len())
        .filter_map(|id| {
            let (length, stations, speed) = route(id)?;
            let inherited = tree.nodes[id]
                .parent
                .and_then(route)
                .is_some_and(|(l, s, _)| l == length && s == stations);
            (!inherited).then_some((length, speed.filter(|s| *s > 0.0)))
        })
        .fold((0.0, 0.0), |(length_m, time_s), (l, speed)| {
            (length_m + l, time_s + speed.map_or(0.0, |s| l / s))
        })
}

/// How log lines name a robot: its name, or "the robot" for the one in the manager's own namespace.
pub fn robot_name(robot: &str) -> &str {
    if robot.is_empty() {
        "the robot"
    } else {
        robot
    }
}

/// `None` when the task fits in some robot's battery above its reserve (or no battery is known); else why
/// not, with the figures.
pub fn too_long(
    tree: &Tree,
    model: &EnergyModel,
    batteries: &BTreeMap<String, BatteryView>,
) -> Option<String> {
    let (name, biggest) = batteries
        .iter()
        .max_by(|a, b| a.1.capacity_wh.total_cmp(&b.1.capacity_wh))?;
    let (length_m, time_s) = task_drives(tree);
    let need_wh = model.need_wh(tree);
    let usable_wh = biggest.capacity_wh * (1.0 - model.reserve_fraction);
    (need_wh > usable_wh).then(|| {
        let robot = robot_name(name);
        format!(
            "the task needs {need_wh:.2} Wh ({length_m:.1} m at {} Wh/m, {time_s:.0} s at {} W), more than any \
             battery holds above its {:.0} % reserve (at most {usable_wh:.2} Wh of {:.2} Wh, {robot})",
            model.drive_wh_per_m,
            model.idle_w,
            model.reserve_fraction * 100.0,
            biggest.capacity_wh,
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A task of one drive per leg, each with its route length and speed.
    fn drives(legs: &[(f64, f64)]) -> Tree {
        let children: Vec<String> = legs
            .iter()
            .map(|(length, speed)| {
                format!("      - {{type: drive, parameters: {{route_length_m: {length}, speed: {speed}}}}}")
            })
            .collect();
        let config = format!(
            "levels: [task, action]
actuators:
  nav: {{server: /navigate, type: lockstep_interfaces/action/Navigate, goal: {{speed_mps: speed}}}}
templates:
  trip:
    level: task
    children:
{}
  drive: {{level: action, actuator: nav}}
",
            children.join("\n")
        );
        let config = crate::Config::parse("t.yaml", &config).unwrap();
        Tree::decompose(&config, "trip", &crate::Params::new()).unwrap()
    }

    #[test]
    fn a_task_longer_than_every_battery_is_refused_with_the_figures() {
        let model = EnergyModel {
            drive_wh_per_m: 0.05,
            idle_w: 10.0,
            reserve_fraction: 0.2,
        };
        let batteries = BTreeMap::from([
            (
                "robot1".to_owned(),
                BatteryView {
                    charge_wh: 10.0,
                    capacity_wh: 100.0,
                },
            ),
            (
                "robot2".to_owned(),
                BatteryView {
                    charge_wh: 5.0,
                    capacity_wh: 50.0,
                },
            ),
        ]);
        // 1,000 m at 1 m/s: 50 Wh driving and 2.8 Wh idle, within 80 Wh.
        assert_eq!(
            too_long(&drives(&[(600.0, 1.0), (400.0, 1.0)]), &model, &batteries),
            None
        );
        // 2,000 m: 100 Wh + 5.6 Wh, more than 80 Wh.
        let why = too_long(&drives(&[(2000.0, 1.0)]), &model, &batteries).unwrap();
        assert_eq!(
            why,
            "the task needs 105.56 Wh (2000.0 m at 0.05 Wh/m, 2000 s at 10 W), more than any battery holds \
             above its 20 % reserve (at most 80.00 Wh of 100.00 Wh, robot1)"
        );
        // No battery known: nothing to check.
        assert_eq!(
            too_long(&drives(&[(2000.0, 1.0)]), &model, &BTreeMap::new()),
            None
        );
    }
}
