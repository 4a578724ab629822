//! A task manager driven in-process: fake actuators that accept, run and end goals when the test says so, and
//! a record of every command the manager gave.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::rc::Rc;

use lockstep_tasks::manager::{Command, Environment, Event, GoalRequest, Manager, State, Unchecked};
use lockstep_tasks::robots::Robot;
use lockstep_tasks::{Config, Id, Outcome, StationMap};

/// Two actions per `job` (a pick on the arm, then a drive); `flaky` is a pick tried once more after a failure.
pub const CONFIG: &str = "\
levels: [task, action]
actuators:
  arm: {server: arm, type: x/action/Arm}
  nav: {server: nav, type: x/action/Nav}
templates:
  job:
    level: task
    children:
      - {type: pick}
      - {type: drive}
  flaky:
    level: task
    children:
      - type: pick
        retry: {attempts: 1}
  pick: {level: action, actuator: arm}
  drive: {level: action, actuator: nav}
";

/// The setup of these tests: goals are not type-checked.
pub type Fake = Unchecked;

pub fn fake() -> Rc<Fake> {
    let config = Config::parse("test.yaml", CONFIG).unwrap_or_else(|e| panic!("{e}"));
    Rc::new(Unchecked::fleet(config, &[""]))
}

/// A setup of the configuration `text` whose actuators are served on every robot of `robots`, at
/// `/<robot>/<server>`.
pub fn fake_fleet(text: &str, robots: &[&str]) -> Rc<Fake> {
    let config = Config::parse("fleet.yaml", text).unwrap_or_else(|e| panic!("{e}"));
    Rc::new(Unchecked::fleet(config, robots))
}

/// A manager of the configuration `text` on the station map `map`, with `robots` (name, start station).
pub fn on_map(text: &str, map: &str, robots: &[(&str, &str)]) -> Manager<Fake> {
    let names: Vec<&str> = robots.iter().map(|(r, _)| *r).collect();
    let mut m = Manager::new(fake_fleet(text, &names), Environment::new(Vec::new()));
    m.map = Some(StationMap::parse("map.yaml", map).unwrap_or_else(|e| panic!("{e}")));
    m.robots = (robots.iter())
        .map(|(name, at)| {
            let robot = Robot {
                name: (*name).to_owned(),
                station: Some((*at).to_owned()),
            };
            ((*name).to_owned(), robot)
        })
        .collect();
    m
}

/// An ExecuteTask goal of the task type `go` to station `to`, naming `robot` ("" for none).
pub fn go_to(request: u64, robot: &str, to: &str) -> GoalRequest {
    GoalRequest {
        uuid: format!("g{request}"),
        task_type: "go".into(),
        parameters_json: format!("{{\"to\": \"{to}\"}}"),
        robot: robot.into(),
        ..GoalRequest::default()
    }
}

/// The goal of `task`'s `leaf` (its `generation`) accepted and ended well at `now`: what the manager did
/// then.
pub fn arrive(m: &mut Manager<Fake>, now: f64, task: &str, leaf: Id, generation: u64) -> Vec<Command<Fake>> {
    let task = task.to_owned();
    let accepted = Event::Accepted {
        task: task.clone(),
        leaf,
        generation,
        goal_id: [1; 16],
    };
    let mut out = m.handle(now, accepted);
    let done = Event::Done {
        task,
        leaf,
        generation,
        success: true,
        message: String::new(),
    };
    out.extend(m.handle(now, done));
    out
}

/// A goal out on an actuator.
#[derive(Debug, Clone, PartialEq)]
pub struct Out {
    pub task: String,
    pub leaf: Id,
    pub generation: u64,
    pub actuator: String,
    pub accepted: bool,
    pub cancelled: bool,
}

pub struct World {
    pub manager: Manager<Fake>,
    pub now: f64,
    /// Every command given so far.
    pub log: Vec<Command<Fake>>,
    /// Goals sent and not yet ended.
    pub out: Vec<Out>,
    pub next_request: u64,
    /// Request -> the task it was accepted as.
    pub accepted: BTreeMap<u64, String>,
    /// Whether a goal was sent to an actuator that still ran one.
    pub doubled: Vec<String>,
}

impl World {
    pub fn new() -> Self {
        let mut env = Environment::new(Vec::new());
        // Cancelled goals always end in these tests: an actuator never takes a goal before that.
        env.drain_timeout_s = 1e9;
        Self {
            manager: Manager::new(fake(), env),
            now: 0.0,
            log: Vec::new(),
            out: Vec::new(),
            next_request: 0,
            accepted: BTreeMap::new(),
            doubled: Vec::new(),
        }
    }

    /// Handle `event` now; the commands it gave.
    pub fn event(&mut self, event: Event<Fake>) -> Vec<usize> {
        let commands = self.manager.handle(self.now, event);
        let first = self.log.len();
        for c in commands {
            match &c {
                Command::SendGoal {
                    task,
                    leaf,
                    generation,
                    actuator,
                    ..
                } => {
                    if self.out.iter().any(|o| o.actuator == *actuator) {
                        self.doubled.push(format!("{task} {actuator} at {}", self.now));
                    }
                    self.out.push(Out {
                        task: task.clone(),
                        leaf: *leaf,
                        generation: *generation,
                        actuator: actuator.clone(),
                        accepted: false,
                        cancelled: false,
                    });
                }
                Command::CancelGoal { task, generation } => {
                    for o in self.out.iter_mut() {
                        if o.task == *task && o.generation == *generation {
                            o.cancelled = true;
                        }
                    }
                }
                Command::AcceptGoal { request, task } => {
                    self.accepted.insert(*request, task.clone());
                }
                _ => {}
            }
            self.log.push(c);
        }
        (first..self.log.len()).collect()
    }

    pub fn tick(&mut self, dt: f64) {
        self.now += dt;
        self.event(Event::Tick);
    }

    /// Ask for a task; its id if accepted.
    pub fn submit(&mut self, task_type: &str, priority: i32) -> Option<String> {
        self.next_request += 1;
        let request = self.next_request;
        let goal = GoalRequest {
            uuid: format!("goal-{request}"),
            task_type: task_type.into(),
            priority,
            ..GoalRequest::default()
        };
        self.event(Event::Goal { request, goal });
        self.accepted.get(&request).cloned()
    }

    /// The actuator accepts goal `i` of [`Self::out`].
    pub fn accept(&mut self, i: usize) {
        let o = self.out[i].clone();
        self.out[i].accepted = true;
        self.event(Event::Accepted {
            task: o.task,
            leaf: o.leaf,
            generation: o.generation,
            goal_id: [o.generation as u8; 16],
        });
    }

    /// Goal `i` of [`Self::out`] ends.
    pub fn end(&mut self, i: usize, success: bool) {
        let o = self.out.remove(i);
        self.event(Event::Done {
            task: o.task,
            leaf: o.leaf,
            generation: o.generation,
            success,
            message: if success { "" } else { "it broke" }.into(),
        });
    }

    /// The goal out on `actuator`, accepted and run to its end.
    pub fn run(&mut self, actuator: &str, success: bool) {
        let i = (self.out.iter().position(|o| o.actuator == actuator))
            .unwrap_or_else(|| panic!("no goal on {actuator}: {:?}", self.out));
        if !self.out[i].accepted {
            self.accept(i);
        }
        self.end(i, success);
    }

    /// The actuators with a goal out, in the order sent.
    pub fn busy(&self) -> Vec<String> {
        self.out
            .iter()
            .map(|o| format!("{} {}", o.task, o.actuator))
            .collect()
    }

    pub fn state(&self, task: &str) -> State {
        self.manager.tasks[task].state.clone()
    }

    /// How each task ended, in the order they did.
    pub fn finished(&self) -> Vec<(String, Outcome)> {
        (self.log.iter())
            .filter_map(|c| match c {
                Command::Finish { task, outcome, .. } => Some((task.clone(), outcome.clone())),
                _ => None,
            })
            .collect()
    }

    /// The answers to requests.
    pub fn replies(&self) -> Vec<Result<String, String>> {
        (self.log.iter())
            .filter_map(|c| match c {
                Command::Reply { answer, .. } => Some(answer.clone()),
                _ => None,
            })
            .collect()
    }
}
