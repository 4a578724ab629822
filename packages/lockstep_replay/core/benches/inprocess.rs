//! In-process lock-step replay speed: module steps per second for trivial modules (the target: at
//! least 100,000), on a recording of `FRAMES` external inputs through two chained modules (so 2 x FRAMES
//! steps), written by the tests' generator. Prints the load time, the replay rate (median of `RUNS`) and
//! the time to write the simulated bag. Run: `bash scripts/bench/replay.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use lockstep_bag::BagReader;
use lockstep_replay::lockstep::{replay, write_bag, Recording, ReplayOptions};

const FRAMES: u64 = 50_000;
const RUNS: usize = 5;

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    common::record(&dir, FRAMES, common::Cut::None, None);
    let started = Instant::now();
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    let load_s = started.elapsed().as_secs_f64();
    let mut rates = Vec::new();
    let mut outcome = None;
    for _ in 0..RUNS {
        let mut modules = common::modules(0);
        let started = Instant::now();
        let o = replay(&recording, &mut modules, &ReplayOptions::default()).unwrap();
        let secs = started.elapsed().as_secs_f64();
        assert_eq!(o.outputs.len() as u64, 2 * FRAMES);
        assert!(o.outputs.iter().all(|s| s.exact));
        rates.push(o.outputs.len() as f64 / secs);
        outcome = Some(o);
    }
    rates.sort_by(f64::total_cmp);
    let started = Instant::now();
    write_bag(&recording, &outcome.unwrap(), &tmp.path().join("simulated")).unwrap();
    let write_s = started.elapsed().as_secs_f64();
    println!(
        "in-process lock-step replay, {FRAMES} inputs through 2 chained trivial modules ({} steps):",
        2 * FRAMES
    );
    println!(
        "  load recording: {load_s:.3} s ({:.0} frames/s)",
        (2 * FRAMES) as f64 / load_s
    );
    println!(
        "  replay: median {:.0} steps/s (runs: {}) (goal >= 100000)",
        rates[RUNS / 2],
        rates
            .iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("  write simulated bag: {write_s:.3} s");
}
