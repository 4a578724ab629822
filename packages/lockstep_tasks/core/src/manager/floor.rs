//! The shared floor in the manager: a drive along a planned route holds the lanes and stations ahead of it
//! ([`crate::traffic`]) before it goes, and is sent as far as its reservations reach. A robot whose next lane
//! or station is held waits at the last station before it (a WAITING event names the resource and who holds
//! it) and goes on when it is let go. Robots waiting on each other in a cycle are found after every event;
//! the first of the cycle that can step aside drives to a free neighbour station and plans again from there.
//! Maps without lanes, and drives of one station, are sent as they are.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::Value;

use crate::params::Params;
use crate::traffic::{Resource, Traffic};
use crate::tree::Id;

/// A drive sent a stretch at a time.
#[derive(Debug, Clone)]
pub struct Drive {
    pub task: String,
    pub leaf: Id,
    pub path: String,
    pub actuator: String,
    pub server: String,
    pub params: Params,
    /// The route's stations and points (one point per station).
    pub stations: Vec<String>,
    pub points: Vec<Value>,
    /// The station reached last (an index into `stations`).
    pub at: usize,
    /// Where the goal out now ends; `None`: no goal out (waiting).
    pub to: Option<usize>,
    /// What it waits for, once announced: (resource, holders).
    pub waiting: Option<(String, Vec<String>)>,
    /// Its turn among the robots that stand and ask: the one that stopped first asks first.
    pub turn: u64,
    /// The station it stops at whatever is free beyond (the side station it steps aside to).
    pub stop_at: Option<usize>,
    /// It stopped past `at`, on the lane to the next station: its next goal leaves out the point behind.
    pub past_at: bool,
    /// It stepped aside for a cycle of waiting robots: at its side station it asks again only after the
    /// cycle's robots had their chance to take the room it left.
    pub stepped_aside: bool,
    /// Since when it stands waiting [s] (the manager's clock); `None` while it drives.
    pub waiting_since: Option<f64>,
}

/// The floor's reservations and the drives that use them, by robot.
#[derive(Debug, Default)]
pub struct Floor {
    pub traffic: Traffic,
    pub drives: BTreeMap<String, Drive>,
    /// Where a cancelled drive had got to, by (task, leaf): the station reached last, and whether it had
    /// left it. Sent again, the drive goes on from there.
    pub reached: BTreeMap<(String, Id), (usize, bool)>,
    /// Every lane as it may be driven, (from, to): where a robot may step aside to.
    pub lanes: Vec<(String, String)>,
    /// The next turn given to a robot that stops.
    pub next_turn: u64,
}

/// The most lanes a robot backs out through to get off the way of a cycle of waiting robots.
const MAX_ESCAPE_LANES: usize = 6;

impl Floor {
    /// A way out of `cycle` for one of its robots: through lanes it can drive now, to the nearest station off
    /// `ahead` (every station still ahead of the cycle's robots). The robot with the fewest lanes to drive
    /// goes (ties: the first by name), with the stations of its way out (its own excluded). `None`: no robot
    /// of the cycle gets off their way within [`MAX_ESCAPE_LANES`] lanes.
    pub fn escape(&self, cycle: &[String], ahead: &BTreeSet<&str>) -> Option<(String, Vec<String>)> {
        let waiting = self.traffic.waiting();
        let mut best: Option<(String, Vec<String>)> = None;
        for robot in cycle {
            let Some(start) = waiting.get(robot).map(|w| w.from.as_str()) else {
                continue;
            };
            // Breadth first from where it stands; `parent` leads back to the start.
            let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
            let mut queue: VecDeque<(&str, usize)> = VecDeque::from([(start, 0)]);
            let mut found = None;
            while let Some((station, depth)) = queue.pop_front() {
                if depth >= MAX_ESCAPE_LANES || found.is_some() {
                    break;
                }
                for (_, next) in self.lanes.iter().filter(|(from, _)| from == station) {
                    let next = next.as_str();
                    if next == start
                        || parent.contains_key(next)
                        || !self.traffic.can_step(robot, station, next)
                    {
                        continue;
                    }
                    parent.insert(next, station);
                    if !ahead.contains(next) {
                        found = Some(next);
                        break;
                    }
                    queue.push_back((next, depth + 1));
                }
            }
            let Some(mut at) = found else { continue };
            let mut path = vec![at.to_owned()];
            while let Some(&back) = parent.get(at).filter(|b| **b != start) {
                path.push(back.to_owned());
                at = back;
            }
            path.reverse();
            if best.as_ref().is_none_or(|(_, p)| path.len() < p.len()) {
                best = Some((robot.clone(), path));
            }
        }
        best
    }

    /// Room for a cycle of waiting robots none of which has a free neighbour: the nearest free station, found
    /// through stations where waiting robots stand, and the waiting robot next to it, which steps there (the
    /// robots behind it then have room one after the other). `None`: no free station is reachable so.
    pub fn make_room(&self, cycle: &[String]) -> Option<(String, String)> {
        let standing = |station: &str| -> Option<&String> {
            let holders = self.traffic.holders(&Resource::Station(station.to_owned()));
            holders
                .first()
                .and_then(|h| self.drives.get_key_value(h))
                .filter(|(_, d)| d.to.is_none())
                .map(|(r, _)| r)
        };
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut queue: VecDeque<&str> = VecDeque::new();
        for robot in cycle {
            if let Some(d) = self.drives.get(robot) {
                let here = d.stations[d.at].as_str();
                if seen.insert(here) {
                    queue.push_back(here);
                }
            }
        }
        while let Some(station) = queue.pop_front() {
            let Some(robot) = standing(station) else { continue };
            for (_, next) in self.lanes.iter().filter(|(from, _)| from == station) {
                if !seen.insert(next.as_str()) {
                    continue;
                }
                let step = [(station.to_owned(), next.clone())];
                if self
                    .traffic
                    .yield_for(std::slice::from_ref(robot), &step)
                    .is_some()
                {
                    return Some((robot.clone(), next.clone()));
                }
                queue.push_back(next.as_str());
            }
        }
        None
    }
}
