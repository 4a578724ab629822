//! Shared-floor reservations: before a robot drives a lane, its manager holds the lane and the station at its
//! end; on arrival it lets go of the lane and the station it left. A lane has a capacity per direction
//! (default 1); a narrow lane counts both directions as one. Mutex groups (lanes and stations that cross or
//! share floor, as Open-RMF's mutex groups) are held by one robot at a time, whichever member it uses. A
//! request is all or nothing: the robot waits at its station, told which resource and which robots hold it.
//!
//! Robots waiting on each other in a cycle (head-on in a narrow aisle, four robots entering a crossing) are a
//! deadlock: [`Traffic::deadlocks`] finds every cycle of the wait-for graph, and [`Traffic::yield_for`] names
//! the robot that steps aside and the free station it can go to, so the others go on. Pure and deterministic:
//! every map is ordered, ties go to the first name.

use std::collections::{BTreeMap, BTreeSet};

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use serde::{Deserialize, Serialize};

/// A piece of floor robots hold.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Resource {
    /// A station (a robot standing on it, or about to).
    Station(String),
    /// A lane driven from `from` to `to`; for a narrow lane, `from` is the first name of the two, whichever
    /// way it is driven.
    Lane { from: String, to: String },
    /// A mutex group.
    Group(String),
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::Station(name) => write!(f, "station {name}"),
            Resource::Lane { from, to } => write!(f, "lane {from} -> {to}"),
            Resource::Group(name) => write!(f, "mutex group {name}"),
        }
    }
}

/// How one lane is shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneRule {
    /// Robots at once in one direction (both, for a narrow lane).
    pub capacity: u32,
    /// Both directions share the floor: one resource for the two.
    pub narrow: bool,
    /// The mutex groups the lane belongs to.
    pub groups: Vec<String>,
}

impl Default for LaneRule {
    fn default() -> Self {
        LaneRule {
            capacity: 1,
            narrow: false,
            groups: Vec::new(),
        }
    }
}

/// The floor's rules: lanes (by direction driven), station capacities and groups. Lanes and stations not
/// named have the defaults (capacity 1, not narrow, no group).
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// (from, to) as driven; a lane driven both ways has an entry for each way.
    pub lanes: BTreeMap<(String, String), LaneRule>,
    pub station_capacity: BTreeMap<String, u32>,
    pub station_groups: BTreeMap<String, Vec<String>>,
}

impl Layout {
    fn lane(&self, from: &str, to: &str) -> LaneRule {
        self.lanes
            .get(&(from.to_owned(), to.to_owned()))
            .cloned()
            .unwrap_or_default()
    }

    fn capacity(&self, resource: &Resource) -> u32 {
        match resource {
            Resource::Station(name) => self.station_capacity.get(name).copied().unwrap_or(1),
            Resource::Lane { from, to } => self.lane(from, to).capacity,
            Resource::Group(_) => 1,
        }
    }

    /// What a robot at `from` holds to drive to `to`: the lane, the station at its end, their groups.
    pub fn step_needs(&self, from: &str, to: &str) -> BTreeSet<Resource> {
        let rule = self.lane(from, to);
        let lane = match rule.narrow && to < from {
            true => Resource::Lane {
                from: to.to_owned(),
                to: from.to_owned(),
            },
            false => Resource::Lane {
                from: from.to_owned(),
                to: to.to_owned(),
            },
        };
        let groups = rule
            .groups
            .iter()
            .chain(self.station_groups.get(to).into_iter().flatten());
        [lane, Resource::Station(to.to_owned())]
            .into_iter()
            .chain(groups.map(|g| Resource::Group(g.clone())))
            .collect()
    }

    /// What a robot standing at `station` holds: the station and its groups.
    pub fn standing(&self, station: &str) -> BTreeSet<Resource> {
        std::iter::once(Resource::Station(station.to_owned()))
            .chain(
                self.station_groups
                    .get(station)
                    .into_iter()
                    .flatten()
                    .map(|g| Resource::Group(g.clone())),
            )
            .collect()
    }
}

/// The answer to a request to drive a lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// Everything is held: drive.
    Go,
    /// Wait at the station: `resource` is full, held by `holders` (sorted).
    Wait {
        resource: Resource,
        holders: Vec<String>,
    },
}

/// A robot waiting to drive from `from` to `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    pub from: String,
    pub to: String,
}

/// A robot that steps aside to break a deadlock: it drives to `to` (a free neighbour) and plans again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Yield {
    pub robot: String,
    pub from: String,
    pub to: String,
}

/// What each robot holds, to keep in a state file: a restart takes them back, none lost and none twice.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub robots: BTreeMap<String, BTreeSet<Resource>>,
}

/// The reservations of one floor.
#[derive(Debug, Clone, Default)]
pub struct Traffic {
    layout: Layout,
    held: BTreeMap<String, BTreeSet<Resource>>,
    waiting: BTreeMap<String, Waiting>,
}

impl Traffic {
    pub fn new(layout: Layout) -> Self {
        Traffic {
            layout,
            held: BTreeMap::new(),
            waiting: BTreeMap::new(),
        }
    }

    /// Take back what a state file kept (after a restart).
    pub fn restore(layout: Layout, held: Held) -> Self {
        Traffic {
            layout,
            held: held.robots,
            waiting: BTreeMap::new(),
        }
    }

    /// What every robot holds now (for the state file and the fleet view).
    pub fn held(&self) -> Held {
        Held {
            robots: self.held.clone(),
        }
    }

    /// The robots holding `resource`, sorted.
    pub fn holders(&self, resource: &Resource) -> Vec<String> {
        self.held
            .iter()
            .filter(|(_, held)| held.contains(resource))
            .map(|(robot, _)| robot.clone())
            .collect()
    }

    /// The robots waiting, and for what.
    pub fn waiting(&self) -> &BTreeMap<String, Waiting> {
        &self.waiting
    }

    /// `robot` stands at `station` (it joined, or the manager starts): it holds the station. Another robot
    /// there already is the caller's to sort out: both hold it, over capacity.
    pub fn place(&mut self, robot: &str, station: &str) {
        let standing = self.layout.standing(station);
        self.held.entry(robot.to_owned()).or_default().extend(standing);
    }

    /// `robot`, at `from`, asks to drive the lane to `to`: all of it is held at once, or nothing and the
    /// robot waits (asking again when something is let go).
    pub fn request(&mut self, robot: &str, from: &str, to: &str) -> Grant {
        let needs = self.layout.step_needs(from, to);
        if let Some((resource, holders)) = self.first_full(robot, &needs) {
            self.waiting.insert(
                robot.to_owned(),
                Waiting {
                    from: from.to_owned(),
                    to: to.to_owned(),
                },
            );
            return Grant::Wait { resource, holders };
        }
        self.waiting.remove(robot);
        self.held.entry(robot.to_owned()).or_default().extend(needs);
        Grant::Go
    }

    /// The first resource of `needs` with no room for `robot`, and who holds it.
    fn first_full(&self, robot: &str, needs: &BTreeSet<Resource>) -> Option<(Resource, Vec<String>)> {
        let mine = self.held.get(robot);
        needs
            .iter()
            .filter(|r| !mine.is_some_and(|m| m.contains(*r)))
            .find_map(|r| {
                let holders = self.holders(r);
                (holders.len() >= self.layout.capacity(r) as usize).then(|| (r.clone(), holders))
            })
    }

    /// Whether `robot` could drive the lane from `from` to `to` now (its lane and station have room).
    pub fn can_step(&self, robot: &str, from: &str, to: &str) -> bool {
        self.first_full(robot, &self.layout.step_needs(from, to))
            .is_none()
    }

    /// `robot` reached `station` driving from `from`: the lane, the station left and their groups are let go;
    /// it keeps the station it stands on and its groups.
    pub fn arrived(&mut self, robot: &str, from: &str, station: &str) {
        let keep = self.layout.standing(station);
        let step = self.layout.step_needs(from, station);
        let left = self.layout.standing(from);
        if let Some(held) = self.held.get_mut(robot) {
            held.retain(|r| keep.contains(r) || !(step.contains(r) || left.contains(r)));
        }
    }

    /// `robot` no longer waits (it drives to the last station it holds, and asks again there).
    pub fn stop_waiting(&mut self, robot: &str) {
        self.waiting.remove(robot);
    }

    /// `robot` is gone (lost, or taken off the floor): everything it held is let go.
    pub fn release_all(&mut self, robot: &str) -> BTreeSet<Resource> {
        self.waiting.remove(robot);
        self.held.remove(robot).unwrap_or_default()
    }

    /// Each set of robots waiting on each other in a cycle (sorted, each set sorted by name).
    pub fn deadlocks(&self) -> Vec<Vec<String>> {
        let robots: Vec<&String> = self.waiting.keys().collect();
        let mut graph = DiGraph::<&str, ()>::new();
        let nodes: BTreeMap<&str, NodeIndex> = robots
            .iter()
            .map(|r| (r.as_str(), graph.add_node(r.as_str())))
            .collect();
        for (robot, wait) in &self.waiting {
            let needs = self.layout.step_needs(&wait.from, &wait.to);
            let mine = self.held.get(robot);
            for resource in needs.iter().filter(|r| !mine.is_some_and(|m| m.contains(*r))) {
                if self.holders(resource).len() < self.layout.capacity(resource) as usize {
                    continue;
                }
                for holder in self.holders(resource) {
                    if let (Some(&a), Some(&b)) = (nodes.get(robot.as_str()), nodes.get(holder.as_str())) {
                        graph.update_edge(a, b, ());
                    }
                }
            }
        }
        let mut cycles: Vec<Vec<String>> = tarjan_scc(&graph)
            .into_iter()
            .filter(|scc| scc.len() > 1)
            .map(|scc| {
                let mut names: Vec<String> = scc.iter().map(|&n| graph[n].to_owned()).collect();
                names.sort();
                names
            })
            .collect();
        cycles.sort();
        cycles
    }

    /// Who steps aside to break `cycle`: the first robot (by name) of it with a neighbour station it can
    /// reach now through `lanes` (each (from, to) a lane driven that way), other than the one it waits for;
    /// the neighbour is the first free one by name. `None`: nobody in the cycle can move.
    pub fn yield_for(&self, cycle: &[String], lanes: &[(String, String)]) -> Option<Yield> {
        cycle.iter().find_map(|robot| {
            let wait = self.waiting.get(robot)?;
            lanes
                .iter()
                .filter(|(from, to)| *from == wait.from && *to != wait.to)
                .map(|(_, to)| to)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .find(|to| {
                    let needs = self.layout.step_needs(&wait.from, to);
                    self.first_full(robot, &needs).is_none()
                })
                .map(|to| Yield {
                    robot: robot.clone(),
                    from: wait.from.clone(),
                    to: to.clone(),
                })
        })
    }
}
