//! Which robot takes a task. A task that names a robot goes to that robot. Otherwise it goes to the robot
//! that can start it soonest: a free robot starts after driving from its station to the task's first
//! station; a busy one when its work is done, then the same drive (from the station where it will be then).
//! Equal starts go to a free robot, then to the one with fewer tasks queued, then to the first name. Robots
//! that cannot reach the first station are left out (a named one that cannot is an error). Pure: the caller
//! says where each robot is and until when it is busy.

use crate::routes::{Planner, RouteError};

/// What the assignment knows of one robot.
#[derive(Debug, Clone, PartialEq)]
pub struct RobotView {
    pub name: String,
    /// Where it is, or, when busy, where it will be once its work is done.
    pub station: String,
    /// When its work is done (s, on the caller's clock); `None`: free now.
    pub busy_until_s: Option<f64>,
    /// Tasks waiting for it.
    pub queued: usize,
}

/// What a task asks of its robot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskNeeds {
    /// The station its first drive starts from (where the robot must go first); `None`: anywhere.
    pub first_station: Option<String>,
    /// The robot the task names, if it names one.
    pub robot: Option<String>,
}

/// The robot chosen, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    pub robot: String,
    /// When it can start the task (s, on the caller's clock).
    pub start_s: f64,
    /// Its drive to the task's first station (s).
    pub travel_s: f64,
    /// For the log, e.g. `robot2: free, 4.1 s from C to A`.
    pub reason: String,
}

/// Why no robot can take a task.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AssignError {
    #[error("no robots to assign the task to")]
    NoRobots,
    #[error("the task names robot `{name}`, which is not one of the robots ({robots})")]
    UnknownRobot { name: String, robots: String },
    #[error("no robot can reach {station}: {reasons}")]
    Unreachable { station: String, reasons: String },
    #[error("{what} is {value} s: a time must be a finite number")]
    InvalidTime { what: String, value: f64 },
}

/// Choose the robot for `task` at time `now_s`, with `planner` for the drives to its first station.
pub fn assign(
    robots: &[RobotView],
    task: &TaskNeeds,
    planner: &dyn Planner,
    now_s: f64,
) -> Result<Assignment, AssignError> {
    check_times(robots, now_s)?;
    if robots.is_empty() {
        return Err(AssignError::NoRobots);
    }
    let candidates = candidates(robots, task)?;
    let travel: Vec<Result<f64, RouteError>> = match &task.first_station {
        Some(station) => {
            let from: Vec<&str> = candidates.iter().map(|r| r.station.as_str()).collect();
            planner.travel_times(&from, station)
        }
        None => vec![Ok(0.0); candidates.len()],
    };
    let (best, refused) = soonest(candidates, travel, now_s);
    let Some((key, robot, start_s, travel_s)) = best else {
        return Err(unreachable(task, refused));
    };
    Ok(Assignment {
        robot: robot.name.clone(),
        start_s,
        travel_s,
        reason: reason(robot, task, key, travel_s, now_s),
    })
}

/// The clock and every robot's busy time are finite.
fn check_times(robots: &[RobotView], now_s: f64) -> Result<(), AssignError> {
    if !now_s.is_finite() {
        return Err(AssignError::InvalidTime {
            what: "now".into(),
            value: now_s,
        });
    }
    if let Some((r, value)) = robots
        .iter()
        .find_map(|r| r.busy_until_s.filter(|b| !b.is_finite()).map(|b| (r, b)))
    {
        return Err(AssignError::InvalidTime {
            what: format!("{}: busy_until_s", r.name),
            value,
        });
    }
    Ok(())
}

/// The robots that may take the task: the one it names, or all of them.
fn candidates<'a>(robots: &'a [RobotView], task: &TaskNeeds) -> Result<Vec<&'a RobotView>, AssignError> {
    Ok(match &task.robot {
        Some(name) => {
            let named = robots.iter().find(|r| &r.name == name);
            vec![named.ok_or_else(|| AssignError::UnknownRobot {
                name: name.clone(),
                robots: robots
                    .iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?]
        }
        None => robots.iter().collect(),
    })
}

/// The best candidate so far: its key, the robot, its start and its drive time.
type Best<'a> = Option<(Key, &'a RobotView, f64, f64)>;

/// The candidate that can start soonest (ties broken by [`Key`], then the name), given each one's drive time
/// to the first station; and the reasons of those that cannot reach it.
fn soonest<'a>(
    candidates: Vec<&'a RobotView>,
    travel: Vec<Result<f64, RouteError>>,
    now_s: f64,
) -> (Best<'a>, Vec<String>) {
    let mut best: Best<'a> = None;
    let mut refused = Vec::new();
    for (robot, travel) in candidates.into_iter().zip(travel) {
        let travel_s = match travel {
            Ok(t) => t,
            Err(e) => {
                refused.push(format!("{}: {e}", robot.name));
                continue;
            }
        };
        let free_at = free_at_of(robot, now_s);
        let start_s = free_at + travel_s;
        let key = Key {
            start_us: (start_s * 1e6).round() as i64,
            busy: free_at > now_s,
            queued: robot.queued,
        };
        let better = match &best {
            None => true,
            Some((k, r, ..)) => (key, &robot.name) < (*k, &r.name),
        };
        if better {
            best = Some((key, robot, start_s, travel_s));
        }
    }
    (best, refused)
}

/// No candidate reaches the first station: the first three reasons, and how many more there were.
fn unreachable(task: &TaskNeeds, mut refused: Vec<String>) -> AssignError {
    let station = task.first_station.clone().unwrap_or_default();
    let more = refused.len().saturating_sub(3);
    refused.truncate(3);
    if more > 0 {
        refused.push(format!("and {more} more"));
    }
    AssignError::Unreachable {
        station,
        reasons: refused.join("; "),
    }
}

/// Why `robot` was chosen, for the log (`robot2: free, 4.1 s from C to A`).
fn reason(robot: &RobotView, task: &TaskNeeds, key: Key, travel_s: f64, now_s: f64) -> String {
    let mut reason = format!("{}: ", robot.name);
    if task.robot.is_some() {
        reason.push_str("named by the task, ");
    }
    if key.busy {
        reason.push_str(&format!("busy until {:.1} s, then ", free_at_of(robot, now_s)));
    } else {
        reason.push_str("free, ");
    }
    match &task.first_station {
        Some(to) if *to == robot.station => reason.push_str(&format!("already at {to}")),
        Some(to) => reason.push_str(&format!("{travel_s:.1} s from {} to {to}", robot.station)),
        None => reason.push_str("no drive first (the task names no first station)"),
    }
    reason
}

/// How robots compare: the start (to the microsecond, so that rounding in sums of lane times decides no
/// tie), a free robot before a busy one, then fewer tasks queued; the name last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    start_us: i64,
    busy: bool,
    queued: usize,
}

fn free_at_of(robot: &RobotView, now_s: f64) -> f64 {
    robot.busy_until_s.map_or(now_s, |b| b.max(now_s))
}
