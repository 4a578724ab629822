//! Shared-floor reservations: a lane and the station at its end held before a robot drives, let go on
//! arrival; narrow lanes, capacities and mutex groups; waits name the holders; head-on meetings and full
//! crossings are found as wait-for cycles and broken by a robot stepping aside; what is held survives a
//! restart through the state file, none lost and none twice.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use lockstep_tasks::traffic::{Grant, Held, LaneRule, Layout, Resource, Traffic, Yield};
use proptest::prelude::*;

fn s(name: &str) -> String {
    name.to_owned()
}

fn station(name: &str) -> Resource {
    Resource::Station(s(name))
}

/// Lanes driven both ways, each (a, b) with `rule` in both directions.
fn layout(lanes: &[(&str, &str)], rule: LaneRule) -> Layout {
    let mut layout = Layout::default();
    for (a, b) in lanes {
        layout.lanes.insert((s(a), s(b)), rule.clone());
        layout.lanes.insert((s(b), s(a)), rule.clone());
    }
    layout
}

fn both_ways(lanes: &[(&str, &str)]) -> Vec<(String, String)> {
    lanes
        .iter()
        .flat_map(|(a, b)| [(s(a), s(b)), (s(b), s(a))])
        .collect()
}

fn wait(resource: Resource, holders: &[&str]) -> Grant {
    Grant::Wait {
        resource,
        holders: holders.iter().map(|h| s(h)).collect(),
    }
}

#[test]
fn head_on_in_a_narrow_aisle_is_a_deadlock_broken_by_one_robot_stepping_aside() {
    // West end W, east end E of a narrow aisle; S is a side station off W.
    let aisle = [("W", "E"), ("W", "S")];
    let narrow = LaneRule {
        narrow: true,
        ..LaneRule::default()
    };
    let mut traffic = Traffic::new(layout(&aisle, narrow));
    traffic.place("r1", "W");
    traffic.place("r2", "E");
    assert_eq!(traffic.request("r1", "W", "E"), wait(station("E"), &["r2"]));
    assert_eq!(traffic.request("r2", "E", "W"), wait(station("W"), &["r1"]));
    assert_eq!(traffic.deadlocks(), [[s("r1"), s("r2")]]);
    let step = traffic
        .yield_for(&traffic.deadlocks()[0], &both_ways(&aisle))
        .unwrap();
    assert_eq!(
        step,
        Yield {
            robot: s("r1"),
            from: s("W"),
            to: s("S")
        }
    );
    assert_eq!(traffic.request("r1", "W", "S"), Grant::Go);
    assert!(traffic.deadlocks().is_empty());
    // r2 cannot enter W until r1 has left it.
    assert_eq!(traffic.request("r2", "E", "W"), wait(station("W"), &["r1"]));
    traffic.arrived("r1", "W", "S");
    assert_eq!(traffic.request("r2", "E", "W"), Grant::Go);
    // Both directions of the aisle are one resource: r1 cannot come back in while r2 drives it.
    let lane = Resource::Lane {
        from: s("E"),
        to: s("W"),
    };
    assert_eq!(traffic.holders(&lane), [s("r2")]);
    traffic.arrived("r2", "E", "W");
    assert!(traffic.holders(&lane).is_empty());
    assert_eq!(traffic.holders(&station("E")), Vec::<String>::new());
    assert_eq!(traffic.request("r2", "W", "E"), Grant::Go);
}

#[test]
fn a_full_crossing_holds_one_robot_and_the_cycle_it_makes_is_found() {
    // A crossing X with four arms N, E, S, W, each with a side station (n, e, s, w); X is a mutex group with
    // the lanes into it.
    let arms = [
        ("N", "X"),
        ("E", "X"),
        ("S", "X"),
        ("W", "X"),
        ("N", "n"),
        ("E", "e"),
        ("S", "s"),
        ("W", "w"),
    ];
    let mut layout = layout(&arms, LaneRule::default());
    layout.station_groups.insert(s("X"), vec![s("crossing")]);
    let mut traffic = Traffic::new(layout);
    for (robot, at) in [("r1", "N"), ("r2", "E"), ("r3", "S"), ("r4", "W")] {
        traffic.place(robot, at);
    }
    assert_eq!(traffic.request("r1", "N", "X"), Grant::Go);
    for (robot, at) in [("r2", "E"), ("r3", "S"), ("r4", "W")] {
        assert_eq!(
            traffic.request(robot, at, "X"),
            wait(station("X"), &["r1"]),
            "{robot}"
        );
    }
    assert!(traffic.deadlocks().is_empty(), "r1 is not waiting");
    traffic.arrived("r1", "N", "X");
    let group = Resource::Group(s("crossing"));
    assert_eq!(traffic.holders(&group), [s("r1")]);
    // r1 wants to go on to S, where r3 waits for the crossing: a cycle of two (the others wait on r1 only).
    assert_eq!(traffic.request("r1", "X", "S"), wait(station("S"), &["r3"]));
    assert_eq!(traffic.deadlocks(), [[s("r1"), s("r3")]]);
    // The first robot of the cycle that can move steps aside: r1, back to N, which it has let go of.
    let step = traffic
        .yield_for(&traffic.deadlocks()[0], &both_ways(&arms))
        .unwrap();
    assert_eq!((step.robot.as_str(), step.to.as_str()), ("r1", "N"));
    assert_eq!(traffic.request("r1", "X", "N"), Grant::Go);
    assert!(traffic.deadlocks().is_empty());
    traffic.arrived("r1", "X", "N");
    assert!(traffic.holders(&group).is_empty());
    // r3 crosses now; r2 and r4 still wait, naming it.
    assert_eq!(traffic.request("r3", "S", "X"), Grant::Go);
    assert_eq!(traffic.holders(&group), [s("r3")]);
    for (robot, at) in [("r2", "E"), ("r4", "W")] {
        assert_eq!(
            traffic.request(robot, at, "X"),
            wait(station("X"), &["r3"]),
            "{robot}"
        );
    }
}

#[test]
fn capacities_and_mutex_groups_bound_who_drives_at_once() {
    let mut layout = layout(&[("A", "B"), ("C", "D")], LaneRule::default());
    let wide = LaneRule {
        capacity: 2,
        ..LaneRule::default()
    };
    layout.lanes.insert((s("A"), s("B")), wide);
    layout.station_capacity.insert(s("B"), 3);
    let mut traffic = Traffic::new(layout.clone());
    for robot in ["r1", "r2", "r3"] {
        traffic.place(robot, "A");
    }
    assert_eq!(traffic.request("r1", "A", "B"), Grant::Go);
    assert_eq!(traffic.request("r2", "A", "B"), Grant::Go);
    let lane = Resource::Lane {
        from: s("A"),
        to: s("B"),
    };
    assert_eq!(traffic.request("r3", "A", "B"), wait(lane, &["r1", "r2"]));
    // Two lanes that cross in one mutex group: one robot on either.
    let shared = LaneRule {
        groups: vec![s("overpass")],
        ..LaneRule::default()
    };
    layout.lanes.insert((s("A"), s("B")), shared.clone());
    layout.lanes.insert((s("C"), s("D")), shared);
    let mut traffic = Traffic::new(layout);
    traffic.place("r1", "A");
    traffic.place("r2", "C");
    assert_eq!(traffic.request("r1", "A", "B"), Grant::Go);
    assert_eq!(
        traffic.request("r2", "C", "D"),
        wait(Resource::Group(s("overpass")), &["r1"])
    );
    // A robot that drops out lets go of everything: the one waiting goes.
    let freed = traffic.release_all("r1");
    assert!(freed.contains(&Resource::Group(s("overpass"))) && freed.contains(&station("A")));
    assert_eq!(traffic.request("r2", "C", "D"), Grant::Go);
}

#[test]
fn what_is_held_comes_back_after_a_restart_none_lost_and_none_twice() {
    let lanes = [("A", "B"), ("B", "C")];
    let mut traffic = Traffic::new(layout(&lanes, LaneRule::default()));
    traffic.place("r1", "A");
    traffic.place("r2", "C");
    assert_eq!(traffic.request("r1", "A", "B"), Grant::Go);
    let kept = serde_json::to_string(&traffic.held()).unwrap();
    let held: Held = serde_json::from_str(&kept).unwrap();
    let mut restarted = Traffic::restore(layout(&lanes, LaneRule::default()), held);
    assert_eq!(restarted.held(), traffic.held());
    // Taking back twice (a restart during a restart) holds nothing twice.
    restarted.place("r1", "A");
    assert_eq!(restarted.held(), traffic.held());
    assert_eq!(restarted.request("r2", "C", "B"), wait(station("B"), &["r1"]));
    restarted.arrived("r1", "A", "B");
    let r1: BTreeSet<Resource> = restarted.held().robots["r1"].clone();
    assert_eq!(r1, BTreeSet::from([station("B")]));
}

proptest! {
    /// Whatever robots ask and wherever they arrive, no resource is ever held by more robots than it takes.
    #[test]
    fn no_resource_is_ever_over_its_capacity(ops in prop::collection::vec((0usize..4, 0usize..5, any::<bool>()), 1..200)) {
        let names = ["P0", "P1", "P2", "P3", "P4"];
        let lanes: Vec<(&str, &str)> = names.windows(2).map(|w| (w[0], w[1])).collect();
        let narrow = LaneRule { narrow: true, ..LaneRule::default() };
        let mut traffic = Traffic::new(layout(&lanes, narrow));
        let mut at = [0usize, 1, 3, 4];
        let mut driving: [Option<usize>; 4] = [None; 4];
        for (i, &p) in at.iter().enumerate() {
            traffic.place(&format!("r{i}"), names[p]);
        }
        for (robot, target, arrive) in ops {
            let name = format!("r{robot}");
            match driving[robot] {
                Some(to) if arrive => {
                    traffic.arrived(&name, names[at[robot]], names[to]);
                    at[robot] = to;
                    driving[robot] = None;
                }
                Some(_) => {}
                None => {
                    let from = at[robot];
                    if target.abs_diff(from) == 1 && traffic.request(&name, names[from], names[target]) == Grant::Go {
                        driving[robot] = Some(target);
                    }
                }
            }
            let held = traffic.held();
            let mut count = std::collections::BTreeMap::new();
            for resources in held.robots.values() {
                for r in resources {
                    *count.entry(r.clone()).or_insert(0) += 1;
                }
            }
            for (r, n) in count {
                prop_assert!(n <= 1, "{r} held by {n} robots");
            }
        }
    }
}
