//! The manager's side of the shared floor ([`super::floor`]): drives taken over, held and sent a stretch at a
//! time, waits announced, cycles of waiting robots broken.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::floor::{Drive, Floor};
use super::io::{EventKind, Level, Setup, TaskEvent};
use super::Manager;
use crate::params::Params;
use crate::routes::{Planner as _, ROUTE, ROUTE_STATIONS};
use crate::traffic::{Grant, Held, Traffic};
use crate::tree::Id;

/// The route's stations and points, when the drive has lanes to hold.
fn route_of(params: &Params) -> Option<(Vec<String>, Vec<Value>)> {
    let stations: Vec<String> = (params.get(ROUTE_STATIONS)?.as_array()?.iter())
        .map(|s| s.as_str().map(str::to_owned))
        .collect::<Option<_>>()?;
    let points = params.get(ROUTE)?.as_array()?.clone();
    (stations.len() >= 2 && points.len() == stations.len()).then_some((stations, points))
}

/// How far `robot`'s `drive` can go now: the last station of the stretch whose lanes and stations it got
/// (each asked for in order), and what stopped it there, if anything did.
fn reach(traffic: &mut Traffic, robot: &str, drive: &Drive) -> (usize, Option<(String, Vec<String>)>) {
    let mut end = drive.at;
    let last = drive.stop_at.unwrap_or(drive.stations.len() - 1);
    while end < last {
        // A stretch never comes back to a station it passes: arriving there lets the station go, so the robot
        // would come back to a station it no longer holds. It asks again from there instead.
        if drive.stations[drive.at..=end].contains(&drive.stations[end + 1]) {
            break;
        }
        match traffic.request(robot, &drive.stations[end], &drive.stations[end + 1]) {
            Grant::Go => end += 1,
            Grant::Wait { resource, holders } => return (end, Some((resource.to_string(), holders))),
        }
    }
    (end, None)
}

impl<S: Setup> Manager<S> {
    /// The floor, set up at first use from the map and the robots' stations; `None` without a map.
    fn floor_mut(&mut self) -> Option<&mut Floor> {
        if self.floor.is_none() && self.reservations {
            self.floor = Some(self.new_floor(Held::default())?);
        }
        self.floor.as_mut()
    }

    /// The floor of the map, with what a state file said was held (each robot also holds the station it
    /// stands at).
    pub(crate) fn new_floor(&self, held: Held) -> Option<Floor> {
        {
            let map = self.map.as_ref()?;
            let mut traffic = Traffic::restore(map.layout().clone(), held);
            for robot in self.robots.values() {
                if let Some(station) = &robot.station {
                    traffic.place(&robot.name, station);
                }
            }
            let lanes = (map.lanes().iter())
                .flat_map(|l| {
                    let back = (!l.one_way).then(|| (l.to.clone(), l.from.clone()));
                    std::iter::once((l.from.clone(), l.to.clone())).chain(back)
                })
                .collect();
            Some(Floor {
                traffic,
                lanes,
                ..Floor::default()
            })
        }
    }

    /// A drive goal the floor takes over: held and sent a stretch at a time. `false`: not a drive with
    /// lanes (or no map): the caller sends it as it is.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_drive(
        &mut self,
        task: &str,
        robot: &str,
        leaf: Id,
        path: &str,
        actuator: &str,
        server: &str,
        params: &Params,
    ) -> bool {
        // Only a goal that carries the route drives it: another actuator's leaf below a leg inherits the
        // leg's route parameters without driving them (an announcement, a fallback on a display).
        let drives_route = (self.tasks.get(task)).and_then(|t| {
            t.setup
                .config()
                .actuators
                .get(actuator)
                .map(|a| a.goal.values().any(|p| p == ROUTE))
        });
        let Some((stations, points)) = route_of(params).filter(|_| drives_route == Some(true)) else {
            return false;
        };
        let Some(floor) = self.floor_mut() else {
            return false;
        };
        let (at, past_at) = (floor.reached.remove(&(task.to_owned(), leaf))).unwrap_or((0, false));
        floor.traffic.place(robot, &stations[at]);
        floor.next_turn += 1;
        let turn = floor.next_turn;
        floor.drives.insert(
            robot.to_owned(),
            Drive {
                task: task.to_owned(),
                leaf,
                path: path.to_owned(),
                actuator: actuator.to_owned(),
                server: server.to_owned(),
                params: params.clone(),
                stations,
                points,
                at,
                to: None,
                waiting: None,
                turn,
                stop_at: None,
                past_at,
                stepped_aside: false,
                waiting_since: None,
            },
        );
        if let Some(t) = self.tasks.get_mut(task) {
            // Its route is the floor's to send: a resumed drive goes on from the station it reached.
            t.resume_with.remove(&leaf);
        }
        // It asks for its lanes after this event, in turn with the robots waiting already.
        true
    }

    /// Hold as many lanes ahead of `robot` as are free and send the goal that far; or wait, saying for what.
    fn advance(&mut self, robot: &str) {
        let Some(floor) = self.floor.as_mut() else { return };
        let Some(drive) = floor.drives.get_mut(robot) else {
            return;
        };
        if drive.to.is_some() {
            return;
        }
        let (end, blocked) = reach(&mut floor.traffic, robot, drive);
        if end == drive.at {
            // Nothing ahead is free: wait here (announced once per resource and holders); past
            // `replan_after_s` of waiting, look for a way around.
            let since = *drive.waiting_since.get_or_insert(self.now);
            let due = blocked.is_some() && self.replan_after_s.is_some_and(|r| self.now - since >= r);
            if blocked.is_some() && drive.waiting != blocked {
                drive.waiting = blocked.clone();
                let (resource, holders) = blocked.unwrap_or_default();
                let reason = format!(
                    "waiting at {} for {resource}, held by {}",
                    drive.stations[drive.at],
                    holders.join(", ")
                );
                let (task, path) = (drive.task.clone(), drive.path.clone());
                self.wait_event(&task, robot, &path, reason);
            }
            if due && self.plan_around(robot) {
                self.advance(robot);
            }
            return;
        }
        // A robot that was announced waiting says it goes on (the end of its wait on a timeline).
        let waited = (drive.waiting.is_some()).then(|| {
            let waited_s = self.now - drive.waiting_since.unwrap_or(self.now);
            format!(
                "goes on from {} after waiting {waited_s:.1} s",
                drive.stations[drive.at]
            )
        });
        drive.waiting_since = None;
        if blocked.is_some() {
            // It drives to the last station it holds and asks again there.
            floor.traffic.stop_waiting(robot);
        }
        drive.waiting = None;
        drive.stop_at = None;
        drive.to = Some(end);
        self.unsaved = true;
        let from = drive.at + usize::from(std::mem::take(&mut drive.past_at));
        let mut params = drive.params.clone();
        params.insert(ROUTE.into(), Value::Array(drive.points[from..=end].to_vec()));
        params.insert(ROUTE_STATIONS.into(), json!(drive.stations[drive.at..=end]));
        let (task_id, leaf, path) = (drive.task.clone(), drive.leaf, drive.path.clone());
        let (actuator, server) = (drive.actuator.clone(), drive.server.clone());
        let Some(task) = self.tasks.get_mut(&task_id) else {
            return;
        };
        let sent = Self::send_goal(task, leaf, &path, &actuator, &server, &params, &mut self.out);
        if let Some(reason) = waited {
            self.wait_event(&task_id, robot, &path, reason);
        }
        if let Err(reason) = sent {
            let Some(task) = self.tasks.get_mut(&task_id) else {
                return;
            };
            let out = task.sched.leaf_failed(leaf, &reason);
            self.drive_over(robot);
            self.apply(&task_id, out);
        }
    }

    pub(crate) fn wait_event(&mut self, task: &str, robot: &str, path: &str, reason: String) {
        self.log(Level::Info, format!("{task}: {path}: {reason}"));
        self.out.push(super::io::Command::Publish(TaskEvent {
            task_id: task.to_owned(),
            robot: robot.to_owned(),
            kind: EventKind::Waiting,
            path: path.to_owned(),
            reason,
            ..Default::default()
        }));
    }

    /// The floor's drive of `task`'s `leaf` whose goal is out, if any: the robot's name.
    fn drive_of(&self, task: &str, leaf: Id) -> Option<String> {
        let floor = self.floor.as_ref()?;
        (floor.drives.iter())
            .find(|(_, d)| d.task == task && d.leaf == leaf)
            .map(|(robot, _)| robot.clone())
    }

    /// A stretch of a floor drive ended well: the lanes behind are let go. `true`: the drive goes on (the leaf
    /// is not done); `false`: it reached its destination, or is not the floor's.
    pub(crate) fn stretch_done(&mut self, task: &str, leaf: Id) -> bool {
        let Some(robot) = self.drive_of(task, leaf) else {
            return false;
        };
        let Some(floor) = self.floor.as_mut() else {
            return false;
        };
        let Some(drive) = floor.drives.get_mut(&robot) else {
            return false;
        };
        let Some(to) = drive.to.take() else { return false };
        for i in drive.at..to {
            floor
                .traffic
                .arrived(&robot, &drive.stations[i], &drive.stations[i + 1]);
        }
        drive.at = to;
        if let Some(r) = self.robots.get_mut(&robot) {
            r.station = Some(drive.stations[to].clone());
        }
        if to + 1 == drive.stations.len() {
            floor.drives.remove(&robot);
            return false;
        }
        // It asks for the lanes ahead after this event, after the robots that stopped before it.
        floor.next_turn += 1;
        drive.turn = floor.next_turn;
        true
    }

    /// A floor drive ended otherwise (failed, refused, cancelled): the robot keeps only the station it
    /// reached last; a drive sent again goes on from there, or from where its goal's last feedback put it
    /// (`remaining_route`: the points still ahead).
    pub(crate) fn drive_over(&mut self, robot: &str) {
        let Some(floor) = self.floor.as_mut() else { return };
        let Some(drive) = floor.drives.remove(robot) else {
            return;
        };
        let ahead = (self.tasks.get(&drive.task)).and_then(|t| {
            t.resume_with
                .get(&drive.leaf)?
                .get(ROUTE)?
                .as_array()
                .map(Vec::len)
        });
        let reached = match (drive.to, ahead) {
            // Its goal ran from `at` to `to`; `ahead` of those points were still to come.
            (Some(to), Some(ahead)) if ahead >= 1 && ahead <= to - drive.at => (to - ahead, true),
            _ => (drive.at, false),
        };
        floor.traffic.release_all(robot);
        floor.traffic.place(robot, &drive.stations[reached.0]);
        floor.reached.insert((drive.task, drive.leaf), reached);
    }

    /// A floor drive of `task`'s `leaf` ended otherwise, if there is one.
    pub(crate) fn drive_ended(&mut self, task: &str, leaf: Id) {
        if let Some(robot) = self.drive_of(task, leaf) {
            self.drive_over(&robot);
        }
    }

    /// After each event: waiting robots ask again, and a cycle of robots waiting on each other is broken by
    /// sending one of them to a free neighbour station, from where it plans again.
    pub(crate) fn floor_step(&mut self) {
        let Some(floor) = self.floor.as_ref() else { return };
        let mut waiting: Vec<(u64, String)> = (floor.drives.iter())
            .filter(|(_, d)| d.to.is_none() && !d.stepped_aside)
            .map(|(r, d)| (d.turn, r.clone()))
            .collect();
        waiting.sort();
        for (_, robot) in &waiting {
            self.advance(robot);
        }
        self.break_cycles();
        // The robots that stood aside ask last: the room they left went first to those they stood aside for.
        let Some(floor) = self.floor.as_mut() else { return };
        let mut aside: Vec<(u64, String)> = (floor.drives.iter_mut())
            .filter(|(_, d)| d.to.is_none() && d.stepped_aside)
            .map(|(r, d)| {
                d.stepped_aside = false;
                (d.turn, r.clone())
            })
            .collect();
        aside.sort();
        for (_, robot) in &aside {
            self.advance(robot);
        }
    }

    /// Each cycle of robots waiting on each other is broken by sending one of them off the others' way.
    fn break_cycles(&mut self) {
        let Some(floor) = self.floor.as_ref() else { return };
        let steps: Vec<_> = (floor.traffic.deadlocks().iter())
            .filter_map(|cycle| {
                // A side station off the way of every robot of the cycle, so the others pass it; else any.
                let ahead: BTreeSet<&str> = (cycle.iter())
                    .filter_map(|r| floor.drives.get(r))
                    .flat_map(|d| d.stations[d.at..].iter().map(String::as_str))
                    .collect();
                let aside: Vec<(String, String)> = (floor.lanes.iter())
                    .filter(|(_, to)| !ahead.contains(to.as_str()))
                    .cloned()
                    .collect();
                // One lane to a station off their way; else a few lanes back to one; else any free
                // neighbour; else room made through the robots that stand.
                let one_lane = |lanes: &[(String, String)]| {
                    (floor.traffic.yield_for(cycle, lanes)).map(|y| (y.robot, vec![y.to]))
                };
                one_lane(&aside)
                    .or_else(|| floor.escape(cycle, &ahead))
                    .or_else(|| one_lane(&floor.lanes))
                    .or_else(|| floor.make_room(cycle).map(|(robot, side)| (robot, vec![side])))
                    .map(|(robot, way)| (robot, way, cycle.clone()))
            })
            .collect();
        for (robot, way, cycle) in steps {
            // The robots it steps aside for ask first once it has left: the room is theirs, not a robot's that
            // happens to wait nearby.
            if let Some(floor) = self.floor.as_mut() {
                for other in cycle.iter().filter(|r| **r != robot) {
                    if let Some(d) = floor.drives.get_mut(other) {
                        d.turn = 0;
                    }
                }
            }
            self.step_aside(&robot, &way);
        }
    }

    /// `robot` leaves its route through the stations of `way` (the last one its side station), and plans from
    /// there to where it was going.
    fn step_aside(&mut self, robot: &str, way: &[String]) {
        let Some(map) = self.map.as_ref() else { return };
        let Some(side) = way.last() else { return };
        let Some(drive) = self.floor.as_ref().and_then(|f| f.drives.get(robot)) else {
            return;
        };
        if drive.to.is_some() {
            // It drives already (the cycle broke up while this event was handled).
            return;
        }
        let Some(destination) = drive.stations.last() else {
            return;
        };
        let Ok(onward) = map.plan(side, destination) else {
            return;
        };
        let here = drive.stations[drive.at].clone();
        let Some(here_point) = drive.points.get(drive.at).cloned() else {
            return;
        };
        let mut stations = vec![here.clone()];
        let mut points = vec![here_point];
        for station in &way[..way.len() - 1] {
            let Some([x, y]) = map.position(station) else {
                return;
            };
            stations.push(station.clone());
            points.push(json!({"x": x, "y": y}));
        }
        stations.extend(onward.stations.iter().cloned());
        points.extend(onward.points.iter().map(|[x, y]| json!({"x": x, "y": y})));
        let (task, path) = (drive.task.clone(), drive.path.clone());
        if let Some(drive) = self.floor.as_mut().and_then(|f| f.drives.get_mut(robot)) {
            (drive.stations, drive.points, drive.at, drive.waiting) = (stations, points, 0, None);
            // Only as far as the side station: from there it asks again, after the robots it let pass.
            drive.stop_at = Some(way.len());
            drive.stepped_aside = true;
        }
        let reason = format!(
            "steps aside from {here} to {side} to let the robots it waits for pass, then plans again"
        );
        self.wait_event(&task, robot, &path, reason);
        self.advance(robot);
    }
}
