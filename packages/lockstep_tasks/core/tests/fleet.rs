//! Fleet assignment: a named robot takes its task; otherwise the robot that can start soonest, ties to fewer
//! queued tasks, then the first name; robots that cannot reach the first station are left out.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;

use lockstep_tasks::{
    assign, AssignError, Assignment, PlannedRoute, Planner, RobotView, RouteError, StationMap, TaskNeeds,
};

/// A line of stations 10 m apart at 1 m/s (A - B - C - D), and X, reached only from D by a one-way lane.
const LINE: &str = "\
stations:
  A: {x: 0, y: 0}
  B: {x: 10, y: 0}
  C: {x: 20, y: 0}
  D: {x: 30, y: 0}
  X: {x: 30, y: 10}
lanes:
  - {from: A, to: B, speed_limit_mps: 1.0}
  - {from: B, to: C, speed_limit_mps: 1.0}
  - {from: C, to: D, speed_limit_mps: 1.0}
  - {from: D, to: X, speed_limit_mps: 1.0, one_way: true}
";

fn line() -> StationMap {
    StationMap::parse("line.yaml", LINE).unwrap()
}

fn robot(name: &str, station: &str, busy_until_s: Option<f64>, queued: usize) -> RobotView {
    RobotView {
        name: name.into(),
        station: station.into(),
        busy_until_s,
        queued,
    }
}

fn to(station: &str) -> TaskNeeds {
    TaskNeeds {
        first_station: Some(station.into()),
        robot: None,
    }
}

fn pick(robots: &[RobotView], task: &TaskNeeds) -> Assignment {
    assign(robots, task, &line(), 100.0).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_nearest_free_robot_starts_first() {
    let robots = [robot("r1", "A", None, 0), robot("r2", "C", None, 0)];
    let a = pick(&robots, &to("B"));
    assert_eq!(a.robot, "r1");
    assert_eq!((a.start_s, a.travel_s), (110.0, 10.0));
    assert_eq!(a.reason, "r1: free, 10.0 s from A to B");
    let a = pick(&robots, &to("D"));
    assert_eq!((a.robot.as_str(), a.start_s), ("r2", 110.0));
    let a = pick(&robots, &to("C"));
    assert_eq!((a.robot.as_str(), a.travel_s), ("r2", 0.0));
    assert_eq!(a.reason, "r2: free, already at C");
}

#[test]
fn a_busy_robot_that_starts_sooner_wins() {
    // r1 is free but 30 s away; r2 is done in 5 s and will be at D.
    let robots = [robot("r1", "A", None, 0), robot("r2", "D", Some(105.0), 1)];
    let a = pick(&robots, &to("D"));
    assert_eq!((a.robot.as_str(), a.start_s, a.travel_s), ("r2", 105.0, 0.0));
    assert_eq!(a.reason, "r2: busy until 105.0 s, then already at D");
    // Done in 35 s: r1 starts first.
    let robots = [robot("r1", "A", None, 0), robot("r2", "C", Some(135.0), 1)];
    let a = pick(&robots, &to("D"));
    assert_eq!((a.robot.as_str(), a.start_s), ("r1", 130.0));
    // Busy until a time already past: free now.
    let robots = [robot("r1", "A", None, 0), robot("r2", "C", Some(50.0), 0)];
    let a = pick(&robots, &to("D"));
    assert_eq!(a.reason, "r2: free, 10.0 s from C to D");
}

#[test]
fn ties_go_to_free_then_fewer_queued_then_the_first_name() {
    let same = |busy, queued| robot("a_busy", "B", busy, queued);
    // All start at 110 s.
    let free = [
        robot("zed", "A", None, 2),
        robot("amy", "C", None, 2),
        same(Some(110.0), 0),
    ];
    assert_eq!(
        pick(&free, &to("B")).robot,
        "amy",
        "equal start: free first, then the first name among equal queues"
    );
    let queued = [robot("zed", "A", None, 1), robot("amy", "C", None, 2)];
    assert_eq!(
        pick(&queued, &to("B")).robot,
        "zed",
        "fewer queued before the name"
    );
    let busy = [robot("zed", "C", None, 3), robot("amy", "B", Some(110.0), 0)];
    assert_eq!(
        pick(&busy, &to("B")).robot,
        "zed",
        "free before busy at the same start"
    );
    // The order of the robots does not matter.
    let mut reversed = free.clone();
    reversed.reverse();
    assert_eq!(pick(&reversed, &to("B")).robot, "amy");
}

#[test]
fn a_task_naming_a_robot_goes_to_it() {
    let robots = [robot("r1", "A", None, 0), robot("r2", "D", Some(200.0), 4)];
    let task = TaskNeeds {
        first_station: Some("A".into()),
        robot: Some("r2".into()),
    };
    let a = pick(&robots, &task);
    assert_eq!((a.robot.as_str(), a.start_s, a.travel_s), ("r2", 230.0, 30.0));
    assert_eq!(
        a.reason,
        "r2: named by the task, busy until 200.0 s, then 30.0 s from D to A"
    );
    let task = TaskNeeds {
        first_station: None,
        robot: Some("r9".into()),
    };
    let e = assign(&robots, &task, &line(), 0.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the task names robot `r9`, which is not one of the robots (r1, r2)"
    );
}

#[test]
fn without_a_first_station_the_first_free_robot_starts_at_once() {
    let robots = [robot("r1", "A", Some(120.0), 0), robot("r2", "D", None, 0)];
    let a = pick(&robots, &TaskNeeds::default());
    assert_eq!((a.robot.as_str(), a.start_s, a.travel_s), ("r2", 100.0, 0.0));
    assert_eq!(
        a.reason,
        "r2: free, no drive first (the task names no first station)"
    );
}

#[test]
fn robots_that_cannot_reach_the_first_station_are_left_out() {
    // X is reached from D only; nothing leaves X.
    let robots = [robot("r1", "X", None, 0), robot("r2", "A", Some(300.0), 0)];
    let a = pick(&robots, &to("B"));
    assert_eq!((a.robot.as_str(), a.start_s), ("r2", 310.0));
    let only_x = [robot("r1", "X", None, 0), robot("r3", "X", None, 0)];
    let e = assign(&only_x, &to("B"), &line(), 0.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no robot can reach B: r1: no route from X to B on line.yaml: no lane leads out of X; r3: no route \
         from X to B on line.yaml: no lane leads out of X"
    );
    let e = assign(&only_x, &to("Q"), &line(), 0.0).unwrap_err();
    assert!(
        matches!(&e, AssignError::Unreachable { station, .. } if station == "Q"),
        "{e}"
    );
    assert!(e.to_string().contains("`Q` is not a station of line.yaml"), "{e}");
    // A named robot that cannot get there is not given the task.
    let task = TaskNeeds {
        first_station: Some("B".into()),
        robot: Some("r1".into()),
    };
    assert!(matches!(
        assign(&robots, &task, &line(), 0.0),
        Err(AssignError::Unreachable { .. })
    ));
}

#[test]
fn bad_inputs_are_errors() {
    let map = line();
    assert_eq!(assign(&[], &to("A"), &map, 0.0), Err(AssignError::NoRobots));
    let robots = [robot("r1", "A", None, 0)];
    let e = assign(&robots, &to("A"), &map, f64::NAN).unwrap_err();
    assert_eq!(e.to_string(), "now is NaN s: a time must be a finite number");
    let robots = [robot("r1", "A", Some(f64::INFINITY), 0)];
    let e = assign(&robots, &to("A"), &map, 0.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "r1: busy_until_s is inf s: a time must be a finite number"
    );
}

/// A planner that counts its calls and knows only `plan`.
struct Counting<'a> {
    map: &'a StationMap,
    calls: Cell<usize>,
}

impl Planner for Counting<'_> {
    fn plan(&self, from: &str, to: &str) -> Result<PlannedRoute, RouteError> {
        self.calls.set(self.calls.get() + 1);
        self.map.plan(from, to)
    }
}

#[test]
fn any_planner_gives_the_same_choice_as_the_station_map() {
    let map = line();
    let counting = Counting {
        map: &map,
        calls: Cell::new(0),
    };
    let robots = [
        robot("r1", "A", None, 0),
        robot("r2", "C", Some(104.0), 0),
        robot("r3", "X", None, 0),
        robot("r4", "D", Some(101.0), 2),
    ];
    for station in ["A", "B", "C", "D", "X"] {
        let fast = assign(&robots, &to(station), &map, 100.0);
        let slow = assign(&robots, &to(station), &counting, 100.0);
        assert_eq!(fast, slow, "{station}");
    }
    assert_eq!(
        counting.calls.get(),
        5 * robots.len(),
        "the default: one plan per robot"
    );
}
