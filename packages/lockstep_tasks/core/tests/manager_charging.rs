//! Charging: a robot below `recharge_below`, or one that could not finish its next task above its reserve,
//! drives to the nearest free charger first and stays there, charging, until its battery holds `charge_to`;
//! its next task is then planned from the charger. A battery that does not rise fails the charging task; a
//! robot that cannot finish its task and finds every charger taken waits for one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/world.rs"]
mod world;

use lockstep_tasks::manager::charging::ChargePolicy;
use lockstep_tasks::manager::energy::{BatteryView, EnergyModel};
use lockstep_tasks::manager::{Command, Event, EventKind, GoalRequest, Manager, State};
use world::{go_to, on_map, Fake};

const CONFIG: &str = "\
levels: [task, action]
actuators:
  nav: {server: nav, type: x/action/Nav, goal: {route: route, speed_mps: speed}}
templates:
  go:
    level: task
    required: [to]
    parameters: {speed: 1.0}
    children: [{type: drive, parameters: {route: {from: \"{at}\", to: \"{to}\"}}}]
  charge:
    level: task
    required: [to]
    parameters: {speed: 1.0}
    children: [{type: drive, parameters: {route: {from: \"{at}\", to: \"{to}\"}}}]
  drive: {level: action, actuator: nav}
";

/// C1 (a charger) - A - M - B - C2 (a charger), 5 m apart; C1 is nearer to A.
const LINE: &str = "stations:
  C1: {x: 0.0, y: 0.0, charger: true}
  A: {x: 4.0, y: 0.0}
  M: {x: 9.0, y: 0.0}
  B: {x: 14.0, y: 0.0}
  C2: {x: 19.0, y: 0.0, charger: true}
lanes:
  - {from: C1, to: A, speed_limit_mps: 1.0}
  - {from: A, to: M, speed_limit_mps: 1.0}
  - {from: M, to: B, speed_limit_mps: 1.0}
  - {from: B, to: C2, speed_limit_mps: 1.0}
";

fn manager(robots: &[(&str, &str)]) -> Manager<Fake> {
    let mut m = on_map(CONFIG, LINE, robots);
    m.charging = Some(ChargePolicy::new(0.3, 0.9, "charge", 60.0));
    m.energy = Some(EnergyModel {
        drive_wh_per_m: 0.5,
        idle_w: 0.0,
        reserve_fraction: 0.2,
    });
    m
}

fn battery(m: &mut Manager<Fake>, now: f64, robot: &str, charge_wh: f64) -> Vec<Command<Fake>> {
    let battery = BatteryView {
        charge_wh,
        capacity_wh: 10.0,
    };
    let robot = robot.to_owned();
    m.handle(now, Event::Battery { robot, battery })
}

fn submit(m: &mut Manager<Fake>, request: u64, robot: &str, to: &str) -> (String, Vec<Command<Fake>>) {
    submit_goal(m, request, go_to(request, robot, to))
}

fn submit_goal(m: &mut Manager<Fake>, request: u64, goal: GoalRequest) -> (String, Vec<Command<Fake>>) {
    let now = m.now;
    let out = m.handle(now, Event::Goal { request, goal });
    let task = out
        .iter()
        .find_map(|c| match c {
            Command::AcceptGoal { task, .. } => Some(task.clone()),
            _ => None,
        })
        .expect("accepted");
    (task, out)
}

/// The goals sent: (task, leaf, generation, the route's stations as the goal's points' count, robot).
fn sent(out: &[Command<Fake>]) -> Vec<(String, usize, u64, String)> {
    out.iter()
        .filter_map(|c| match c {
            Command::SendGoal {
                task,
                leaf,
                generation,
                robot,
                ..
            } => Some((task.clone(), *leaf, *generation, robot.clone())),
            _ => None,
        })
        .collect()
}

/// The goal `(task, leaf, generation, robot)` accepted and ended well at `now`.
fn arrive(m: &mut Manager<Fake>, now: f64, goal: &(String, usize, u64, String)) -> Vec<Command<Fake>> {
    world::arrive(m, now, &goal.0, goal.1, goal.2)
}

fn statuses(out: &[Command<Fake>]) -> Vec<(String, String, String)> {
    out.iter()
        .filter_map(|c| match c {
            Command::Publish(e) if e.kind == EventKind::Status && e.new_status == "charging" => {
                Some((e.task_id.clone(), e.new_status.clone(), e.reason.clone()))
            }
            Command::Publish(e) if e.kind == EventKind::Finished => {
                Some((e.task_id.clone(), "finished".into(), e.reason.clone()))
            }
            _ => None,
        })
        .collect()
}

fn route_of(m: &Manager<Fake>, task: &str) -> Vec<String> {
    let tree = m.tasks[task].sched.tree();
    let leaf = tree.leaves().next().unwrap();
    let stations = tree.nodes[leaf].params["route_stations"].as_array().unwrap();
    stations.iter().map(|s| s.as_str().unwrap().to_owned()).collect()
}

#[test]
fn a_low_robot_charges_at_the_nearest_charger_before_its_task_and_then_goes_from_there() {
    let mut m = manager(&[("r1", "A")]);
    // Idle and low: it goes to charge at once, to C1 (4 m), not C2 (15 m); a transport sent meanwhile waits.
    let out = battery(&mut m, 0.0, "r1", 2.0);
    let (go, submitted) = submit(&mut m, 1, "r1", "B");
    assert!(sent(&submitted).is_empty());
    let first = sent(&out);
    assert_eq!(first.len(), 1, "{first:?}");
    let charge = first[0].0.clone();
    assert_ne!(charge, go);
    assert_eq!(m.tasks[&charge].task_type, "charge");
    assert_eq!(route_of(&m, &charge), ["A", "C1"]);
    assert_eq!(m.tasks[&go].state, State::Queued);
    // At the charger: the task stays running, charging, and says so.
    let out = arrive(&mut m, 4.0, &first[0]);
    assert_eq!(
        statuses(&out),
        [(
            charge.clone(),
            "charging".to_owned(),
            "at C1: 2.00 Wh, charging to 9.00 Wh".to_owned()
        )]
    );
    assert_eq!(m.listing().tasks[0].state, "charging");
    assert!(sent(&out).is_empty(), "nothing else goes while it charges");
    let out = battery(&mut m, 20.0, "r1", 6.0);
    assert!(statuses(&out).is_empty() && sent(&out).is_empty());
    // Charged: the charging task completes and the transport starts, planned from the charger.
    let out = battery(&mut m, 40.0, "r1", 9.0);
    assert_eq!(
        statuses(&out),
        [(charge.clone(), "finished".to_owned(), "completed".to_owned())]
    );
    assert_eq!(m.tasks[&go].state, State::Running);
    assert_eq!(route_of(&m, &go), ["C1", "A", "M", "B"]);
    assert_eq!(sent(&out).len(), 1);
}

#[test]
fn a_robot_that_could_not_finish_its_task_above_the_reserve_charges_first_far_enough() {
    let mut m = manager(&[("r1", "A")]);
    // 6 of 10 Wh is above 30 %, but A -> B is 10 m, 5 Wh: 1 Wh would be left, under the 2 Wh reserve.
    battery(&mut m, 0.0, "r1", 6.0);
    let (_, out) = submit(&mut m, 1, "r1", "B");
    let charge = sent(&out)[0].clone();
    let out = arrive(&mut m, 4.0, &charge);
    // Charged to 90 %, but no less than what the transport from the charger needs above the reserve:
    // the task is planned again from C1 (14 m, 7 Wh) only once it starts, so the figure is A's 5 Wh + 2 Wh.
    let (_, status, reason) = &statuses(&out)[0];
    assert_eq!(status, "charging");
    assert_eq!(reason, "at C1: 6.00 Wh, charging to 9.00 Wh");
    // A robot well charged goes at once.
    let mut m = manager(&[("r1", "A")]);
    battery(&mut m, 0.0, "r1", 9.5);
    let (go, out) = submit(&mut m, 1, "r1", "B");
    assert_eq!(sent(&out)[0].0, go);
}

#[test]
fn a_battery_that_does_not_rise_at_the_charger_fails_the_charging_task_and_the_next_one_goes() {
    let mut m = manager(&[("r1", "A")]);
    let out = battery(&mut m, 0.0, "r1", 2.0);
    let (go, _) = submit(&mut m, 1, "r1", "M");
    let charge = sent(&out)[0].clone();
    arrive(&mut m, 4.0, &charge);
    battery(&mut m, 30.0, "r1", 2.0);
    let out = battery(&mut m, 65.0, "r1", 2.0);
    let finished = statuses(&out);
    assert_eq!(finished[0].0, charge.0);
    assert_eq!(finished[0].2, "failed");
    let failed = m
        .listing()
        .tasks
        .iter()
        .find(|t| t.task_id == charge.0)
        .unwrap()
        .state
        .clone();
    assert_eq!(failed, "failed");
    // Not at C1 again, where the battery did not rise: the robot, still low, goes to charge at C2.
    let next = sent(&out);
    assert_eq!(next.len(), 1, "{next:?}");
    assert_ne!(next[0].0, go);
    assert_eq!(m.tasks[&next[0].0].parameters["to"], "C2");
}

#[test]
fn a_robot_that_cannot_finish_its_task_waits_while_no_charger_is_free() {
    let mut m = manager(&[("r1", "A"), ("r2", "C1"), ("r3", "C2")]);
    battery(&mut m, 0.0, "r1", 3.0);
    let (go, out) = submit(&mut m, 1, "r1", "B");
    assert!(sent(&out).is_empty(), "{:?}", sent(&out));
    assert_eq!(m.tasks[&go].state, State::Queued);
    let warned: Vec<&String> = (out.iter())
        .filter_map(|c| match c {
            Command::Log(_, line) => Some(line),
            _ => None,
        })
        .filter(|l| l.contains("no charger is free"))
        .collect();
    assert_eq!(
        warned,
        [
            "r1: battery 3.00 of 10.00 Wh, 5.00 Wh needed for its next task above a 2.00 Wh reserve, \
          no charger is free: the task waits for one"
        ]
    );
    // r2 leaves C1: r1 goes to charge there.
    m.robots.get_mut("r2").unwrap().station = Some("M".into());
    let out = battery(&mut m, 1.0, "r1", 3.0);
    let sent = sent(&out);
    assert_eq!(sent.len(), 1);
    assert_eq!(m.tasks[&sent[0].0].parameters["to"], "C1");
}

#[test]
fn a_task_goes_to_a_robot_that_need_not_charge_first_when_that_is_sooner() {
    // r1 stands at A, where the task starts, but is low: it would charge first (7 Wh at a full charge per
    // hour: 2,520 s). r2, 10 m away and full, starts sooner.
    let mut m = manager(&[("r1", "A"), ("r2", "B")]);
    battery(&mut m, 0.0, "r1", 2.0);
    battery(&mut m, 0.0, "r2", 10.0);
    let goal = GoalRequest {
        parameters_json: "{\"from\": \"A\", \"to\": \"M\"}".into(),
        ..go_to(1, "", "M")
    };
    let (task, _) = submit_goal(&mut m, 1, goal);
    assert_eq!(m.tasks[&task].robot, "r2");
    // Both full: r1, at A already, takes the next one.
    let mut m = manager(&[("r1", "A"), ("r2", "B")]);
    battery(&mut m, 0.0, "r1", 10.0);
    battery(&mut m, 0.0, "r2", 10.0);
    let goal = GoalRequest {
        parameters_json: "{\"from\": \"A\", \"to\": \"M\"}".into(),
        ..go_to(1, "", "M")
    };
    let (task, _) = submit_goal(&mut m, 1, goal);
    assert_eq!(m.tasks[&task].robot, "r1");
}
