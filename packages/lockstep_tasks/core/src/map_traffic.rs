//! How a station map's floor is shared ([`Layout`]): each lane's capacity and whether it is narrow, each
//! station's capacity, and the mutex groups, checked against the map's stations and lanes.
//!
//! ```yaml
//! stations:
//!   J3: {x: 9.5, y: 2.5, capacity: 1}      # robots at once on the station (default 1)
//! lanes:
//!   - {from: J2, to: O, speed_limit_mps: 0.8, narrow: true}   # both ways count as one (a one-lane aisle)
//!   - {from: O, to: J3, speed_limit_mps: 0.8, capacity: 2}    # robots at once per direction (default 1)
//! mutex_groups:                            # one robot at a time on any member
//!   crossing: {stations: [J3], lanes: [{from: O, to: J3}, {from: J3, to: B}]}
//! ```

use std::collections::{BTreeMap, BTreeSet};

use crate::map_file::MapFile;
use crate::traffic::{LaneRule, Layout};

/// The largest capacity a lane or station may have.
pub const MAX_CAPACITY: i64 = 1000;

type Problem = (String, String);

fn capacity(key: String, given: Option<i64>) -> Result<u32, Problem> {
    match given {
        None => Ok(1),
        Some(n) if (1..=MAX_CAPACITY).contains(&n) => Ok(n as u32),
        Some(n) => Err((
            key,
            format!("{n}: a capacity is a whole number from 1 to {MAX_CAPACITY}"),
        )),
    }
}

/// The layout of `raw` (its stations already checked): the first problem as (key path, reason).
pub(crate) fn layout(raw: &MapFile) -> Result<Layout, Problem> {
    let mut layout = Layout::default();
    for (name, p) in &raw.stations.by_name {
        let cap = capacity(format!("stations.{name}.capacity"), p.capacity)?;
        if cap != 1 {
            layout.station_capacity.insert(name.clone(), cap);
        }
    }
    // Each lane's ways, with its index for the groups' references.
    let mut ways: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (i, lane) in raw.lanes.iter().enumerate() {
        let rule = LaneRule {
            capacity: capacity(format!("lanes[{i}].capacity"), lane.capacity)?,
            narrow: lane.narrow,
            groups: Vec::new(),
        };
        let mut driven = vec![(lane.from.clone(), lane.to.clone())];
        if !lane.one_way {
            driven.push((lane.to.clone(), lane.from.clone()));
        }
        for way in driven {
            ways.insert(way.clone(), i);
            layout.lanes.insert(way, rule.clone());
        }
    }
    for (group, members) in &raw.mutex_groups {
        let at = format!("mutex_groups.{group}");
        if group.trim().is_empty() {
            return Err(("mutex_groups".into(), "a group name is empty".into()));
        }
        if members.stations.is_empty() && members.lanes.is_empty() {
            return Err((at, "a group needs stations or lanes".into()));
        }
        let mut seen = BTreeSet::new();
        for (j, station) in members.stations.iter().enumerate() {
            if !raw.stations.by_name.contains_key(station) {
                return Err((
                    format!("{at}.stations[{j}]"),
                    format!("`{station}` is not a station"),
                ));
            }
            if seen.insert(station.clone()) {
                layout
                    .station_groups
                    .entry(station.clone())
                    .or_default()
                    .push(group.clone());
            }
        }
        for (j, lane) in members.lanes.iter().enumerate() {
            let (a, b) = (lane.from.clone(), lane.to.clone());
            let found: Vec<(String, String)> = [(a.clone(), b.clone()), (b.clone(), a.clone())]
                .into_iter()
                .filter(|way| ways.contains_key(way))
                .collect();
            if found.is_empty() {
                return Err((
                    format!("{at}.lanes[{j}]"),
                    format!("no lane between `{a}` and `{b}`"),
                ));
            }
            for way in found {
                if let Some(rule) = layout.lanes.get_mut(&way) {
                    if !rule.groups.contains(group) {
                        rule.groups.push(group.clone());
                    }
                }
            }
        }
    }
    Ok(layout)
}
