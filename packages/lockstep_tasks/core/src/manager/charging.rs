//! Charging. With a charging policy (`recharge_below`, `charge_to`), a robot about to start its next task
//! (or standing idle) first runs a charging task when its battery is below `recharge_below`, or when it
//! could not finish that next task above its reserve. The charging task is the configured template
//! (`charge_task`) with `to` the nearest free charger of the map by travel time: a charger no other robot
//! stands at or drives to. Its drives hold the floor like any other. When they are done the task stays
//! running, its robot standing at the charger, until the battery holds `charge_to` (or what the next task
//! needs above the reserve, when that is more); a STATUS event `running -> charging` says so. A battery that
//! does not rise for `stall_s` fails the task with the figures, so a charger that does not work cannot hold
//! a robot forever. The charging task is listed, kept in the state file and on task_events like any other.
//!
//! A robot that could not finish its next task and finds every charger taken does not start it: it waits
//! for a charger (once logged). One that is only low goes on with its task.

use std::collections::BTreeSet;

use serde_json::Value;

pub use super::charge_policy::{policy, ChargePolicy, Charging, CHARGE_TO_WH};

use super::goals::decompose;
use super::io::{Command, EventKind, Level, Setup, TaskEvent};
use super::queue::NewTask;
use super::task::{State, Task};
use super::Manager;
use crate::routes::Planner as _;
use crate::scheduler::{Outcome, Scheduler};

/// Whether `task` is a charging task (how full it charges).
pub fn charge_to_wh<S>(task: &Task<S>) -> Option<f64> {
    task.parameters.get(CHARGE_TO_WH).and_then(Value::as_f64)
}

impl<S: Setup> Manager<S> {
    /// Before `robot` starts `next` (`None`: it stands idle): a charging task queued first when its battery
    /// asks for one. `true`: the robot must not start `next` now (it cannot finish it and no charger is free).
    pub(crate) fn charge_first(&mut self, robot: &str, next: Option<&str>) -> bool {
        let (Some(policy), Some(battery)) = (&self.charging, self.batteries.get(robot).copied()) else {
            return false;
        };
        let charging =
            (self.tasks.values()).any(|t| t.robot == robot && !t.is_finished() && charge_to_wh(t).is_some());
        if charging || next.is_some_and(|id| self.tasks.get(id).is_some_and(|t| charge_to_wh(t).is_some())) {
            return false;
        }
        let capacity = battery.capacity_wh;
        let reserve_wh = self.energy.map_or(0.0, |m| m.reserve_fraction) * capacity;
        let need_wh = (next.and_then(|id| self.tasks.get(id)))
            .zip(self.energy)
            .map_or(0.0, |(t, m)| m.need_wh(t.sched.tree()));
        let low = battery.charge_wh < policy.recharge_below * capacity;
        let short = need_wh > 0.0 && battery.charge_wh - need_wh < reserve_wh;
        let to_wh = (policy.charge_to * capacity)
            .max(need_wh + reserve_wh)
            .min(capacity);
        if !(low || short) || battery.charge_wh >= to_wh {
            return false;
        }
        let Some(charger) = self.free_charger(robot) else {
            let first = (self.charging.as_mut()).is_some_and(|p| p.told.insert(robot.to_owned()));
            if first {
                let line = format!(
                    "{}: battery {:.2} of {capacity:.2} Wh{}, no charger is free{}",
                    super::energy::robot_name(robot),
                    battery.charge_wh,
                    if short {
                        format!(
                            ", {need_wh:.2} Wh needed for its next task above a {reserve_wh:.2} Wh reserve"
                        )
                    } else {
                        String::new()
                    },
                    if short {
                        ": the task waits for one"
                    } else {
                        ": it goes on"
                    },
                );
                self.log(Level::Warn, line);
            }
            return short;
        };
        if let Some(policy) = self.charging.as_mut() {
            policy.told.remove(robot);
        }
        let why = if short {
            format!("its next task needs {need_wh:.2} Wh above a {reserve_wh:.2} Wh reserve")
        } else {
            format!(
                "below {:.0} %",
                self.charging.as_ref().map_or(0.0, |p| p.recharge_below * 100.0)
            )
        };
        let reason = format!(
            "battery {:.2} of {capacity:.2} Wh, {why}: charging at {charger} to {to_wh:.2} Wh",
            battery.charge_wh
        );
        self.queue_charge(robot, &charger, to_wh, &reason);
        false
    }

    /// The time `robot` will spend charging before it can start another task [s]: 0 unless, once its queued
    /// tasks are done (their drives' energy spent), its battery would be below `recharge_below` or its
    /// reserve.
    pub(crate) fn charge_first_s(&self, robot: &str) -> f64 {
        let (Some(policy), Some(battery)) = (&self.charging, self.batteries.get(robot)) else {
            return 0.0;
        };
        let queued_wh: f64 = (self.energy.iter())
            .flat_map(|m| {
                (self.tasks.values())
                    .filter(|t| t.robot == robot && !t.is_finished() && charge_to_wh(t).is_none())
                    .map(|t| m.need_wh(t.sched.tree()))
            })
            .sum();
        let reserve_wh = self.energy.map_or(0.0, |m| m.reserve_fraction) * battery.capacity_wh;
        let left_wh = battery.charge_wh - queued_wh;
        let floor_wh = (policy.recharge_below * battery.capacity_wh).max(reserve_wh);
        if left_wh >= floor_wh {
            return 0.0;
        }
        policy.charge_time_s(robot, left_wh.max(0.0), battery.capacity_wh)
    }

    /// The charger nearest to `robot` by travel time that no other robot stands at or drives to (and where
    /// its battery did not stop rising before).
    fn free_charger(&self, robot: &str) -> Option<String> {
        let map = self.map.as_ref()?;
        let here = self.robots.get(robot)?.station.clone()?;
        let taken: BTreeSet<&str> = (self.robots.values())
            .filter(|r| r.name != robot)
            .filter_map(|r| r.station.as_deref())
            .chain(
                (self.tasks.values())
                    .filter(|t| t.robot != robot && !t.is_finished() && charge_to_wh(t).is_some())
                    .filter_map(|t| t.parameters.get("to").and_then(Value::as_str)),
            )
            .collect();
        let stalled = self.charging.as_ref().map(|p| &p.stalled);
        (map.chargers().iter())
            .filter(|c| !taken.contains(c.as_str()))
            .filter(|c| !stalled.is_some_and(|s| s.contains(&(robot.to_owned(), (*c).clone()))))
            .filter_map(|c| Some((map.plan(&here, c).ok()?.time_s, c)))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)))
            .map(|(_, c)| c.clone())
    }

    /// A charging task for `robot` to `charger`, first in its queue.
    fn queue_charge(&mut self, robot: &str, charger: &str, to_wh: f64, reason: &str) {
        let Some(policy) = &self.charging else { return };
        let task_type = policy.task_type.clone();
        let mut params = crate::params::Params::new();
        params.insert("robot".into(), Value::String(robot.to_owned()));
        params.insert("to".into(), Value::String(charger.to_owned()));
        params.insert(CHARGE_TO_WH.into(), serde_json::json!(to_wh));
        if let Some(at) = self.robots.get(robot).and_then(|r| r.station.clone()) {
            params.insert("at".into(), Value::String(at));
        }
        let tree = match decompose(&*self.setup, &task_type, &params, robot, self.map.as_ref()) {
            Ok(tree) => tree,
            Err(e) => {
                let name = super::energy::robot_name(robot);
                let line = format!("{name}: {reason}, but the charging task `{task_type}` cannot run: {e}");
                self.log(Level::Warn, line);
                return;
            }
        };
        self.next_seq += 1;
        let seq = self.next_seq;
        let id = format!("task-{seq}");
        let name = super::energy::robot_name(robot);
        self.log(Level::Info, format!("{id}: {task_type} on {name}: {reason}"));
        let new = NewTask {
            id: id.clone(),
            seq,
            task_type,
            parameters: params,
            priority: i32::MAX,
            robot: robot.to_owned(),
        };
        let task = self.make_task(new, Scheduler::new(tree), self.setup.clone());
        self.tasks.insert(id, task);
        self.unsaved = true;
    }

    /// A task whose scheduler completed: `true` when it is a charging task whose battery is not full enough
    /// yet (it stays running, charging).
    pub(crate) fn hold_for_charge(&mut self, id: &str, outcome: &Outcome) -> bool {
        let Some(task) = self.tasks.get(id) else {
            return false;
        };
        let (Some(to_wh), Outcome::Completed) = (charge_to_wh(task), outcome) else {
            return false;
        };
        let charge_wh = self.batteries.get(&task.robot).map_or(0.0, |b| b.charge_wh);
        if charge_wh >= to_wh {
            return false;
        }
        let at = (self.robots.get(&task.robot))
            .and_then(|r| r.station.clone())
            .unwrap_or_default();
        let event = TaskEvent {
            task_id: task.id.clone(),
            robot: task.robot.clone(),
            kind: EventKind::Status,
            path: task.sched.tree().root().path.clone(),
            old_status: "running".into(),
            new_status: "charging".into(),
            reason: format!("at {at}: {charge_wh:.2} Wh, charging to {to_wh:.2} Wh"),
            ..Default::default()
        };
        self.out.push(Command::Publish(event));
        if let Some(task) = self.tasks.get_mut(id) {
            task.charging = Some(Charging {
                to_wh,
                best_wh: charge_wh,
                rose_s: self.now,
            });
            task.dirty = true;
        }
        true
    }

    /// After each event: charging tasks whose battery holds enough end; one whose battery stopped rising
    /// fails.
    pub(crate) fn check_charging(&mut self) {
        let stall_s = self.charging.as_ref().map_or(f64::INFINITY, |p| p.stall_s);
        let charging: Vec<(String, String)> = (self.tasks.values())
            .filter(|t| t.state == State::Running && t.charging.is_some())
            .map(|t| (t.id.clone(), t.robot.clone()))
            .collect();
        for (id, robot) in charging {
            let charge_wh = self.batteries.get(&robot).map_or(0.0, |b| b.charge_wh);
            let now = self.now;
            let Some(task) = self.tasks.get_mut(&id) else {
                continue;
            };
            let path = task.sched.tree().root().path.clone();
            let Some(c) = task.charging.as_mut() else { continue };
            if charge_wh > c.best_wh {
                (c.best_wh, c.rose_s) = (charge_wh, now);
            }
            let (to_wh, rose_s) = (c.to_wh, c.rose_s);
            let outcome = if charge_wh >= to_wh {
                let line = format!(
                    "{id}: {} charged: {charge_wh:.2} Wh",
                    super::energy::robot_name(&robot)
                );
                self.log(Level::Info, line);
                Outcome::Completed
            } else if now - rose_s > stall_s {
                let reason = format!(
                    "the battery stayed at {charge_wh:.2} Wh for {stall_s:.0} s at the charger (charging to \
                     {to_wh:.2} Wh)"
                );
                let at = self.robots.get(&robot).and_then(|r| r.station.clone());
                if let (Some(policy), Some(at)) = (self.charging.as_mut(), at) {
                    policy.stalled.insert((robot.clone(), at));
                }
                Outcome::Failed { path, reason }
            } else {
                continue;
            };
            if let Some(task) = self.tasks.get_mut(&id) {
                task.charging = None;
            }
            self.finish(&id, outcome);
        }
    }

    /// A cancel of a charging task at its charger ends it at once (its scheduler has nothing left to cancel).
    pub(crate) fn cancel_charging(&mut self, id: &str) -> bool {
        let Some(task) = self.tasks.get_mut(id) else {
            return false;
        };
        if task.charging.take().is_none() {
            return false;
        }
        self.log(Level::Info, format!("{id}: cancelled while charging"));
        self.finish(id, Outcome::Cancelled);
        true
    }
}
