//! Robots that stop answering: a robot none of whose own actuators (those not shared with other robots) has
//! published its state for `robot_timeout_s` is lost. What it held on the floor is let go, the goals of its
//! running task fail (its retry and fallback rules decide what follows), and its queued tasks that did not
//! name it move to the robots that answer, planned again from where those are. It takes no new task until
//! one of its actuators is heard again; then it rejoins.

use std::collections::BTreeMap;

use super::io::{Command, Level, Setup};
use super::task::State;
use super::Manager;

impl<S: Setup> Manager<S> {
    /// The action servers of `robot` that belong to it alone.
    fn own_servers(&self, robot: &str) -> Vec<String> {
        let mut users: BTreeMap<&str, usize> = BTreeMap::new();
        for server in self.env.servers.values() {
            *users.entry(server.as_str()).or_default() += 1;
        }
        let mut own: Vec<String> = (self.env.servers.iter())
            .filter(|((r, _), server)| r == robot && users.get(server.as_str()) == Some(&1))
            .map(|(_, server)| server.clone())
            .collect();
        own.sort();
        own.dedup();
        own
    }

    /// After each event: robots silent for `robot_timeout_s` are lost, lost ones heard again rejoin. A robot
    /// never heard is not judged (its actuators may still be starting).
    pub(crate) fn check_robots(&mut self) {
        let Some(timeout) = self.robot_timeout_s.filter(|t| *t > 0.0) else {
            return;
        };
        let names: Vec<String> = self.robots.keys().cloned().collect();
        for robot in names {
            let servers = self.own_servers(&robot);
            let heard = (servers.iter())
                .filter_map(|s| self.env.last_heard(s))
                .fold(None::<f64>, |a, b| Some(a.map_or(b, |a| a.max(b))));
            let Some(heard) = heard else { continue };
            let silent_s = self.now - heard;
            match (self.lost.contains(&robot), silent_s > timeout) {
                (false, true) => self.robot_lost(&robot, silent_s, &servers),
                (true, false) => self.robot_back(&robot),
                _ => {}
            }
        }
    }

    fn robot_lost(&mut self, robot: &str, silent_s: f64, servers: &[String]) {
        self.lost.insert(robot.to_owned());
        let reason = format!(
            "robot `{robot}` lost: its actuators ({}) silent for {silent_s:.1} s",
            servers.join(", ")
        );
        self.log(Level::Warn, reason.clone());
        if let Some(floor) = self.floor.as_mut() {
            floor.traffic.release_all(robot);
            floor.drives.remove(robot);
        }
        // Its running task: every goal out fails (retries and fallbacks take over from there).
        let running: Vec<String> = (self.tasks.values())
            .filter(|t| t.robot == robot && matches!(t.state, State::Running | State::Paused))
            .map(|t| t.id.clone())
            .collect();
        for id in running {
            let Some(task) = self.tasks.get_mut(&id) else {
                continue;
            };
            let leaves: Vec<_> = task.goals.keys().copied().collect();
            let mut out = Vec::new();
            for leaf in leaves {
                if let Some(goal) = task.goals.remove(&leaf) {
                    if goal.accepted.is_some() {
                        let generation = goal.generation;
                        self.out.push(Command::CancelGoal {
                            task: id.clone(),
                            generation,
                        });
                    }
                    out.extend(task.sched.leaf_failed(leaf, &reason));
                }
            }
            self.apply(&id, out);
        }
        self.move_queued(robot);
        self.unsaved = true;
    }

    /// The queued tasks of `robot` that did not name it go to the robots that answer.
    fn move_queued(&mut self, robot: &str) {
        let queued: Vec<String> = (self.tasks.values())
            .filter(|t| t.robot == robot && t.state == State::Queued && !t.named && !t.resume_pending)
            .map(|t| t.id.clone())
            .collect();
        for id in queued {
            let Some(task) = self.tasks.get(&id) else { continue };
            let params = task.parameters.clone().into_iter().collect();
            let Ok((other, why)) = self.choose_robot("", &params) else {
                continue;
            };
            if other == robot {
                continue;
            }
            if let Err(e) = self.replan(&id, &other) {
                let line = format!("{id}: stays on lost robot `{robot}`: on `{other}` {e}");
                self.log(Level::Warn, line);
                continue;
            }
            self.log(
                Level::Info,
                format!("{id}: moves from lost robot `{robot}` to {why}"),
            );
        }
    }

    fn robot_back(&mut self, robot: &str) {
        self.lost.remove(robot);
        self.log(
            Level::Info,
            format!("robot `{robot}` answers again: it takes tasks again"),
        );
        let station = self.robots.get(robot).and_then(|r| r.station.clone());
        if let (Some(floor), Some(station)) = (self.floor.as_mut(), station) {
            floor.traffic.place(robot, &station);
        }
        self.unsaved = true;
    }
}
