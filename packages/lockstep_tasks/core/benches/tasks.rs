//! Task-manager figures without ROS (the DDS figures come with the node):
//! - decomposing a task with 1,000 leaf actions (10 duties x 10 messages x 10 actions);
//! - the memory one decomposed task holds (a counting allocator);
//! - scheduling overhead per leaf against instant actuators (step + success, in-process);
//! - 1,000 AddAttribute calls during a 1,000-leaf run: each applied once, time per call.
//! - assigning 100 tasks over 10 robots on a 10 x 10 station grid: total and per-task time.
//!
//!   cargo bench -p lockstep_tasks --bench tasks
#![allow(clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use lockstep_tasks::{Attribute, Config, Outcome, Params, Scheduler, Tree};

/// Counts the bytes live on the heap.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only adds bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Four levels, ten children per subtask: 1,000 leaves. The task's speed meets a duty limit by `min`.
fn config() -> Config {
    let yaml = r#"
levels: [task, duty, message, action]
parameters: {speed: min}
actuators:
  nav: {server: /navigate, type: lockstep_interfaces/action/Navigate, goal: {speed: speed}}
templates:
  big: {level: task, required: [speed], children: [CHILDREN_duty]}
  duty: {level: duty, parameters: {speed: 0.8, area: "zone-{speed}"}, children: [CHILDREN_message]}
  message: {level: message, children: [CHILDREN_action]}
  action: {level: action, actuator: nav}
"#;
    let mut text = yaml.to_owned();
    for child in ["duty", "message", "action"] {
        let list = vec![format!("{{type: {child}}}"); 10].join(", ");
        text = text.replace(&format!("CHILDREN_{child}"), &list);
    }
    Config::parse("bench.yaml", &text).expect("bench config")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let config = config();
    let goal: Params = serde_json::from_str(r#"{"speed": 1.0}"#).expect("goal");
    let decompose = || Tree::decompose(&config, "big", &goal).expect("decompose");

    let mut times = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let tree = decompose();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(tree.leaves().count(), 1000);
    }
    let before = LIVE.load(Ordering::Relaxed);
    let tree = decompose();
    let bytes = LIVE.load(Ordering::Relaxed) - before;
    let nodes = tree.nodes.len();

    // Instant actuators: every goal sent succeeds at once.
    let always = |_: &str| true;
    let mut runs = Vec::new();
    for _ in 0..5 {
        let mut s = Scheduler::new(decompose());
        let t = Instant::now();
        let mut now = 0.0;
        while s.outcome().is_none() {
            s.step(now, &always);
            let live: Vec<_> = s.live().collect();
            for leaf in live {
                s.leaf_succeeded(leaf);
            }
            now += 0.001;
        }
        runs.push(t.elapsed().as_secs_f64() * 1e6 / 1000.0);
        assert_eq!(s.outcome(), Some(&Outcome::Completed));
        assert_eq!(s.sent.len(), 1000);
    }

    // 1,000 AddAttribute calls, one per leaf, each on the next leaf just before it is dispatched (a condition
    // that holds); each must be there exactly once.
    let mut s = Scheduler::new(decompose());
    let mut call_times = Vec::new();
    let (mut applied, mut refused) = (0usize, 0usize);
    let mut now = 0.0;
    let leaves: Vec<usize> = s.tree().leaves().collect();
    let mut next = 0;
    while s.outcome().is_none() {
        if next < leaves.len() {
            let path = s.tree().nodes[leaves[next]].path.clone();
            let t = Instant::now();
            let answer = s.add_attribute(
                &path,
                Attribute::Condition {
                    query: "clear".into(),
                },
            );
            call_times.push(t.elapsed().as_secs_f64() * 1e6);
            match answer {
                Ok(_) => applied += 1,
                Err(_) => refused += 1,
            }
            next += 1;
        }
        s.step(now, &always);
        let live: Vec<_> = s.live().collect();
        for leaf in live {
            s.leaf_succeeded(leaf);
        }
        now += 0.001;
    }
    let once = leaves
        .iter()
        .filter(|&&l| {
            let n = &s.tree().nodes[l];
            n.attributes
                .iter()
                .filter(|a| matches!(a, Attribute::Condition { .. }))
                .count()
                == 1
        })
        .count();
    assert_eq!(once, applied, "an attribute applied other than once");

    println!("### Task manager (library, in-process): a task of 1,000 leaf actions (10 x 10 x 10)\n");
    println!("| figure | value |");
    println!("|---|---|");
    println!(
        "| decomposition ({nodes} subtasks, parameters templated and merged) | median {:.2} ms over 20 |",
        median(times)
    );
    println!(
        "| memory held by one decomposed task | {:.0} KiB ({:.0} B per subtask) |",
        bytes as f64 / 1024.0,
        bytes as f64 / nodes as f64
    );
    println!(
        "| scheduling per leaf, instant actuators (step + success) | median {:.2} us over 5 runs |",
        median(runs)
    );
    println!(
        "| AddAttribute during the run, 1,000 calls | {applied} applied exactly once, {refused} refused (already running or done); median {:.2} us, max {:.1} us per call |",
        median(call_times.clone()),
        call_times.iter().copied().fold(0.0, f64::max)
    );
    fleet_figure();
}

/// A 10 x 10 grid of stations 2 m apart (one lane in three at 0.5 m/s, the others at 1.0 m/s), 10 robots,
/// 100 tasks assigned one after the other: each to the robot that can start it soonest, which is then busy
/// for 60 s and ends at the task's last station.
fn fleet_figure() {
    use lockstep_tasks::{assign, RobotView, StationMap, TaskNeeds};

    let name = |r: usize, c: usize| format!("s{r}{c}");
    let mut yaml = String::from("stations:\n");
    for r in 0..10 {
        for c in 0..10 {
            yaml += &format!("  {}: {{x: {}, y: {}}}\n", name(r, c), 2 * c, 2 * r);
        }
    }
    yaml += "lanes:\n";
    let mut n = 0;
    for r in 0..10 {
        for c in 0..10 {
            for (r2, c2) in [(r, c + 1), (r + 1, c)] {
                if r2 < 10 && c2 < 10 {
                    let speed = if n % 3 == 0 { 0.5 } else { 1.0 };
                    yaml += &format!(
                        "  - {{from: {}, to: {}, speed_limit_mps: {speed}}}\n",
                        name(r, c),
                        name(r2, c2)
                    );
                    n += 1;
                }
            }
        }
    }
    let map = StationMap::parse("grid.yaml", &yaml).expect("grid map");
    let mut robots: Vec<RobotView> = (0..10)
        .map(|i| RobotView {
            name: format!("robot{i}"),
            station: name(i, (i * 7) % 10),
            busy_until_s: None,
            queued: 0,
        })
        .collect();
    // A fixed pseudo-random sequence of stations: the same figure on every run.
    let mut state: u64 = 12345;
    let mut next_station = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = (state >> 33) as usize % 100;
        name(k / 10, k % 10)
    };
    let mut per_task = Vec::new();
    let total = Instant::now();
    for _ in 0..100 {
        let task = TaskNeeds {
            first_station: Some(next_station()),
            robot: None,
        };
        let t = Instant::now();
        let chosen = assign(&robots, &task, &map, 0.0).expect("assignment");
        per_task.push(t.elapsed().as_secs_f64() * 1e6);
        let last = next_station();
        if let Some(r) = robots.iter_mut().find(|r| r.name == chosen.robot) {
            r.busy_until_s = Some(chosen.start_s + 60.0);
            r.station = last;
            r.queued += 1;
        }
    }
    let total_ms = total.elapsed().as_secs_f64() * 1e3;
    println!(
        "| assignment: 100 queued tasks over 10 robots (10 x 10 station grid, {n} lanes) | total {total_ms:.2} ms; median {:.1} us, max {:.1} us per task |",
        median(per_task.clone()),
        per_task.iter().copied().fold(0.0, f64::max)
    );
}
