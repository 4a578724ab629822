//! The manager on a shared floor: two robots sent head-on through a one-lane aisle. Each drive holds the
//! lanes and stations ahead before it goes; the robot whose way is held waits (the event names the holder);
//! the two waiting on each other are a deadlock, broken by one stepping aside to the free side station; both
//! arrive, and no station or lane is ever held by both.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/world.rs"]
mod world;

use std::collections::BTreeMap;

use lockstep_tasks::manager::{Command, Environment, Event, EventKind, GoalRequest, Manager};
use lockstep_tasks::robots::Robot;
use lockstep_tasks::StationMap;
use world::{fake_fleet, Fake};

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
const MAP: &str = "stations:
  W: {x: 0.0, y: 0.0}
  M: {x: 5.0, y: 0.0}
  E: {x: 10.0, y: 0.0}
  S: {x: 5.0, y: 3.0}
lanes:
  - {from: W, to: M, speed_limit_mps: 1.0, narrow: true}
  - {from: M, to: E, speed_limit_mps: 1.0, narrow: true}
  - {from: M, to: S, speed_limit_mps: 1.0}
";

/// A goal out: (task, leaf, generation, robot, route stations).
type Sent = (String, usize, u64, String, Vec<String>);

fn manager() -> Manager<Fake> {
    let mut m = Manager::new(fake_fleet(CONFIG, &["r1", "r2"]), Environment::new(Vec::new()));
    m.map = Some(StationMap::parse("map.yaml", MAP).unwrap());
    m.robots = [("r1", "W"), ("r2", "E")]
        .into_iter()
        .map(|(name, at)| {
            let robot = Robot {
                name: name.to_owned(),
                station: Some(at.to_owned()),
            };
            (name.to_owned(), robot)
        })
        .collect();
    m
}

fn sent_and_waits(commands: &[Command<Fake>], sent: &mut Vec<Sent>, waits: &mut Vec<(String, String)>) {
    for c in commands {
        match c {
            Command::SendGoal {
                task,
                leaf,
                generation,
                robot,
                goal,
                ..
            } => {
                let stations = goal["route"].as_array().unwrap().len();
                sent.push((
                    task.clone(),
                    *leaf,
                    *generation,
                    robot.clone(),
                    vec![String::new(); stations],
                ));
            }
            Command::Publish(e) if e.kind == EventKind::Waiting => {
                waits.push((e.robot.clone(), e.reason.clone()))
            }
            _ => {}
        }
    }
}

#[test]
fn head_on_in_a_one_lane_aisle_one_robot_waits_then_steps_aside_and_both_arrive() {
    let mut m = manager();
    let (mut sent, mut waits) = (Vec::new(), Vec::new());
    let mut now = 0.0;
    for (request, (robot, to)) in [("r1", "E"), ("r2", "W")].into_iter().enumerate() {
        let goal = GoalRequest {
            uuid: format!("g{request}"),
            task_type: "go".into(),
            parameters_json: format!("{{\"to\": \"{to}\"}}"),
            robot: robot.into(),
            ..GoalRequest::default()
        };
        let out = m.handle(
            now,
            Event::Goal {
                request: request as u64,
                goal,
            },
        );
        sent_and_waits(&out, &mut sent, &mut waits);
    }
    // r1 holds W -> M and drives there; r2 waits at E for M, which r1 holds.
    assert_eq!(
        sent.iter().map(|s| (s.3.as_str(), s.4.len())).collect::<Vec<_>>(),
        [("r1", 2)]
    );
    assert_eq!(
        waits,
        [(
            "r2".to_owned(),
            "waiting at E for station M, held by r1".to_owned()
        )]
    );
    let mut done = BTreeMap::new();
    let mut steps = 0;
    // Each goal out ends well, one at a time, oldest first, until nothing is out.
    while let Some(goal) = sent.first().cloned() {
        sent.remove(0);
        steps += 1;
        assert!(steps < 20, "the robots never arrive: {waits:?}");
        let floor = m.floor.as_ref().unwrap();
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for held in floor.traffic.held().robots.values() {
            for resource in held {
                *count.entry(resource.to_string()).or_default() += 1;
            }
        }
        assert!(count.values().all(|&n| n == 1), "held twice: {count:?}");
        now += 1.0;
        let accept = Event::Accepted {
            task: goal.0.clone(),
            leaf: goal.1,
            generation: goal.2,
            goal_id: [0; 16],
        };
        m.handle(now, accept);
        let out = m.handle(
            now,
            Event::Done {
                task: goal.0.clone(),
                leaf: goal.1,
                generation: goal.2,
                success: true,
                message: String::new(),
            },
        );
        sent_and_waits(&out, &mut sent, &mut waits);
        for c in &out {
            if let Command::Finish { task, outcome, .. } = c {
                done.insert(task.clone(), format!("{outcome:?}"));
            }
        }
    }
    assert_eq!(done.len(), 2, "both tasks end: {done:?} {waits:?}");
    assert!(done.values().all(|o| o.contains("Completed")), "{done:?}");
    let stations: Vec<_> = m.robots.values().map(|r| r.station.clone().unwrap()).collect();
    assert_eq!(stations, ["E", "W"], "each robot at its destination");
    assert!(
        waits
            .iter()
            .any(|(r, why)| r == "r1" && why.contains("steps aside from M to S")),
        "the cycle is broken by r1 stepping aside: {waits:?}"
    );
}
