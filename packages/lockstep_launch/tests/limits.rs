//! Hostile launch files: deep nesting, include cycles, values that double until memory runs out, huge
//! files and numbers out of range all end in a one-line error that says where and which limit, never in a
//! stack overflow, a hang or exhausted memory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use lockstep_launch::{limits, plan_file, sigterm_timeout, LaunchOptions, PackageIndex};

/// Reads `xml` as a launch file and returns the error with the file's path replaced by `F`.
fn error_of(xml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.launch.xml");
    std::fs::write(&file, xml).unwrap();
    error_of_file(&file)
}

/// Before the limits, the deep files below overflowed the stack (the test binary aborted) and the
/// doubling values ran out of memory; now each is a one-line error, quickly.
fn error_of_file(file: &Path) -> String {
    let started = Instant::now();
    let result = plan_file(file, &options());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    let err = result.expect_err("the file is refused").to_string();
    assert!(!err.contains('\n'), "one line: {err}");
    err.replace(&file.display().to_string(), "F")
}

fn options() -> LaunchOptions {
    LaunchOptions {
        arguments: Vec::new(),
        index: PackageIndex {
            prefixes: vec![],
            fallback_dirs: vec![],
        },
    }
}

fn nested_groups(depth: usize) -> String {
    format!(
        "<launch>\n{}<let name=\"x\" value=\"1\"/>{}\n</launch>\n",
        "<group>".repeat(depth),
        "</group>".repeat(depth)
    )
}

#[test]
fn a_thousand_nested_groups_are_refused_at_the_element_past_the_limit() {
    let err = error_of(&nested_groups(1000));
    // <launch> is level 1, so the 64th <group> (column 1 + 63 * 7) is the first one too deep.
    let column = 1 + 63 * "<group>".len();
    let wanted = format!("F:2:{column}: elements nest deeper than 64 levels");
    assert!(err.starts_with(&wanted), "\n wanted: {wanted}\n    got: {err}");
}

#[test]
fn nesting_up_to_the_limit_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deep.launch.xml");
    std::fs::write(&file, nested_groups(limits::MAX_DEPTH - 1)).unwrap();
    let plan = plan_file(&file, &options()).unwrap();
    assert_eq!(plan.processes.len(), 0);
}

#[test]
fn a_million_nested_elements_are_refused_before_the_xml_parser_recurses() {
    // The XML parser recurses once per level: this overflows any stack unless refused first.
    let depth = 1_000_000;
    let xml = format!("<launch>{}{}</launch>", "<x>".repeat(depth), "</x>".repeat(depth));
    let err = error_of(&xml);
    let column = 1 + "<launch>".len() + 63 * "<x>".len();
    let wanted = format!("F:1:{column}: elements nest deeper than 64 levels in this file (limit 64)");
    assert!(err.starts_with(&wanted), "\n wanted: {wanted}\n    got: {err}");
}

#[test]
fn a_file_including_itself_is_an_include_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("loop.launch.xml");
    std::fs::write(&file, "<launch>\n  <include file=\"$(filename)\"/>\n</launch>\n").unwrap();
    let err = error_of_file(&file);
    assert!(err.starts_with("F:2:3: include cycle: F includes F"), "{err}");
}

#[test]
fn files_including_each_other_are_an_include_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.launch.xml");
    let b = dir.path().join("b.launch.xml");
    std::fs::write(
        &a,
        "<launch>\n  <include file=\"$(dirname)/b.launch.xml\"/>\n</launch>\n",
    )
    .unwrap();
    std::fs::write(
        &b,
        "<launch>\n\n  <include file=\"$(dirname)/a.launch.xml\"/>\n</launch>\n",
    )
    .unwrap();
    let err = error_of_file(&a).replace(&b.display().to_string(), "B");
    assert!(
        err.starts_with("B:3:3: include cycle: F includes B, which includes F"),
        "{err}"
    );
}

#[test]
fn a_long_include_chain_is_refused_at_the_depth_limit() {
    let dir = tempfile::tempdir().unwrap();
    for level in 0..100 {
        let xml = format!(
            "<launch>\n  <include file=\"$(dirname)/f{}.launch.xml\"/>\n</launch>\n",
            level + 1
        );
        std::fs::write(dir.path().join(format!("f{level}.launch.xml")), xml).unwrap();
    }
    std::fs::write(dir.path().join("f100.launch.xml"), "<launch/>").unwrap();
    let err = error_of_file(&dir.path().join("f0.launch.xml"));
    // Each file adds two levels (its <launch> and its <include>): f32's <launch> is the 65th.
    let f32 = dir.path().join("f32.launch.xml").display().to_string();
    assert!(
        err.starts_with(&format!("{f32}:1:1: elements nest deeper than 64 levels")),
        "{err}"
    );
}

#[test]
fn an_include_fan_out_is_bounded() {
    // Each file includes the next one twice: 2^20 includes without a bound.
    let dir = tempfile::tempdir().unwrap();
    for level in 0..20 {
        let include = format!("<include file=\"$(dirname)/f{}.launch.xml\"/>", level + 1);
        let xml = format!("<launch>\n  {include}\n  {include}\n</launch>\n");
        std::fs::write(dir.path().join(format!("f{level}.launch.xml")), xml).unwrap();
    }
    std::fs::write(dir.path().join("f20.launch.xml"), "<launch/>").unwrap();
    let err = error_of_file(&dir.path().join("f0.launch.xml"));
    assert!(
        err.contains("more than 1000 included files (limit of one launch)"),
        "{err}"
    );
}

#[test]
fn thirty_two_doubling_lets_stop_at_the_value_size_limit() {
    let mut xml = String::from("<launch>\n  <let name=\"a0\" value=\"0123456789abcdef\"/>\n");
    for i in 1..=32 {
        xml += &format!(
            "  <let name=\"a{i}\" value=\"$(var a{})$(var a{})\"/>\n",
            i - 1,
            i - 1
        );
    }
    xml += "</launch>\n";
    let err = error_of(&xml);
    // 16 bytes doubled 16 times is 1 MiB; the 17th doubling (line 19) is too long.
    assert!(
        err.starts_with(
            "F:19:26: the value grows past 1 MiB (1048576 bytes), the limit of one expanded value"
        ),
        "{err}"
    );
}

#[test]
fn too_many_substitutions_in_one_file_are_refused() {
    let many = "$(var e)".repeat(limits::MAX_SUBSTITUTIONS_PER_FILE + 1);
    let xml = format!(
        "<launch>\n  <let name=\"e\" value=\"\"/>\n  <let name=\"x\" value=\"{many}\"/>\n</launch>\n"
    );
    let err = error_of(&xml);
    assert!(
        err.starts_with("F:3:24: more than 100000 substitutions in one file (limit 100000)"),
        "{err}"
    );
}

#[test]
fn deeply_nested_substitutions_are_refused() {
    let deep = format!("{}x{}", "$(var ".repeat(10_000), ")".repeat(10_000));
    let xml = format!("<launch>\n  <let name=\"x\" value=\"{deep}\"/>\n</launch>\n");
    let err = error_of(&xml);
    assert!(
        err.starts_with("F:2:24: substitutions nest deeper than 64 `$(` levels"),
        "{err}"
    );
}

#[test]
fn copying_a_large_scope_into_many_groups_is_bounded() {
    // A 1 MiB value copied by 1,000 groups would be 1 GiB.
    let mut xml = String::from("<launch>\n  <let name=\"a0\" value=\"0123456789abcdef\"/>\n");
    for i in 1..=16 {
        xml += &format!(
            "  <let name=\"a{i}\" value=\"$(var a{})$(var a{})\"/>\n",
            i - 1,
            i - 1
        );
    }
    xml += &"  <group><let name=\"y\" value=\"1\"/></group>\n".repeat(1000);
    xml += "</launch>\n";
    let err = error_of(&xml);
    assert!(
        err.contains("would copy more than 64 MiB (67108864 bytes) of text"),
        "{err}"
    );
}

#[test]
fn a_launch_file_larger_than_the_limit_is_refused_before_parsing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.launch.xml");
    let mut xml = String::from("<launch>\n");
    xml += &" ".repeat(limits::MAX_FILE_BYTES);
    xml += "</launch>\n";
    std::fs::write(&file, xml).unwrap();
    let err = error_of_file(&file);
    assert!(
        err.starts_with(
            "F:1:1: the file is larger than 16 MiB (16777216 bytes), the limit of one launch file"
        ),
        "{err}"
    );
}

#[test]
fn a_file_that_is_not_utf8_names_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("latin1.launch.xml");
    std::fs::write(
        &file,
        b"<launch>\n  <let name=\"x\" value=\"caf\xe9\"/>\n</launch>\n",
    )
    .unwrap();
    let err = error_of_file(&file);
    assert!(
        err.starts_with("F: not UTF-8 text (invalid byte at offset 35)"),
        "{err}"
    );
}

#[test]
fn too_many_processes_are_refused() {
    let xml = format!(
        "<launch>\n{}</launch>\n",
        "<executable cmd=\"true\"/>\n".repeat(limits::MAX_PROCESSES + 1)
    );
    let err = error_of(&xml);
    assert!(
        err.starts_with("F:1002:1: more than 1000 processes (limit of one launch)"),
        "{err}"
    );
}

#[test]
fn an_error_quoting_a_newline_stays_on_one_line() {
    let err = error_of("<launch>\n  <let name=\"x\" value=\"$(var 'a&#10;b')\"/>\n</launch>\n");
    assert!(
        err.starts_with("F:2:24: $(var a\\nb): no launch argument or `let` named `a\\nb`"),
        "{err}"
    );
    let err = error_of("<launch>\n  <arg name=\"a&#13;b\"/>\n</launch>\n");
    assert!(err.starts_with("F:2:3: argument `a\\rb` has no value"), "{err}");
}

#[test]
fn sigterm_timeout_is_finite_and_in_range() {
    assert_eq!(sigterm_timeout(5.0).unwrap(), Duration::from_secs(5));
    assert_eq!(sigterm_timeout(0.0).unwrap(), Duration::ZERO);
    assert!(sigterm_timeout(1e300)
        .unwrap_err()
        .to_string()
        .starts_with("--sigterm-timeout 1e300: "));
    assert!(sigterm_timeout(-1e-300)
        .unwrap_err()
        .to_string()
        .starts_with("--sigterm-timeout -1e-300: "));
    for bad in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -1.0,
        1e300,
        3600.5,
        -1e-300,
    ] {
        let err = sigterm_timeout(bad).unwrap_err().to_string();
        assert!(
            err.contains("--sigterm-timeout") && err.contains("[0, 3600]"),
            "{bad}: {err}"
        );
    }
}
