//! Fleet throughput on the shipped warehouse map: N simulated robots each kept busy with transports between
//! random stations for one simulated hour, the task manager's reservations on and off. Each robot drives its
//! goal's route at the route's speed; a goal ends when the drive would. Reported per fleet size: tasks done
//! per hour, how often two robots came within 0.5 m (sampled every 0.1 s), the mean time a task spent with
//! its robot standing for a held lane or station, and the manager's time per new task (assignment,
//! decomposition, route planning); each the mean of five task seeds. The manager is ticked every simulated
//! second, as the node ticks it, and plans around a held station after the node's default
//! `replan_after_s`. Everything is seeded: the same run gives the same figures.
//!
//!   cargo bench -p lockstep_tasks --bench fleet [-- ROBOTS...]     (default: 3 6 10)

use std::collections::{BTreeMap, BinaryHeap};
use std::rc::Rc;
use std::time::Instant;

use lockstep_tasks::manager::{Command, Environment, Event, GoalRequest, Manager, Unchecked};
use lockstep_tasks::robots::Robot;
use lockstep_tasks::{Config, StationMap};

const CONFIG: &str = "levels: [task, message, action]
actuators:
  navigation: {server: navigate, type: lockstep_interfaces/action/Navigate, goal: {route: route, speed_mps: speed}}
templates:
  go:
    level: task
    required: [from, to]
    children:
      - {type: leg, parameters: {route: {from: \"{at}\", to: \"{from}\"}}}
      - {type: leg, parameters: {route: {from: \"{from}\", to: \"{to}\"}}}
  leg: {level: message, children: [{type: drive}]}
  drive: {level: action, actuator: navigation}
";
const HOUR_S: f64 = 3600.0;
const CLOSE_M: f64 = 0.5;
const SAMPLE_S: f64 = 0.1;
/// Simulated seconds between two ticks of the manager.
const TICK_S: f64 = 1.0;
/// The task manager's default `replan_after_s`.
const REPLAN_AFTER_S: f64 = 10.0;

/// A seeded generator (64-bit LCG): the same stations every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

/// A goal out: when it ends, and the task, leaf and generation to tell the manager.
#[derive(PartialEq)]
struct Ends(f64, String, usize, u64);

impl Eq for Ends {}
impl PartialOrd for Ends {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ends {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Earliest first (BinaryHeap is a max-heap), then by task for a fixed order.
        (other.0.total_cmp(&self.0)).then_with(|| other.1.cmp(&self.1))
    }
}

/// A robot's drives: (start s, end s, points), in order.
type Track = Vec<(f64, f64, Vec<[f64; 2]>)>;

fn position(track: &Track, t: f64, start: [f64; 2]) -> [f64; 2] {
    let mut at = start;
    for (t0, t1, points) in track {
        if t < *t0 {
            break;
        }
        let Some(last) = points.last() else { continue };
        if t >= *t1 || points.len() < 2 {
            at = *last;
            continue;
        }
        // Along the polyline at constant speed.
        let lengths: Vec<f64> = points
            .windows(2)
            .map(|w| (w[1][0] - w[0][0]).hypot(w[1][1] - w[0][1]))
            .collect();
        let total: f64 = lengths.iter().sum();
        let mut along = total * (t - t0) / (t1 - t0);
        for (w, len) in points.windows(2).zip(&lengths) {
            if along <= *len && *len > 0.0 {
                let f = along / len;
                return [
                    w[0][0] + f * (w[1][0] - w[0][0]),
                    w[0][1] + f * (w[1][1] - w[0][1]),
                ];
            }
            along -= len;
        }
        at = *last;
    }
    at
}

struct Figures {
    tasks_per_hour: f64,
    close_encounters: f64,
    waiting_s_per_task: f64,
    assign_us: f64,
}

/// Runs with this many task seeds, their figures averaged: one seed's hour swings with where the first
/// robots happen to meet.
const SEEDS: u64 = 5;

fn mean(runs: impl Iterator<Item = Figures>) -> Figures {
    let runs: Vec<Figures> = runs.collect();
    let n = runs.len().max(1) as f64;
    let avg = |f: fn(&Figures) -> f64| runs.iter().map(f).sum::<f64>() / n;
    Figures {
        tasks_per_hour: avg(|f| f.tasks_per_hour),
        close_encounters: avg(|f| f.close_encounters),
        waiting_s_per_task: avg(|f| f.waiting_s_per_task),
        assign_us: avg(|f| f.assign_us),
    }
}

fn run(map: &StationMap, robots: usize, reservations: bool, seed: u64) -> Figures {
    let config = Config::parse("fleet.yaml", CONFIG).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = (1..=robots).map(|k| format!("robot{k}")).collect();
    let robot_names: Vec<&str> = names.iter().map(String::as_str).collect();
    let setup = Unchecked::fleet(config, &robot_names);
    let mut m = Manager::new(Rc::new(setup), Environment::new(Vec::new()));
    let stations: Vec<String> = map.stations().map(|(s, _)| s.to_owned()).collect();
    m.map = Some(map.clone());
    m.reservations = reservations;
    m.replan_after_s = Some(REPLAN_AFTER_S);
    m.robots = (names.iter().enumerate())
        .map(|(k, name)| {
            let station = Some(stations[k % stations.len()].clone());
            (
                name.clone(),
                Robot {
                    name: name.clone(),
                    station,
                },
            )
        })
        .collect();
    let starts: BTreeMap<String, [f64; 2]> = (m.robots.values())
        .filter_map(|r| Some((r.name.clone(), map.position(r.station.as_deref()?)?)))
        .collect();
    let mut rng = Lcg(seed);
    let mut ends = BinaryHeap::new();
    let mut tracks: BTreeMap<String, Track> = BTreeMap::new();
    let (mut done, mut request, mut assign_s) = (0usize, 0u64, Vec::new());
    let mut now = 0.0;
    loop {
        // Two tasks per robot waiting or running at all times.
        let unfinished = m.tasks.values().filter(|t| !t.is_finished()).count();
        let mut commands = Vec::new();
        for _ in unfinished..2 * robots {
            let from = &stations[rng.below(stations.len())];
            let to = &stations[rng.below(stations.len())];
            let goal = GoalRequest {
                uuid: format!("g{request}"),
                task_type: "go".into(),
                parameters_json: format!("{{\"from\": \"{from}\", \"to\": \"{to}\"}}"),
                ..GoalRequest::default()
            };
            let clock = Instant::now();
            commands.extend(m.handle(now, Event::Goal { request, goal }));
            assign_s.push(clock.elapsed().as_secs_f64());
            request += 1;
        }
        for c in commands {
            note(c, now, &mut ends, &mut tracks, &mut done);
        }
        // The node ticks its manager as time passes (waits time out, robots plan around what holds them up):
        // a tick every second of simulated time between goal ends.
        let next_end = ends.peek().map_or(f64::INFINITY, |e: &Ends| e.0);
        let next_tick = (now + TICK_S).floor();
        if next_tick < next_end {
            if next_tick > HOUR_S {
                break;
            }
            now = next_tick;
            for c in m.handle(now, Event::Tick) {
                note(c, now, &mut ends, &mut tracks, &mut done);
            }
            continue;
        }
        let Some(Ends(t, task, leaf, generation)) = ends.pop() else {
            break;
        };
        if t > HOUR_S {
            break;
        }
        now = t;
        let accepted = m.handle(
            now,
            Event::Accepted {
                task: task.clone(),
                leaf,
                generation,
                goal_id: [0; 16],
            },
        );
        let out = accepted.into_iter().chain(m.handle(
            now,
            Event::Done {
                task,
                leaf,
                generation,
                success: true,
                message: String::new(),
            },
        ));
        for c in out {
            note(c, now, &mut ends, &mut tracks, &mut done);
        }
    }
    let waiting_s = waiting_time(&tracks);
    let mut close = 0;
    let names: Vec<&String> = tracks.keys().collect();
    let mut t = 0.0;
    while t < now {
        let at: Vec<[f64; 2]> = names
            .iter()
            .map(|r| position(&tracks[*r], t, starts[*r]))
            .collect();
        for i in 0..at.len() {
            for j in i + 1..at.len() {
                if (at[i][0] - at[j][0]).hypot(at[i][1] - at[j][1]) < CLOSE_M {
                    close += 1;
                }
            }
        }
        t += SAMPLE_S;
    }
    assign_s.sort_by(f64::total_cmp);
    Figures {
        tasks_per_hour: done as f64,
        close_encounters: close as f64,
        waiting_s_per_task: waiting_s / done.max(1) as f64,
        assign_us: assign_s.get(assign_s.len() / 2).copied().unwrap_or(0.0) * 1e6,
    }
}

/// Seconds between one drive of a robot ending and its next starting, summed, when the next one belongs to a
/// drive already under way (a stretch after a wait).
fn waiting_time(tracks: &BTreeMap<String, Track>) -> f64 {
    tracks
        .values()
        .flat_map(|track| track.windows(2))
        .filter(|w| w[0].2.last() == w[1].2.first() && w[1].0 > w[0].1)
        .map(|w| w[1].0 - w[0].1)
        .sum()
}

fn note(
    command: Command<Unchecked>,
    now: f64,
    ends: &mut BinaryHeap<Ends>,
    tracks: &mut BTreeMap<String, Track>,
    done: &mut usize,
) {
    match command {
        Command::SendGoal {
            task,
            leaf,
            generation,
            robot,
            goal,
            ..
        } => {
            let points: Vec<[f64; 2]> = (goal["route"].as_array().into_iter().flatten())
                .filter_map(|p| Some([p["x"].as_f64()?, p["y"].as_f64()?]))
                .collect();
            let speed = goal["speed_mps"].as_f64().filter(|s| *s > 0.0).unwrap_or(1.0);
            let length: f64 = points
                .windows(2)
                .map(|w| (w[1][0] - w[0][0]).hypot(w[1][1] - w[0][1]))
                .sum();
            let end = now + length / speed;
            tracks.entry(robot).or_default().push((now, end, points));
            ends.push(Ends(end, task, leaf, generation));
        }
        Command::Finish { .. } => *done += 1,
        _ => {}
    }
}

fn main() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../config/tasks/warehouse_map.yaml"
    );
    let map = StationMap::read(std::path::Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![3, 6, 10] } else { sizes };
    println!(
        "fleet on {} ({} stations), one simulated hour per run, the mean of {SEEDS} task seeds",
        map.file(),
        map.stations().count()
    );
    println!(
        "{:>6}  {:>13}  {:>22}  {:>14}  {:>13}  {:>22}  {:>14}",
        "robots", "tasks/h", "closer than 0.5 m", "wait s/task", "tasks/h", "closer than 0.5 m", "assign µs"
    );
    println!("{:>6}  {:^39}  {:^60}", "", "with reservations", "without");
    for robots in sizes {
        let with = mean((1..=SEEDS).map(|seed| run(&map, robots, true, seed)));
        let without = mean((1..=SEEDS).map(|seed| run(&map, robots, false, seed)));
        println!(
            "{robots:>6}  {:>13.1}  {:>22.1}  {:>14.1}  {:>13.1}  {:>22.1}  {:>14.0}",
            with.tasks_per_hour,
            with.close_encounters,
            with.waiting_s_per_task,
            without.tasks_per_hour,
            without.close_encounters,
            with.assign_us
        );
    }
}
