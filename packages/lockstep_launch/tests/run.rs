//! Running plans: output prefixed and logged, on_exit="shutdown" stopping the rest, escalation to SIGTERM.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use lockstep_launch::{plan_file, run, LaunchOptions, Outcome, RunOptions};

fn launch(xml: &str, sigterm_timeout: Duration) -> (tempfile::TempDir, Outcome, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.launch.xml");
    std::fs::write(&file, xml).unwrap();
    let plan = plan_file(&file, &LaunchOptions::default()).unwrap();
    let started = Instant::now();
    let outcome = run(
        &plan,
        &RunOptions {
            color: false,
            sigterm_timeout,
            log_dir: dir.path().join("log"),
        },
    )
    .unwrap();
    (dir, outcome, started.elapsed())
}

fn log(dir: &Path, label: &str) -> String {
    std::fs::read_to_string(dir.join("log").join(format!("{label}.log"))).unwrap()
}

#[test]
fn a_required_process_ending_stops_the_others_with_sigint() {
    let (dir, outcome, took) = launch(
        r#"<launch>
             <executable cmd="sh -c 'echo up; echo to-stderr 1>&amp;2; trap &quot;echo got INT; exit 0&quot; INT; while true; do sleep 0.05; done'" name="server" output="screen"/>
             <executable cmd="sh -c 'sleep 0.3; exit 3'" name="client" on_exit="shutdown"/>
           </launch>"#,
        Duration::from_secs(10),
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(
        outcome.reason.contains("client ended (exit code 3)"),
        "{}",
        outcome.reason
    );
    let server = outcome.ended.iter().find(|e| e.label == "server").unwrap();
    assert_eq!(
        (server.code, server.asked_to_stop, server.failed()),
        (Some(0), true, false)
    );
    let client = outcome.ended.iter().find(|e| e.label == "client").unwrap();
    assert_eq!((client.code, client.failed()), (Some(3), true));
    // stdout and stderr are read apart: their lines interleave in any order, each stream's stay in order
    let log = log(dir.path(), "server");
    let stdout: Vec<&str> = log.lines().filter(|l| *l != "to-stderr").collect();
    assert_eq!(stdout, ["up", "got INT"]);
    assert!(log.lines().any(|l| l == "to-stderr"), "{log}");
}

#[test]
fn a_process_ignoring_sigint_gets_sigterm_after_the_timeout() {
    let (_dir, outcome, took) = launch(
        r#"<launch>
             <executable cmd="sh -c 'trap &quot;&quot; INT; while true; do sleep 0.05; done'" name="stubborn"/>
             <executable cmd="true" name="short" on_exit="shutdown"/>
           </launch>"#,
        Duration::from_millis(500),
    );
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(4),
        "took {took:?}"
    );
    let stubborn = outcome.ended.iter().find(|e| e.label == "stubborn").unwrap();
    assert_eq!(
        (stubborn.signal, stubborn.asked_to_stop),
        (Some(libc_sigterm()), true)
    );
}

#[test]
fn processes_that_all_end_by_themselves_end_the_launch() {
    let (dir, outcome, _) = launch(
        r#"<launch>
             <set_env name="GREETING" value="hello"/>
             <executable cmd="sh -c 'echo $GREETING'" name="a"/>
             <executable cmd="sh -c 'exit 0'" name="a"/>
           </launch>"#,
        Duration::from_secs(5),
    );
    assert_eq!(outcome.reason, "every process ended");
    let labels: Vec<&str> = outcome.ended.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels, ["a", "a-2"]);
    assert!(outcome.ended.iter().all(|e| !e.failed()));
    assert_eq!(log(dir.path(), "a"), "hello\n");
}

fn libc_sigterm() -> i32 {
    15
}
