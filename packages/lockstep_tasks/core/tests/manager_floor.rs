//! The manager on a shared floor: two robots sent head-on through a one-lane aisle. Each drive holds the
//! lanes and stations ahead before it goes; the robot whose way is held waits (the event names the holder);
//! the two waiting on each other are a deadlock, broken by one stepping aside to the free side station; both
//! arrive, and no station or lane is ever held by both.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/world.rs"]
mod world;

use std::collections::BTreeMap;

use lockstep_tasks::manager::{Command, Event, EventKind, GoalRequest};
use world::{arrive, go_to, on_map, Fake};

const CONFIG: &str = "\
levels: [task, action]
actuators:
  nav: {server: nav, type: x/action/Nav, goal: {route: route}}
templates:
  go:
    level: task
    required: [to]
    children: [{type: drive, parameters: {route: {from: \"{at}\", to: \"{to}\"}}}]
  drive: {level: action, actuator: nav}
";

/// W - M - E, one lane wide; S beside M.
const AISLE: &str = "stations:
  W: {x: 0.0, y: 0.0}
  M: {x: 5.0, y: 0.0}
  E: {x: 10.0, y: 0.0}
  S: {x: 5.0, y: 3.0}
lanes:
  - {from: W, to: M, speed_limit_mps: 1.0, narrow: true}
  - {from: M, to: E, speed_limit_mps: 1.0, narrow: true}
  - {from: M, to: S, speed_limit_mps: 1.0}
";

/// The warehouse's upper corridor, one lane wide: C - J6 - J7 - D, with J5 off J6 and J8 off J7.
const CORRIDOR: &str = "stations:
  C: {x: 2.5, y: 12.5}
  J6: {x: 4.5, y: 12.5}
  J7: {x: 14.5, y: 12.5}
  D: {x: 17.5, y: 12.5}
  J5: {x: 4.5, y: 8.5}
  J8: {x: 14.5, y: 5.5}
lanes:
  - {from: C, to: J6, speed_limit_mps: 1.0, narrow: true}
  - {from: J6, to: J7, speed_limit_mps: 1.0, narrow: true}
  - {from: J7, to: D, speed_limit_mps: 1.0, narrow: true}
  - {from: J5, to: J6, speed_limit_mps: 1.0}
  - {from: J7, to: J8, speed_limit_mps: 1.0}
";

/// A goal out: (task, leaf, generation).
type Sent = (String, usize, u64);

/// What a run gave: the robots sent goals first, the WAITING events (robot, reason), each task's outcome,
/// and where each robot ended.
struct Run {
    first_sent: Vec<String>,
    waits: Vec<(String, String)>,
    outcomes: BTreeMap<String, String>,
    stations: Vec<String>,
}

impl Run {
    /// The step-aside events' reasons.
    fn asides(&self) -> Vec<&str> {
        (self.waits.iter())
            .filter(|(_, why)| why.contains("steps aside"))
            .map(|(_, why)| why.as_str())
            .collect()
    }

    /// The one step-aside event's reason (there must be exactly one).
    fn only_aside(&self) -> &str {
        let asides = self.asides();
        assert_eq!(asides.len(), 1, "{asides:?}");
        asides[0]
    }
}

fn record(commands: &[Command<Fake>], sent: &mut Vec<Sent>, run: &mut Run) {
    for c in commands {
        match c {
            Command::SendGoal {
                task,
                leaf,
                generation,
                ..
            } => sent.push((task.clone(), *leaf, *generation)),
            Command::Publish(e) if e.kind == EventKind::Waiting => {
                run.waits.push((e.robot.clone(), e.reason.clone()))
            }
            Command::Finish { task, outcome, .. } => {
                run.outcomes.insert(task.clone(), format!("{outcome:?}"));
            }
            _ => {}
        }
    }
}

/// Each robot of `robots` (name, station) is sent to its destination in `to` at once; then every goal out
/// ends well, one at a time, oldest first, until none is out. No resource is ever held twice meanwhile.
fn run(map: &str, robots: &[(&str, &str)], to: &[&str]) -> Run {
    let mut m = on_map(CONFIG, map, robots);
    let mut sent = Vec::new();
    let mut run = Run {
        first_sent: Vec::new(),
        waits: Vec::new(),
        outcomes: BTreeMap::new(),
        stations: Vec::new(),
    };
    for (request, ((robot, _), to)) in robots.iter().zip(to).enumerate() {
        let goal = go_to(request as u64, robot, to);
        let out = m.handle(
            0.0,
            Event::Goal {
                request: request as u64,
                goal,
            },
        );
        record(&out, &mut sent, &mut run);
    }
    run.first_sent = (sent.iter())
        .map(|(task, ..)| m.tasks[task].robot.clone())
        .collect();
    let mut now = 0.0;
    while !sent.is_empty() {
        let (task, leaf, generation) = sent.remove(0);
        assert!(now < 50.0, "the robots never arrive: {:?}", run.waits);
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for held in m.floor.as_ref().unwrap().traffic.held().robots.values() {
            for resource in held {
                *count.entry(resource.to_string()).or_default() += 1;
            }
        }
        assert!(count.values().all(|&n| n == 1), "held twice: {count:?}");
        now += 1.0;
        let out = arrive(&mut m, now, &task, leaf, generation);
        record(&out, &mut sent, &mut run);
    }
    run.stations = m.robots.values().map(|r| r.station.clone().unwrap()).collect();
    run
}

#[test]
fn head_on_in_a_one_lane_aisle_one_robot_waits_then_steps_aside_and_both_arrive() {
    let run = run(AISLE, &[("r1", "W"), ("r2", "E")], &["E", "W"]);
    // r1 holds W -> M and drives there; r2 waits at E for M, which r1 holds.
    assert_eq!(run.first_sent, ["r1"]);
    assert_eq!(
        run.waits[0],
        (
            "r2".to_owned(),
            "waiting at E for station M, held by r1".to_owned()
        )
    );
    assert_eq!(
        run.outcomes.len(),
        2,
        "both tasks end: {:?} {:?}",
        run.outcomes,
        run.waits
    );
    assert!(
        run.outcomes.values().all(|o| o.contains("Completed")),
        "{:?}",
        run.outcomes
    );
    assert_eq!(run.stations, ["E", "W"], "each robot at its destination");
    assert!(
        run.waits
            .iter()
            .any(|(r, why)| r == "r1" && why.contains("steps aside from M to S")),
        "the cycle is broken by r1 stepping aside: {:?}",
        run.waits
    );
}

#[test]
fn the_robot_that_steps_aside_leaves_the_corridor_the_other_needs() {
    let run = run(CORRIDOR, &[("r1", "C"), ("r2", "D")], &["D", "C"]);
    assert_eq!(run.stations, ["D", "C"], "{:?}", run.waits);
    // r1 reaches J7, the two wait on each other; J6 is on r2's way, J8 is not.
    let aside = run.only_aside();
    assert!(aside.starts_with("steps aside from J7 to J8"), "{aside}");
}

/// A dead-end corridor B - A - X with two ways on at X: S (where r1 goes) and T.
const DEAD_END: &str = "stations:
  B: {x: 10.0, y: 0.0}
  A: {x: 5.0, y: 0.0}
  X: {x: 0.0, y: 0.0}
  S: {x: -5.0, y: 0.0}
  T: {x: 0.0, y: 5.0}
lanes:
  - {from: B, to: A, speed_limit_mps: 1.0}
  - {from: A, to: X, speed_limit_mps: 1.0}
  - {from: X, to: S, speed_limit_mps: 1.0}
  - {from: X, to: T, speed_limit_mps: 1.0}
";

#[test]
fn a_robot_with_no_free_neighbour_off_the_way_backs_out_through_several_lanes() {
    // r1 at B heads for S; r2 at A heads for B: head-on. Every neighbour is on r1's way, so r2 backs out
    // two lanes, A -> X -> T, in one go (one lane at a time, to X, it would stand in r1's way again).
    let run = run(DEAD_END, &[("r1", "B"), ("r2", "A")], &["S", "B"]);
    assert_eq!(run.stations, ["S", "B"], "{:?}", run.waits);
    let aside = run.only_aside();
    assert!(aside.starts_with("steps aside from A to T"), "{aside}");
}

/// Two ways from A to D: by B (10 m) and by C (about 14 m).
const TWO_WAYS: &str = "stations:
  A: {x: 0.0, y: 0.0}
  B: {x: 5.0, y: 0.0}
  C: {x: 5.0, y: 5.0}
  D: {x: 10.0, y: 0.0}
lanes:
  - {from: A, to: B, speed_limit_mps: 1.0}
  - {from: B, to: D, speed_limit_mps: 1.0}
  - {from: A, to: C, speed_limit_mps: 1.0}
  - {from: C, to: D, speed_limit_mps: 1.0}
";

#[test]
fn a_robot_kept_waiting_past_replan_after_s_goes_round_the_robot_in_its_way() {
    // r2 stands idle at B; r1 drives A -> D, planned by B.
    let sent_of = |out: &[Command<Fake>]| -> Vec<Sent> {
        (out.iter())
            .filter_map(|c| match c {
                Command::SendGoal {
                    task,
                    leaf,
                    generation,
                    ..
                } => Some((task.clone(), *leaf, *generation)),
                _ => None,
            })
            .collect()
    };
    let waits_of = |out: &[Command<Fake>]| -> Vec<String> {
        (out.iter())
            .filter_map(|c| match c {
                Command::Publish(e) if e.kind == EventKind::Waiting => Some(e.reason.clone()),
                _ => None,
            })
            .collect()
    };
    for replan_after_s in [None, Some(5.0)] {
        let mut m = on_map(CONFIG, TWO_WAYS, &[("r1", "A"), ("r2", "B")]);
        m.replan_after_s = replan_after_s;
        let out = m.handle(
            0.0,
            Event::Goal {
                request: 0,
                goal: go_to(0, "r1", "D"),
            },
        );
        assert_eq!(waits_of(&out), ["waiting at A for station B, held by r2"]);
        assert!(sent_of(&out).is_empty());
        let out = m.handle(6.0, Event::Tick);
        match replan_after_s {
            None => assert!(
                sent_of(&out).is_empty() && waits_of(&out).is_empty(),
                "it waits on"
            ),
            Some(_) => {
                assert_eq!(
                    waits_of(&out),
                    ["plans around station B after waiting 6 s at A: via C, D"]
                );
                let sent = sent_of(&out);
                assert_eq!(sent.len(), 1);
                let (task, leaf, generation) = sent[0].clone();
                let done = arrive(&mut m, 20.0, &task, leaf, generation);
                assert!(
                    done.iter().any(|c| matches!(c, Command::Finish { .. })),
                    "the drive by C completes"
                );
                assert_eq!(m.robots["r1"].station.as_deref(), Some("D"));
            }
        }
    }
}

#[test]
fn a_stretch_stops_before_a_station_it_passed_so_the_station_is_held_when_it_comes_back() {
    // A drive given its stations: W, M, S and back through M to E. Arriving at S lets go of M, so the goal
    // goes no further than S, and the way back through M is asked for again there.
    let config = "\
levels: [task, action]
actuators:
  nav: {server: nav, type: x/action/Nav, goal: {route: route}}
templates:
  loop:
    level: task
    children:
      - type: drive
        parameters:
          route_stations: [W, M, S, M, E]
          route: [{x: 0.0, y: 0.0}, {x: 5.0, y: 0.0}, {x: 5.0, y: 3.0}, {x: 5.0, y: 0.0}, {x: 10.0, y: 0.0}]
  drive: {level: action, actuator: nav}
";
    let mut m = on_map(config, AISLE, &[("r1", "W")]);
    let goal = GoalRequest {
        task_type: "loop".into(),
        robot: "r1".into(),
        ..go_to(0, "r1", "E")
    };
    let out = m.handle(0.0, Event::Goal { request: 0, goal });
    let routes: Vec<usize> = (out.iter())
        .filter_map(|c| match c {
            Command::SendGoal { goal, .. } => goal["route"].as_array().map(Vec::len),
            _ => None,
        })
        .collect();
    assert_eq!(routes, [3], "W, M, S only");
}

#[test]
fn a_restart_takes_back_what_was_held_none_lost_and_none_twice() {
    let mut m = on_map(CONFIG, AISLE, &[("r1", "W"), ("r2", "E")]);
    let goal = GoalRequest {
        uuid: "g0".into(),
        task_type: "go".into(),
        parameters_json: "{\"to\": \"E\"}".into(),
        robot: "r1".into(),
        ..GoalRequest::default()
    };
    m.handle(0.0, Event::Goal { request: 0, goal });
    let held = m.floor.as_ref().unwrap().traffic.held();
    // r1 holds the lane to M and M (E is r2's); r2 stands at E.
    let r1: Vec<String> = held.robots["r1"].iter().map(ToString::to_string).collect();
    assert_eq!(r1, ["station M", "station W", "lane M -> W"], "{r1:?}");
    // Through the state file's text, as a restart reads it.
    let text = serde_json::to_string(&m.journal_state()).unwrap();
    let mut again = on_map(CONFIG, AISLE, &[("r1", "W"), ("r2", "E")]);
    again.handle(1.0, Event::Restore(serde_json::from_str(&text).unwrap()));
    assert_eq!(again.floor.as_ref().unwrap().traffic.held(), held);
    // The restored task resumed: its drive holds nothing twice and goes on; r2 still cannot enter M.
    let id = again.tasks.keys().next().unwrap().clone();
    let out = again.handle(2.0, Event::Resume { request: 9, task: id });
    assert!(out
        .iter()
        .any(|c| matches!(c, Command::SendGoal { robot, .. } if robot == "r1")));
    let after = again.floor.as_ref().unwrap().traffic.held();
    assert_eq!(after.robots["r1"], held.robots["r1"]);
    assert_eq!(after.robots["r2"], held.robots["r2"]);
}

#[test]
fn the_fleet_view_shows_who_holds_what_and_who_waits() {
    use lockstep_tasks::manager::view::RobotMood;
    let mut m = on_map(CONFIG, AISLE, &[("r1", "W"), ("r2", "E")]);
    for (request, (robot, to)) in [("r1", "E"), ("r2", "W")].into_iter().enumerate() {
        let goal = go_to(request as u64, robot, to);
        m.handle(
            0.0,
            Event::Goal {
                request: request as u64,
                goal,
            },
        );
    }
    let view = m.fleet_view().unwrap();
    assert_eq!(view.frame_id, "map");
    let [r1, r2] = [&view.robots[0], &view.robots[1]];
    assert_eq!(
        (r1.name.as_str(), r1.at, r1.mood),
        ("r1", [0.0, 0.0], RobotMood::Going)
    );
    assert_eq!(r1.route, [[0.0, 0.0], [5.0, 0.0], [10.0, 0.0]]);
    assert_eq!(
        r1.lanes,
        [([5.0, 0.0], [0.0, 0.0])],
        "the aisle W - M, held both ways as one"
    );
    assert_eq!(r1.stations.len(), 2, "W and M");
    assert_eq!(
        (r2.name.as_str(), r2.at, r2.mood),
        ("r2", [10.0, 0.0], RobotMood::Waiting)
    );
    assert_eq!(r2.stations, [[10.0, 0.0]]);
}
