//! The suite file: the shipped example reads, and each kind of mistake is one line naming the key path.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use lockstep_suite::suite::{Baseline, Suite, Tolerance};

/// A folder laid out like the repository around `config/suites/`, with two recordings.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("launch")).unwrap();
    std::fs::write(root.join("launch/replay_system.launch.xml"), "<launch/>").unwrap();
    for run in ["run_1", "run_2"] {
        let bag = root.join("config/suites/recordings").join(run);
        std::fs::create_dir_all(&bag).unwrap();
        std::fs::write(bag.join(format!("{run}_0.mcap")), "").unwrap();
    }
    // Neither a bag folder nor a bag file: not a recording.
    std::fs::create_dir_all(root.join("config/suites/recordings/plots")).unwrap();
    std::fs::write(root.join("config/suites/recordings/notes.txt"), "").unwrap();
    let file = root.join("config/suites/s.yaml");
    (dir, file)
}

fn example() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/suites/pipeline.yaml");
    std::fs::read_to_string(path).unwrap()
}

fn error(text: &str) -> String {
    let (_dir, file) = workspace();
    let err = Suite::parse(text, &file).unwrap_err().to_string();
    // Errors start with the suite file; the rest is what a test can compare.
    err.split_once("s.yaml: ")
        .map(|(_, rest)| rest.to_owned())
        .unwrap_or(err)
}

#[test]
fn the_shipped_example_reads() {
    let (_dir, file) = workspace();
    let suite = Suite::parse(&example(), &file).unwrap();
    assert_eq!(suite.recordings.len(), 2);
    let names: Vec<&str> = suite.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["as_recorded", "hold_2"]);
    assert_eq!(suite.variants[0].arguments["hold"], "4");
    assert_eq!(suite.variants[1].arguments["hold"], "2");
    let cmd_vel = &suite.expect["/cmd_vel"];
    assert_eq!(cmd_vel.default, Some(Tolerance { abs: 1e-9, rel: 0.0 }));
    assert_eq!(
        cmd_vel.fields["angular.z"],
        Tolerance {
            abs: 1e-6,
            rel: 0.001
        }
    );
    assert!(suite.expect["/mission"].is_exact());
    assert_eq!(suite.rules.len(), 1);
    assert_eq!(suite.baseline, Baseline::Recording);
    assert_eq!(suite.replay.discovery_ms, 60_000);
}

const MINIMAL: &str =
    "recordings: [recordings/*]\nmodules: {launch: ../../launch/replay_system.launch.xml}\n";

#[test]
fn a_minimal_suite_has_one_default_variant_and_exact_channels() {
    let (_dir, file) = workspace();
    let suite = Suite::parse(MINIMAL, &file).unwrap();
    assert_eq!(suite.variants.len(), 1);
    assert_eq!(suite.variants[0].name, "default");
    assert!(suite.expect.is_empty());
    assert_eq!(suite.replay.repeat, 1);
    assert!(!suite.variants[0].unmodified);
    let text = "recordings: [recordings/*]\nmodules: {launch: ../../launch/replay_system.launch.xml, \
                unmodified: true}\nrepeat: 3\n";
    let suite = Suite::parse(text, &file).unwrap();
    assert_eq!(suite.replay.repeat, 3);
    assert!(
        suite.variants[0].unmodified,
        "unmodified nodes: launched under --trace-replay"
    );
}

#[test]
fn mistakes_name_the_key_path() {
    let cases = [
        (
            format!("{MINIMAL}expect: {{/cmd_vel: {{abs_tol: -1}}}}\n"),
            "expect./cmd_vel.abs_tol: -1 is out of range",
        ),
        (
            format!("{MINIMAL}expect: {{/cmd_vel: {{fields: {{linear.x: {{abs: 1}}}}}}}}\n"),
            "expect./cmd_vel.fields.linear.x.abs: unknown key (expected one of: exact, abs_tol, rel_tol)",
        ),
        (
            format!("{MINIMAL}expect: {{cmd_vel: exact}}\n"),
            "expect.cmd_vel: a channel is a fully qualified topic name",
        ),
        (
            format!("{MINIMAL}bogus: 1\n"),
            "bogus: unknown key (expected one of: recordings,",
        ),
        (
            "recordings: [nothing/*]\nmodules: {launch: ../../launch/replay_system.launch.xml}\n".into(),
            "recordings[0]: nothing/*: matches no recording",
        ),
        (
            "recordings: [recordings/*]\n".into(),
            "modules: missing (required)",
        ),
        (
            "recordings: [recordings/*]\nmodules: {launch: nope.xml}\n".into(),
            "modules.launch: ",
        ),
        (
            format!("{MINIMAL}assert: {{rules: \"violation(X) :- .\"}}\n"),
            "assert: ",
        ),
        (
            format!("{MINIMAL}assert: {{rules: \"ok(1).\"}}\n"),
            "assert: the rules derive no `violation`",
        ),
        (
            format!("{MINIMAL}replay: {{timeout_ms: 0}}\n"),
            "replay.timeout_ms: 0 is out of range",
        ),
        (
            format!("{MINIMAL}replay: {{repeat: 2.5}}\n"),
            "replay.repeat: 2.5 is not a whole number of runs",
        ),
        (format!("{MINIMAL}repeat: 0\n"), "repeat: 0 is out of range"),
        (
            "recordings: [recordings/*]\nmodules: {launch: ../../launch/replay_system.launch.xml, unmodified: 1}\n"
                .into(),
            "modules.unmodified: expected true or false",
        ),
        ("recordings: [a\n  b: [".into(), "line "),
        (
            "recordings: [recordings/plots]\nmodules: {launch: ../../launch/replay_system.launch.xml}\n".into(),
            "recordings[0]: recordings/plots: matches no recording",
        ),
        (
            format!("{MINIMAL}replay: {{frames: 5}}\n"),
            "replay.frames: `5` is neither `all` nor a module's node name",
        ),
        (
            format!("{MINIMAL}expect: {{/cmd_vel: {{fields: {{\"\": exact}}}}}}\n"),
            "expect./cmd_vel.fields.: `` is not a field path",
        ),
        (
            format!("{MINIMAL}expect: {{/cmd_vel: {{fields: {{\"a..b\": exact}}}}}}\n"),
            "expect./cmd_vel.fields.a..b: `a..b` is not a field path",
        ),
        (
            "recordings: [recordings/*]\nmodules: {launch: ../../launch/replay_system.launch.xml, variants: {\"..\": {}}}\n"
                .into(),
            "modules.variants...: a variant's name is",
        ),
    ];
    for (text, expected) in cases {
        let got = error(&text);
        assert!(
            got.starts_with(expected),
            "{text}\n  got: {got}\n  expected: {expected}"
        );
        assert!(!got.contains('\n'), "one line: {got}");
    }
}

#[test]
fn an_unbounded_range_is_written_short_in_the_error() {
    let got = error(&format!("{MINIMAL}expect: {{/cmd_vel: {{abs_tol: -1}}}}\n"));
    assert_eq!(got, "expect./cmd_vel.abs_tol: -1 is out of range [0, ...]");
    let got = error(&format!("{MINIMAL}expect: {{/cmd_vel: {{rel_tol: -1.0e300}}}}\n"));
    assert_eq!(got, "expect./cmd_vel.rel_tol: -1e300 is out of range [0, ...]");
    let got = error(&format!("{MINIMAL}replay: {{timeout_ms: 0}}\n"));
    assert_eq!(got, "replay.timeout_ms: 0 is out of range [1, 3600000]");
}

#[test]
fn skipped_frames_fail_a_case_only_when_the_suite_says_so() {
    let (_dir, file) = workspace();
    assert!(!Suite::parse(MINIMAL, &file).unwrap().replay.fail_on_skipped);
    for text in [
        format!("{MINIMAL}fail_on_skipped: true\n"),
        format!("{MINIMAL}replay: {{fail_on_skipped: true}}\n"),
    ] {
        let suite = Suite::parse(&text, &file).unwrap();
        assert!(suite.replay.fail_on_skipped, "{text}");
    }
    assert_eq!(
        error(&format!("{MINIMAL}replay: {{fail_on_skipped: 1}}\n")),
        "replay.fail_on_skipped: expected true or false, found a number"
    );
}

#[test]
fn a_variant_overrides_the_common_arguments() {
    let (_dir, file) = workspace();
    let text = "recordings: [recordings/*]\nmodules:\n  launch: ../../launch/replay_system.launch.xml\n  \
                arguments: {hold: 4, rate: 10}\n  variants: {a: {}, b: {arguments: {hold: 2}}}\n";
    let suite = Suite::parse(text, &file).unwrap();
    assert_eq!(suite.variants[0].arguments["hold"], "4");
    assert_eq!(suite.variants[1].arguments["hold"], "2");
    assert_eq!(suite.variants[1].arguments["rate"], "10");
}

#[test]
fn tolerances_are_absolute_plus_relative_to_the_baseline() {
    let t = Tolerance { abs: 0.1, rel: 0.01 };
    assert!(t.admits(10.0, 10.2));
    assert!(!t.admits(10.0, 10.21));
    assert!(t.admits(f64::NAN, f64::NAN));
    assert!(!t.admits(1.0, f64::NAN));
    assert!(!Tolerance::default().admits(1.0, 1.0 + 1e-15));
}
