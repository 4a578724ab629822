//! `<?lockstep wait-for process="..." output="..." timeout="..."?>`: which processes a wait holds back (the
//! rest of its scope), the errors of a wait that cannot work, and, running, a process held back until the
//! line comes, or the launch stopped with an error naming the process and the pattern when it never does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use lockstep_launch::{plan_file, run, LaunchOptions, Outcome, Plan, RunOptions};

fn plan_in(dir: &Path, xml: &str, args: &[(&str, &str)]) -> Result<Plan, String> {
    let file = dir.join("run.launch.xml");
    std::fs::write(&file, xml).unwrap();
    let options = LaunchOptions {
        arguments: args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..LaunchOptions::default()
    };
    plan_file(&file, &options).map_err(|e| e.to_string())
}

fn plan(xml: &str, args: &[(&str, &str)]) -> Result<Plan, String> {
    plan_in(tempfile::tempdir().unwrap().path(), xml, args)
}

/// Each process's label with the processes it waits for.
fn waits(plan: &Plan) -> Vec<(String, Vec<String>)> {
    (plan.processes.iter())
        .map(|p| {
            (
                p.label.clone(),
                p.waits.iter().map(|w| w.process.clone()).collect(),
            )
        })
        .collect()
}

fn want(list: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    (list.iter())
        .map(|(label, on)| (label.to_string(), on.iter().map(|s| s.to_string()).collect()))
        .collect()
}

const SCOPES: &str = r#"<launch>
  <arg name="record" default="true"/>
  <executable cmd="true" name="recorder"/>
  <executable cmd="true" name="sensor"/>
  <group>
    <executable cmd="true" name="before"/>
    <?lockstep wait-for process="recorder" output="^ready: (\d+) topics$" timeout="2.5" if="$(var record)"?>
    <?xml-stylesheet href="other readers' instructions are left alone"?>
    <executable cmd="true" name="m1"/>
    <group>
      <?lockstep wait-for process="sensor" output="up"?>
      <executable cmd="true" name="m2"/>
    </group>
    <executable cmd="true" name="m3"/>
  </group>
  <executable cmd="true" name="after"/>
</launch>"#;

#[test]
fn a_wait_holds_back_the_processes_after_it_in_its_scope() {
    let plan = plan(SCOPES, &[]).unwrap();
    assert_eq!(
        waits(&plan),
        want(&[
            ("recorder", &[]),
            ("sensor", &[]),
            ("before", &[]),
            ("m1", &["recorder"]),
            ("m2", &["recorder", "sensor"]),
            ("m3", &["recorder"]),
            ("after", &[]),
        ])
    );
    let wait = &plan.processes[3].waits[0];
    assert_eq!(
        wait.output, r"^ready: (\d+) topics$",
        "raw text: no XML entities, no escapes"
    );
    assert_eq!(wait.timeout, Duration::from_secs_f64(2.5));
    assert_eq!((wait.at.line, wait.at.column), (7, 5));
    assert_eq!(
        plan.processes[4].waits[1].timeout,
        Duration::from_secs(60),
        "the default"
    );
    // Its condition is false: no wait.
    let plan = self::plan(SCOPES, &[("record", "false")]).unwrap();
    assert_eq!(waits(&plan)[3], want(&[("m1", &[])])[0]);
}

#[test]
fn a_wait_reaches_into_included_files_but_not_out_of_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("child.launch.xml"),
        r#"<launch>
             <executable cmd="true" name="inner"/>
             <?lockstep wait-for process="$(var first)" output="go"?>
             <executable cmd="true" name="inner_held"/>
           </launch>"#,
    )
    .unwrap();
    let plan = plan_in(
        dir.path(),
        r#"<launch>
             <let name="first" value="first"/>
             <executable cmd="true" name="first"/>
             <?lockstep wait-for process="first" output="up"?>
             <include file="$(dirname)/child.launch.xml"/>
             <executable cmd="true" name="last"/>
           </launch>"#,
        &[],
    )
    .unwrap();
    assert_eq!(
        waits(&plan),
        want(&[
            ("first", &[]),
            ("inner", &["first"]),
            ("inner_held", &["first", "first"]),
            ("last", &["first"]),
        ])
    );
    assert_eq!(plan.processes[2].waits[1].output, "go");
}

#[test]
fn a_wait_that_cannot_work_is_an_error_at_its_place() {
    let cases = [
        (
            r#"<?lockstep wait-for process="later" output="x"?><executable cmd="true" name="later"/>"#,
            ":1:9: <?lockstep wait-for?>: no process `later` is declared before it (declared so far: none)",
        ),
        (
            r#"<executable cmd="true" name="a"/><?lockstep wait-for process="b" output="x"?>"#,
            ": no process `b` is declared before it (declared so far: a)",
        ),
        (
            r#"<executable cmd="true" name="a"/><?lockstep wait-for process="a" output="(" ?>"#,
            "<?lockstep wait-for?>: output=\"(\": regex parse error:",
        ),
        (
            r#"<executable cmd="true" name="a"/><?lockstep wait-for process="a" output="x" timeout="0"?>"#,
            "timeout=\"0\": expected seconds in (0, 3600]",
        ),
        (
            r#"<executable cmd="true" name="a"/><?lockstep wait-for process="a" output="x" timeout="1e9"?>"#,
            "timeout=\"1e9\": expected seconds in (0, 3600]",
        ),
        (
            r#"<executable cmd="true" name="a"/><?lockstep wait-for process="a"?>"#,
            "wait-for needs `output`",
        ),
        (
            r#"<?lockstep wait-for process="a" line="x"?>"#,
            "wait-for has no attribute `line` (known: process, output, timeout, if, unless)",
        ),
        (
            r#"<?lockstep wait-for process="a" process="b"?>"#,
            "`process` given twice",
        ),
        (
            r#"<?lockstep start-after process="a"?>"#,
            "unknown instruction `start-after` (known: wait-for)",
        ),
        (
            r#"<?lockstep wait-for process=a?>"#,
            "process=: the value must be quoted",
        ),
        (r#"<?lockstep?>"#, "<?lockstep?>: empty"),
        (
            r#"<?lockstep wait-for process="$(var nope)" output="x"?>"#,
            "nope",
        ),
        (
            r#"<executable cmd="true" name="a"/><?lockstep wait-for process="a" output="x" if="maybe"?>"#,
            "if=\"maybe\": a condition is true, false, 1 or 0",
        ),
        (
            r#"<executable cmd="true" name="a"><?lockstep wait-for process="a" output="x"?></executable>"#,
            ":1:41: <?lockstep?> inside <executable>: it goes between the elements of <launch> or <group>",
        ),
    ];
    for (inner, expected) in cases {
        let error = plan(&format!("<launch>{inner}</launch>"), &[]).unwrap_err();
        assert!(
            error.contains(expected),
            "{inner}\n  gave {error}\n  wanted {expected}"
        );
        assert!(!error.contains('\n'), "{error}");
    }
}

fn launch(xml: &str) -> (tempfile::TempDir, Outcome, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_in(
        dir.path(),
        &xml.replace("DIR", &dir.path().display().to_string()),
        &[],
    )
    .unwrap();
    let started = Instant::now();
    let options = RunOptions {
        color: false,
        sigterm_timeout: Duration::from_secs(5),
        log_dir: dir.path().join("log"),
    };
    let outcome = run(&plan, &options).unwrap();
    (dir, outcome, started.elapsed())
}

#[test]
fn a_held_process_starts_once_the_line_is_printed() {
    // The server makes a file, then says so on stderr (where ROS nodes log); the client, held back until
    // then, finds the file and ends the launch.
    let (dir, outcome, took) = launch(
        r#"<launch>
             <executable cmd="sh -c 'sleep 0.5; touch DIR/made; echo not yet; echo [INFO] server: ready 1>&amp;2; sleep 30'" name="server" output="log"/>
             <?lockstep wait-for process="server" output="server: ready$" timeout="20"?>
             <executable cmd="sh -c 'test -f DIR/made'" name="client" on_exit="shutdown"/>
           </launch>"#,
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(outcome.unmet, None);
    let client = outcome.ended.iter().find(|e| e.label == "client").unwrap();
    assert_eq!(
        client.code,
        Some(0),
        "the client started before the server's line: {outcome:?}"
    );
    assert!(dir.path().join("made").exists());
}

#[test]
fn a_line_that_never_comes_stops_the_launch_naming_the_process_and_the_pattern() {
    let (_dir, outcome, took) = launch(
        r#"<launch>
             <executable cmd="sh -c 'echo starting; sleep 30'" name="server"/>
             <?lockstep wait-for process="server" output="ready" timeout="0.5"?>
             <executable cmd="true" name="client"/>
             <executable cmd="true" name="other"/>
           </launch>"#,
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let unmet = outcome.unmet.unwrap();
    assert!(
        unmet
            .starts_with("server did not print, within its timeout, a line matching `ready` (waited for at ")
            && unmet.ends_with(":3:14, at most 500ms); not started: client, other"),
        "{unmet}"
    );
    assert_eq!(outcome.reason, unmet);
    let labels: Vec<&str> = outcome.ended.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels, ["server"], "the held processes never started");
    assert!(outcome.ended[0].asked_to_stop);
}

#[test]
fn a_process_that_ends_without_the_line_fails_the_wait_at_once() {
    let (_dir, outcome, took) = launch(
        r#"<launch>
             <executable cmd="sh -c 'echo almost ready; exit 0'" name="server"/>
             <?lockstep wait-for process="server" output="^ready" timeout="60"?>
             <executable cmd="true" name="client"/>
           </launch>"#,
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let unmet = outcome.unmet.unwrap();
    assert!(
        unmet.starts_with("server ended before it printed a line matching `^ready`"),
        "{unmet}"
    );
}
