//! The task manager's parameters: what each may hold, and its default.

use lockstep_ros::{Int, ParamRule, ParamRules, Real};

/// Parameters of the task manager; each doc string is what `ros2 param describe` shows.
#[derive(r2r::RosParams, Debug, Clone)]
pub struct ManagerParams {
    /// The task configuration (YAML): levels, templates, parameter rules, attributes, actuators.
    pub config_file: String,
    /// Comma-separated Datalog rule files the condition attributes are evaluated over (with task_facts).
    pub rules_files: String,
    /// Seconds between two scheduling steps (delays, conditions and time-outs are checked this often;
    /// actuator outcomes are handled at once).
    pub step_period_s: f64,
    /// How long an action waits for its actuator's action server before it fails [s].
    pub server_wait_s: f64,
    /// Finished tasks `list_tasks` keeps listing (the most recent ones; older ones are forgotten).
    pub keep_finished: i64,
    /// The latest task_events the topic keeps (transient-local): a subscriber that joins later with transient-local durability receives them, the RESTORED events of tasks taken back from state_file among them. Also the reliable history a slow subscriber may lag behind by.
    pub events_kept: i64,
    /// The station map (YAML: stations, lanes with length and speed limit; or a Nav2 route graph in GeoJSON); "" for none. Routes given as
    /// {from, to} stations are planned on it, shortest by time.
    pub map_file: String,
    /// Comma-separated robot names, each a namespace holding its actuators (robot1,robot2); "" for one
    /// robot whose actuators are in the manager's own namespace.
    pub robots: String,
    /// Comma-separated stations the robots start at, in the order of `robots`; "" if unknown.
    pub start_stations: String,
    /// Where unfinished tasks are kept across restarts (JSON, rewritten atomically); "" to keep none.
    pub state_file: String,
    /// Wall seconds one evaluation of the condition rules (rules_files with task_facts) may take, in (0, 3600]. The manager's loop waits for it (goals and requests are answered after it) and one normally takes milliseconds, so 1 s: a rule that never reaches a fixpoint (`n(X + 1) :- n(X).`) holds the manager at most that long. task_facts whose evaluation overruns it are refused (the previous facts stay), and so is an add_attribute condition; the log names the rule files and the limit.
    pub rules_max_seconds: f64,
    /// Energy a robot spends per metre driven [Wh/m]; with idle_w, a task whose drives need more than any robot's battery (from its battery_state) holds above battery_reserve_percent is refused with the figures. 0 with idle_w 0: no energy check.
    pub drive_wh_per_m: f64,
    /// Energy a robot spends per second while on, driving or not [W].
    pub idle_w: f64,
    /// The part of a battery a task may not use [%].
    pub battery_reserve_percent: f64,
    /// A robot none of whose own actuators has published on actuator_states for this long is lost: what it held on the map is let go, its running task's goals fail (its retry and fallback rules decide what follows), its queued tasks that did not name it go to the robots that answer, and it takes no new task until it is heard again. 0: robots are never lost.
    pub robot_timeout_s: f64,
    /// A robot whose battery (its battery_state) is below this share of its capacity when it is about to start its next task, or stands idle, first drives to the nearest free charger of the map (stations with `charger: true`) with a `charge_task` task and charges there to charge_to [%]. A robot that could not finish its next task above battery_reserve_percent charges first too. 0: robots charge only when a task would not fit in their battery.
    pub recharge_below: f64,
    /// How full a robot charges before it takes its next task [%] (more if its next task needs more).
    pub charge_to: f64,
    /// The task type (a template of config_file) that drives a robot to the charger `to`; the manager adds `robot`, `at` and `charge_to_wh`.
    pub charge_task: String,
    /// A charging task whose robot's battery does not rise for this long at the charger fails, and that charger is not tried again for the robot until its battery rises somewhere [s].
    pub charge_stall_s: f64,
    /// A robot that has waited this long at a station for the next station of its route (held by another robot) plans the rest of its drive around that station, when the map has another way [s]. 0: robots wait for their planned way.
    pub replan_after_s: f64,
}

/// What each parameter may hold (`lockstep_ros::ParamRules`).
const RULES: &[ParamRule] = &[
    ParamRule::non_empty("config_file"),
    ParamRule::real("step_period_s", Real::closed(0.001, 60.0, "s")),
    ParamRule::real("server_wait_s", Real::closed(0.0, 3600.0, "s")),
    ParamRule::int("keep_finished", Int::closed(0, 1_000_000, "tasks")),
    ParamRule::int("events_kept", Int::closed(1, 100_000, "events")),
    ParamRule::real("rules_max_seconds", Real::above(0.0, 3600.0, "s")),
    ParamRule::real("drive_wh_per_m", Real::closed(0.0, 1e3, "Wh/m")),
    ParamRule::real("idle_w", Real::closed(0.0, 1e5, "W")),
    ParamRule::real("battery_reserve_percent", Real::closed(0.0, 99.0, "%")),
    ParamRule::real("robot_timeout_s", Real::closed(0.0, 3600.0, "s")),
    ParamRule::real("recharge_below", Real::closed(0.0, 100.0, "%")),
    ParamRule::real("charge_to", Real::above(0.0, 100.0, "%")),
    ParamRule::real("charge_stall_s", Real::above(0.0, 86400.0, "s")),
    ParamRule::real("replan_after_s", Real::closed(0.0, 3600.0, "s")),
];

impl ParamRules for ManagerParams {
    fn param_rules() -> &'static [ParamRule] {
        RULES
    }
}

impl Default for ManagerParams {
    fn default() -> Self {
        Self {
            config_file: "config/tasks/warehouse.yaml".into(),
            rules_files: String::new(),
            step_period_s: 0.01,
            server_wait_s: 5.0,
            keep_finished: 100,
            events_kept: 1000,
            map_file: String::new(),
            robots: String::new(),
            start_stations: String::new(),
            state_file: String::new(),
            rules_max_seconds: lockstep_tasks::manager::environment::DEFAULT_RULES_MAX_SECONDS,
            drive_wh_per_m: 0.0,
            idle_w: 0.0,
            battery_reserve_percent: 20.0,
            robot_timeout_s: 10.0,
            recharge_below: 0.0,
            charge_to: 90.0,
            charge_task: "charge".into(),
            charge_stall_s: 60.0,
            replan_after_s: 10.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_ros::param_rules::check_all;

    #[test]
    fn the_defaults_pass_the_rules_and_bad_values_are_refused_with_the_range() {
        assert_eq!(check_all(&mut ManagerParams::default()), Ok(()));
        for (p, reason) in [
            (
                ManagerParams {
                    step_period_s: 1e-300,
                    ..ManagerParams::default()
                },
                "parameter 'step_period_s' = 1e-300: must be finite and in [0.001, 60] s",
            ),
            (
                ManagerParams {
                    server_wait_s: f64::NAN,
                    ..ManagerParams::default()
                },
                "parameter 'server_wait_s' = NaN: must be finite and in [0, 3600] s",
            ),
            (
                ManagerParams {
                    keep_finished: -1,
                    ..ManagerParams::default()
                },
                "parameter 'keep_finished' = -1: must be an integer in [0, 1000000] tasks",
            ),
            (
                ManagerParams {
                    events_kept: 0,
                    ..ManagerParams::default()
                },
                "parameter 'events_kept' = 0: must be an integer in [1, 100000] events",
            ),
            (
                ManagerParams {
                    rules_max_seconds: 0.0,
                    ..ManagerParams::default()
                },
                "parameter 'rules_max_seconds' = 0: must be finite and in (0, 3600] s",
            ),
        ] {
            assert_eq!(check_all(&mut p.clone()).err().as_deref(), Some(reason));
        }
    }
}
