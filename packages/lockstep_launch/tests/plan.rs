//! Reading launch files into plans: every supported tag's meaning, and errors that say where.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::index;

use std::path::{Path, PathBuf};

use lockstep_launch::{plan_file, LaunchError, LaunchOptions, Output, ParamSource, Plan};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn plan(file: &Path, args: &[(&str, &str)]) -> (tempfile::TempDir, Result<Plan, LaunchError>) {
    let dir = tempfile::tempdir().unwrap();
    let options = LaunchOptions {
        arguments: args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        index: index(dir.path()),
    };
    let plan = plan_file(file, &options);
    (dir, plan)
}

#[test]
fn a_launch_file_becomes_the_processes_ros2_launch_would_start() {
    let (dir, plan) = plan(&data("system.launch.xml"), &[]);
    let plan = plan.unwrap();
    let labels: Vec<&str> = plan.processes.iter().map(|p| p.label.as_str()).collect();
    assert_eq!(labels, ["talker", "listener_robot", "echo"]);

    let talker = &plan.processes[0];
    assert_eq!(talker.program, dir.path().join("lib/demo/talker"));
    assert_eq!(talker.output, Output::Screen);
    assert!(talker.shutdown_on_exit);
    assert_eq!(talker.at.line, 13);
    let node = talker.node.as_ref().unwrap();
    assert_eq!(node.fully_qualified_name().as_deref(), Some("/robot/talker"));
    assert_eq!(
        talker.display_argv()[1..].join(" "),
        format!(
            "--ros-args -r __node:=talker -r __ns:=/robot -p use_sim_time:=true -p rate:=10 --params-file {} \
             -p names:=[a, b] -p label:=robot_x -r /tf:=tf -r chatter:=/out",
            data("params.yaml").display()
        )
    );
    assert_eq!(node.params.len(), 3, "inline, file, inline (order kept)");
    assert!(matches!(&node.params[1], ParamSource::File(p) if p == &data("params.yaml")));
    assert_eq!(
        talker.env,
        [
            ("LAUNCH_VAR".to_string(), Some("in group".to_string())),
            ("NODE_VAR".to_string(), Some("x".to_string()))
        ]
    );

    let listener = &plan.processes[1];
    assert_eq!(
        listener.node.as_ref().unwrap().fully_qualified_name().as_deref(),
        Some("/sub/listener_robot")
    );
    assert_eq!(listener.output, Output::Log, "ros2 launch's default");
    assert_eq!(
        listener.env,
        [("LAUNCH_VAR".to_string(), Some("top".to_string()))],
        "the group's set_env stays in the group"
    );
    assert!(listener.at.file.ends_with("child.launch.xml"));

    let echo = &plan.processes[2];
    assert!(echo.node.is_none());
    assert_eq!(echo.display_argv(), ["echo", "hello", "a b"]);

    let names: Vec<(&str, &str)> = plan
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.value.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("ns", "robot"),
            ("rate", "10"),
            ("extra", "false"),
            ("who", "robot")
        ]
    );
    assert_eq!(
        plan.arguments[0].description.as_deref(),
        Some("namespace of the talker")
    );
}

#[test]
fn command_line_arguments_override_defaults_and_reach_includes() {
    let (_dir, plan) = plan(
        &data("system.launch.xml"),
        &[("ns", "/abs"), ("extra", "true"), ("nobody", "1")],
    );
    let plan = plan.unwrap();
    let names: Vec<String> = plan
        .processes
        .iter()
        .filter_map(|p| p.node.as_ref().and_then(|n| n.fully_qualified_name()))
        .collect();
    assert_eq!(names, ["/abs/talker", "/extra", "/sub/listener_/abs"]);
    assert_eq!(plan.undeclared_overrides, ["nobody"]);
}

/// Writes a launch file and returns the error of reading it.
fn error_of(xml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.launch.xml");
    std::fs::write(&file, xml).unwrap();
    let (_idx, plan) = plan(&file, &[]);
    let err = plan.expect_err("the file is bad").to_string();
    assert!(
        err.starts_with(&file.display().to_string()),
        "names the file: {err}"
    );
    err.replacen(&file.display().to_string(), "F", 1)
}

#[test]
fn what_lockstep_launch_cannot_run_is_an_error_with_file_and_line() {
    let cases = [
        ("<launch>\n  <timer period=\"1\"/>\n</launch>", "F:2:3: <timer> is not supported by lockstep launch"),
        ("<launch>\n  <node pkg=\"demo\" exec=\"talker\">\n    <remap from=\"a\" to=\"b\"/>\n    <param name=\"p\"><param name=\"q\" value=\"1\"/></param>\n  </node>\n</launch>", "F:4:5: <param> is not supported by lockstep launch with nested"),
        ("<launch>\n  <node pkg=\"demo\" exec=\"talker\" respawn_delay=\"1\"/>\n</launch>", "F:2:34: <node> has no attribute `respawn_delay`"),
        ("<launch>\n  <arg name=\"needed\"/>\n</launch>", "F:2:3: argument `needed` has no value and no default: give it as needed:=<value>"),
        ("<launch>\n\n  <let name=\"x\" value=\"$(eval 1)\"/>\n</launch>", "F:3:24: $(eval) is not supported"),
        ("<launch>\n  <let name=\"x\" value=\"$(var y)\"/>\n</launch>", "F:2:24: $(var y): no launch argument"),
        ("<launch>\n  <node pkg=\"demo\" exec=\"nothing\"/>\n</launch>", "F:2:3: executable nothing of package demo not found"),
        ("<launch>\n  <node pkg=\"demo\" exec=\"talker\" if=\"maybe\"/>\n</launch>", "F:2:3: if=\"maybe\": a condition is true, false, 1 or 0"),
        ("<launch>\n  <include file=\"/nonexistent.launch.xml\"/>\n</launch>", "F:2:3: included file /nonexistent.launch.xml does not exist"),
        ("<launch>\n  <include file=\"x.launch.py\"/>\n</launch>", "F:2:3: x.launch.py: lockstep launch reads XML launch files only"),
        ("<launch>\n  <node pkg=\"demo\" exec=\"talker\"><param from=\"/nonexistent.yaml\"/></node>\n</launch>", "F:2:34: parameter file /nonexistent.yaml does not exist"),
        ("<robot/>", "F:1:1: the root element is <robot>"),
        ("<launch>\n  <node pkg=\"demo\" exec=\"talker\"\n</launch>", "F: not well-formed XML"),
    ];
    for (xml, wanted) in cases {
        let err = error_of(xml);
        assert!(err.starts_with(wanted), "\n wanted: {wanted}\n    got: {err}");
    }
}

#[test]
fn an_include_cycle_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("loop.launch.xml");
    std::fs::write(&file, "<launch>\n  <include file=\"$(filename)\"/>\n</launch>\n").unwrap();
    let (_idx, plan) = plan(&file, &[]);
    let err = plan.unwrap_err().to_string();
    assert!(err.contains(":2:3: include cycle: "), "{err}");
}
