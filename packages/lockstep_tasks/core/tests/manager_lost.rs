//! A robot whose actuators stop answering for robot_timeout_s is lost: its running task's goal fails (no
//! retry here, so the task fails), its queued tasks that did not name it run on the other robot, it takes no
//! new task, and it rejoins when its actuators are heard again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/world.rs"]
mod world;

use lockstep_tasks::manager::{Command, Environment, Event, GoalRequest, Manager, State};
use lockstep_tasks::robots::Robot;
use world::{fake_fleet, Fake, CONFIG};

fn fleet() -> Manager<Fake> {
    let mut m = Manager::new(fake_fleet(CONFIG, &["r1", "r2"]), Environment::new(Vec::new()));
    m.robots = ["r1", "r2"]
        .into_iter()
        .map(|name| {
            (
                name.to_owned(),
                Robot {
                    name: name.to_owned(),
                    station: None,
                },
            )
        })
        .collect();
    m.robot_timeout_s = Some(5.0);
    m
}

fn heard(m: &mut Manager<Fake>, now: f64, robots: &[&str]) -> Vec<Command<Fake>> {
    let mut out = Vec::new();
    for robot in robots {
        for actuator in ["arm", "nav"] {
            let state = Event::ActuatorState {
                server: format!("/{robot}/{actuator}"),
                busy: false,
                remaining_s: 0.0,
            };
            out.extend(m.handle(now, state));
        }
    }
    out
}

fn submit(m: &mut Manager<Fake>, request: u64, robot: &str) -> String {
    let goal = GoalRequest {
        uuid: format!("g{request}"),
        task_type: "job".into(),
        robot: robot.into(),
        ..GoalRequest::default()
    };
    let now = m.now;
    let out = m.handle(now, Event::Goal { request, goal });
    out.iter()
        .find_map(|c| match c {
            Command::AcceptGoal { task, .. } => Some(task.clone()),
            _ => None,
        })
        .expect("accepted")
}

fn robot_state(m: &Manager<Fake>, robot: &str) -> String {
    m.listing()
        .robots
        .iter()
        .find(|r| r.name == robot)
        .unwrap()
        .state
        .clone()
}

#[test]
fn a_silent_robot_is_lost_its_queued_tasks_move_and_it_rejoins_when_heard() {
    let mut m = fleet();
    heard(&mut m, 0.0, &["r1", "r2"]);
    let first = submit(&mut m, 1, "");
    let second = submit(&mut m, 2, "");
    let third = submit(&mut m, 3, "");
    let named = submit(&mut m, 4, "r2");
    assert_eq!(
        [&first, &second, &third, &named].map(|t| m.tasks[t.as_str()].robot.clone()),
        ["r1", "r2", "r1", "r2"],
        "spread by queue length"
    );
    assert_eq!(m.tasks[&second].state, State::Running);
    // r1 keeps answering; r2 goes silent.
    let mut out = Vec::new();
    for t in 1..=6 {
        out.extend(heard(&mut m, t as f64, &["r1"]));
    }
    assert_eq!(robot_state(&m, "r2"), "lost");
    assert_eq!(robot_state(&m, "r1"), "busy");
    let logs: Vec<String> = (out.iter())
        .filter_map(|c| match c {
            Command::Log(_, line) => Some(line.clone()),
            _ => None,
        })
        .collect();
    assert!(
        logs.iter()
            .any(|l| l.starts_with("robot `r2` lost: its actuators (/r2/arm, /r2/nav) silent for 6.0 s")),
        "{logs:?}"
    );
    // Its running task failed (the job has no retry), its queued task that did not name it moved to r1, the
    // one that named it stays.
    assert!(
        matches!(m.tasks[&second].state, State::Finished(_)),
        "{:?}",
        m.tasks[&second].state
    );
    assert_eq!(m.tasks[&named].robot, "r2");
    assert_eq!(m.tasks[&named].state, State::Queued);
    // A new task goes to r1 while r2 is lost.
    let fifth = submit(&mut m, 5, "");
    assert_eq!(m.tasks[&fifth].robot, "r1");
    // r2 is heard again: it rejoins and starts the task that named it.
    heard(&mut m, 7.0, &["r1", "r2"]);
    assert_eq!(robot_state(&m, "r2"), "busy");
    assert_eq!(m.tasks[&named].state, State::Running);
}

#[test]
fn the_queued_task_of_a_lost_robot_moves_to_the_one_that_answers() {
    let mut m = fleet();
    heard(&mut m, 0.0, &["r1", "r2"]);
    let tasks: Vec<String> = (1..=4).map(|k| submit(&mut m, k, "")).collect();
    let on_r2: Vec<&String> = tasks
        .iter()
        .filter(|t| m.tasks[t.as_str()].robot == "r2")
        .collect();
    assert_eq!(on_r2.len(), 2);
    for t in 1..=6 {
        heard(&mut m, t as f64, &["r1"]);
    }
    // The running one failed; the queued one is r1's now.
    let queued = on_r2[1];
    assert_eq!(m.tasks[queued.as_str()].robot, "r1");
    assert_eq!(m.tasks[queued.as_str()].parameters["robot"], "r1");
}
