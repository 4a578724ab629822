//! `launch-prefix` on `<node>` and `<executable>`, and `--trace`'s interceptor in the plan.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::index;

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_intercept::env::Mode;
use lockstep_launch::{plan_file, run, LaunchError, LaunchOptions, Plan, RunOptions};

/// Writes `xml` as a launch file in a new folder (with the `demo` package) and reads it.
fn plan_of(xml: &str, args: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, Result<Plan, LaunchError>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prefix.launch.xml");
    std::fs::write(&file, xml).unwrap();
    let options = LaunchOptions {
        arguments: args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        index: index(dir.path()),
    };
    let plan = plan_file(&file, &options);
    (dir, file, plan)
}

#[test]
fn a_launch_prefix_goes_before_the_command_split_like_a_shell() {
    let (dir, _file, plan) = plan_of(
        r#"<launch>
  <arg name="debugger" default="gdb -ex run --args"/>
  <node pkg="demo" exec="talker" launch-prefix="lockstep trace --"/>
  <node pkg="demo" exec="listener" launch-prefix="$(var debugger)"/>
  <executable cmd="echo hi" name="quoted" launch-prefix="valgrind --log-file='/tmp/a log' &quot;--tool=memcheck&quot;"/>
  <executable cmd="echo hi" name="blank" launch-prefix="  "/>
  <executable cmd="echo hi" name="none"/>
</launch>"#,
        &[],
    );
    let plan = plan.unwrap();
    let talker = &plan.processes[0];
    assert_eq!(talker.prefix, ["lockstep", "trace", "--"]);
    let talker_path = dir.path().join("lib/demo/talker").display().to_string();
    assert_eq!(
        talker.display_argv()[..4],
        ["lockstep", "trace", "--", talker_path.as_str()]
    );
    assert_eq!(talker.display_argv()[4], "--ros-args");
    assert_eq!(
        talker.label, "talker",
        "the label is the node's, not the prefix's"
    );
    assert_eq!(plan.processes[1].prefix, ["gdb", "-ex", "run", "--args"]);
    assert_eq!(
        plan.processes[2].display_argv(),
        [
            "valgrind",
            "--log-file=/tmp/a log",
            "--tool=memcheck",
            "echo",
            "hi"
        ]
    );
    assert!(plan.processes[3].prefix.is_empty());
    assert!(plan.processes[4].prefix.is_empty());
    assert_eq!(plan.processes[4].display_argv(), ["echo", "hi"]);
}

#[test]
fn a_substituted_prefix_is_split_after_substitution() {
    let xml = r#"<launch>
  <arg name="prefix" default=""/>
  <node pkg="demo" exec="talker" launch-prefix="$(var prefix)"/>
</launch>"#;
    let (_dir, _file, plan) = plan_of(xml, &[]);
    assert!(
        plan.unwrap().processes[0].prefix.is_empty(),
        "an empty prefix is none"
    );
    let (_dir, _file, plan) = plan_of(xml, &[("prefix", "xterm -e 'gdb --args'")]);
    assert_eq!(plan.unwrap().processes[0].prefix, ["xterm", "-e", "gdb --args"]);
}

#[test]
fn an_unbalanced_quote_names_the_file_line_and_attribute() {
    let (_dir, file, plan) = plan_of(
        "<launch>\n  <node pkg=\"demo\" exec=\"talker\" launch-prefix=\"gdb -ex 'run\"/>\n</launch>",
        &[],
    );
    let err = plan.unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}:2:49: launch-prefix=\"gdb -ex 'run\": the quote ' is never closed",
            file.display()
        )
    );
    let (_dir, file, plan) = plan_of(
        "<launch>\n  <arg name=\"p\" default='a \"b'/>\n  <executable cmd=\"true\" launch-prefix=\"$(var p)\"/>\n</launch>",
        &[],
    );
    let err = plan.unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("{}:3:", file.display())) && err.contains("launch-prefix=\"a \"b\""),
        "{err}"
    );
}

#[test]
fn lockstep_in_a_prefix_is_the_running_binary() {
    let (_dir, _file, plan) = plan_of(
        r#"<launch>
  <node pkg="demo" exec="talker" launch-prefix="lockstep trace --"/>
  <node pkg="demo" exec="listener" launch-prefix="gdb --args lockstep"/>
</launch>"#,
        &[],
    );
    let mut plan = plan.unwrap();
    plan.use_lockstep_binary(Path::new("/opt/lockstep/bin/lockstep"));
    assert_eq!(
        plan.processes[0].prefix,
        ["/opt/lockstep/bin/lockstep", "trace", "--"]
    );
    assert_eq!(
        plan.processes[1].prefix,
        ["gdb", "--args", "lockstep"],
        "only the first word"
    );
}

#[test]
fn trace_puts_the_interceptor_into_every_process_with_its_prefix() {
    let (_dir, _file, plan) = plan_of(
        r#"<launch>
  <node pkg="demo" exec="talker" launch-prefix="gdb -ex run --args">
    <env name="LD_PRELOAD" value="/mine.so"/>
  </node>
  <node pkg="demo" exec="listener"/>
  <executable cmd="echo hi" name="tool"/>
</launch>"#,
        &[],
    );
    let mut plan = plan.unwrap();
    let lib = Path::new("/ws/target/debug/liblockstep_intercept_preload.so");
    plan.intercept(lib, Mode::Replay);
    let env = |i: usize, name: &str| {
        plan.processes[i]
            .env
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.clone())
    };
    let preload = env(0, "LD_PRELOAD").unwrap();
    assert!(
        preload.starts_with("/ws/target/debug/liblockstep_intercept_preload.so:/mine.so"),
        "{preload}"
    );
    assert_eq!(env(0, "LOCKSTEP_INTERCEPT").as_deref(), Some("replay"));
    assert_eq!(plan.processes[0].prefix, ["gdb", "-ex", "run", "--args"], "kept");
    assert!(env(1, "LD_PRELOAD")
        .unwrap()
        .starts_with(&lib.display().to_string()));
    assert_eq!(env(1, "LOCKSTEP_INTERCEPT").as_deref(), Some("replay"));
    assert!(
        env(2, "LD_PRELOAD")
            .unwrap()
            .starts_with(&lib.display().to_string()),
        "an <executable> may be a ROS program too (the interceptor leaves non-ROS programs alone)"
    );
    assert_eq!(env(2, "LOCKSTEP_INTERCEPT").as_deref(), Some("replay"));
}

#[test]
fn a_prefix_runs_the_command() {
    let (dir, _file, plan) = plan_of(
        r#"<launch>
  <executable cmd="sh -c 'echo $PREFIXED'" name="wrapped" launch-prefix="env 'PREFIXED=by the prefix'"/>
</launch>"#,
        &[],
    );
    let outcome = run(
        &plan.unwrap(),
        &RunOptions {
            color: false,
            sigterm_timeout: Duration::from_secs(5),
            log_dir: dir.path().join("log"),
        },
    )
    .unwrap();
    assert!(outcome.ended.iter().all(|e| !e.failed()), "{outcome:?}");
    let log = std::fs::read_to_string(dir.path().join("log/wrapped.log")).unwrap();
    assert_eq!(log, "by the prefix\n");
}
