//! Random launch files, built from the tags, attributes and substitutions `lockstep launch` reads (and
//! some it does not), mangled, or plain random bytes: reading one never panics, never hangs, and ends in
//! either a plan or a one-line error that names the file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::index;

use std::path::Path;
use std::time::{Duration, Instant};

use lockstep_launch::subst::{self, SubstEnv};
use lockstep_launch::{limits, plan_file, LaunchOptions};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

/// A piece of an attribute value: text, well-formed substitutions, and broken ones.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_/.]{0,6}",
        Just("$(var x)".to_string()),
        Just("$(var y)".to_string()),
        Just("$(var $(var which))".to_string()),
        Just("$(find-pkg-share demo)".to_string()),
        Just("$(find-pkg-share nope)".to_string()),
        Just("$(find-pkg-prefix demo)".to_string()),
        Just("$(env HOME)".to_string()),
        Just("$(env LOCKSTEP_UNSET 'a b')".to_string()),
        Just("$(env LOCKSTEP_UNSET)".to_string()),
        Just("$(dirname)".to_string()),
        Just("$(filename)".to_string()),
        Just("$(anon n)".to_string()),
        Just("$(eval 1)".to_string()),
        Just("$(".to_string()),
        Just("$(var".to_string()),
        Just(")".to_string()),
        Just("&apos;".to_string()),
        Just("&quot;".to_string()),
        Just("&lt;".to_string()),
        Just("&amp;".to_string()),
        Just("&#10;".to_string()),
        Just("&#9;&#13;".to_string()),
        Just(" ".to_string()),
        Just("true".to_string()),
        Just("1e308".to_string()),
        Just("-0".to_string()),
        Just("NaN".to_string()),
        Just("é\u{1F600}".to_string()),
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..4).prop_map(|parts| parts.concat())
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("x".to_string()),
        Just("y".to_string()),
        Just("which".to_string()),
        value()
    ]
}

/// Optional `if`/`unless`, and now and then an attribute no tag has.
fn extra() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => Just(String::new()),
        1 => value().prop_map(|v| format!(" if=\"{v}\"")),
        2 => prop_oneof![Just("true"), Just("false"), Just("1"), Just("0")]
            .prop_map(|v| format!(" unless=\"{v}\"")),
        1 => Just(" bogus=\"1\"".to_string()),
    ]
}

fn include_target() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("$(dirname)/inc.launch.xml".to_string()),
        Just("$(filename)".to_string()),
        Just("/nonexistent.launch.xml".to_string()),
        Just("$(dirname)/x.launch.py".to_string()),
        value(),
    ]
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        (name(), value(), extra()).prop_map(|(n, v, e)| format!("<let name=\"{n}\" value=\"{v}\"{e}/>")),
        (name(), value(), extra()).prop_map(|(n, v, e)| format!("<arg name=\"{n}\" default=\"{v}\"{e}/>")),
        name().prop_map(|n| format!("<arg name=\"{n}\"/>")),
        (value(), value(), value(), value(), extra()).prop_map(|(exec, n, ns, p, e)| format!(
            "<node pkg=\"demo\" exec=\"{exec}\" name=\"{n}\" namespace=\"{ns}\" output=\"screen\"{e}>\
             <param name=\"p\" value=\"{p}\"/><param name=\"l\" value=\"{p}\" value-sep=\",\"/>\
             <remap from=\"{n}\" to=\"{p}\"/><env name=\"E\" value=\"{p}\"/></node>"
        )),
        (value(), extra()).prop_map(|(n, e)| format!("<node pkg=\"demo\" exec=\"talker\" name=\"{n}\"{e}/>")),
        (value(), extra()).prop_map(|(c, e)| format!("<executable cmd=\"{c}\" output=\"log\"{e}/>")),
        (name(), value()).prop_map(|(n, v)| format!("<set_env name=\"{n}\" value=\"{v}\"/>")),
        name().prop_map(|n| format!("<unset_env name=\"{n}\"/>")),
        value().prop_map(|v| format!("<push-ros-namespace namespace=\"{v}\"/>")),
        (value(), value()).prop_map(|(a, b)| format!("<set_remap from=\"{a}\" to=\"{b}\"/>")),
        (name(), value()).prop_map(|(n, v)| format!("<set_parameter name=\"{n}\" value=\"{v}\"/>")),
        (include_target(), name(), value(), extra()).prop_map(|(f, n, v, e)| format!(
            "<include file=\"{f}\"{e}><arg name=\"{n}\" value=\"{v}\"/></include>"
        )),
        Just("<timer period=\"1\"/>".to_string()),
        Just("<!-- <group> -->".to_string()),
    ]
}

/// Elements nested at random: groups (scoped or not, with conditions) holding elements.
fn element() -> impl Strategy<Value = String> {
    leaf().prop_recursive(8, 64, 6, |inner| {
        (
            prop::collection::vec(inner, 0..6),
            prop_oneof![4 => Just(""), 4 => Just(" scoped=\"false\""), 1 => Just(" scoped=\"maybe\"")],
            extra(),
        )
            .prop_map(|(children, scoped, e)| format!("<group{scoped}{e}>{}</group>", children.concat()))
    })
}

fn launch_file() -> impl Strategy<Value = String> {
    prop::collection::vec(element(), 0..8)
        .prop_map(|elements| format!("<launch>\n{}\n</launch>\n", elements.join("\n")))
}

/// A launch file, sometimes cut short or with a byte changed.
fn mangled_launch_file() -> impl Strategy<Value = String> {
    (launch_file(), 0..4u8, any::<prop::sample::Index>(), any::<char>()).prop_map(|(text, how, at, c)| {
        let boundaries: Vec<usize> = (0..=text.len()).filter(|i| text.is_char_boundary(*i)).collect();
        let cut = boundaries[at.index(boundaries.len())];
        match how {
            0 => text[..cut].to_string(),
            1 => format!("{}{c}{}", &text[..cut], &text[cut..]),
            _ => text,
        }
    })
}

/// Reads `main` (with `inc` beside it, for includes) and checks the outcome.
fn check(main: &[u8], inc: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("main.launch.xml");
    std::fs::write(&file, main).unwrap();
    std::fs::write(dir.path().join("inc.launch.xml"), inc).unwrap();
    let options = LaunchOptions {
        arguments: vec![("which".into(), "x".into())],
        index: index(&dir.path().join("prefix")),
    };
    let started = Instant::now();
    let result = plan_file(&file, &options);
    prop_assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    match result {
        Ok(plan) => prop_assert!(plan.processes.len() <= limits::MAX_PROCESSES),
        Err(err) => {
            let text = err.to_string();
            prop_assert!(!text.contains('\n'), "one line: {text}");
            prop_assert!(
                text.starts_with(&dir.path().display().to_string()),
                "names the file: {text}"
            );
        }
    }
    Ok(())
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x1a0c_57e9),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(160))]

    #[test]
    fn random_launch_files_plan_or_fail_with_a_clear_error(
        main in mangled_launch_file(),
        inc in mangled_launch_file(),
    ) {
        check(main.as_bytes(), inc.as_bytes())?;
    }

    #[test]
    fn random_bytes_fail_with_a_clear_error(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..2048),
            "\\PC{0,512}".prop_map(String::into_bytes),
            prop::collection::vec(any::<char>(), 0..512).prop_map(|c| c.into_iter().collect::<String>().into_bytes()),
        ],
        launch_prefix in any::<bool>(),
    ) {
        let mut main = if launch_prefix { b"<launch>".to_vec() } else { Vec::new() };
        main.extend(bytes);
        check(&main, &main)?;
    }

    #[test]
    fn random_substitution_text_expands_or_fails_within_the_bounds(
        parts in prop::collection::vec(prop_oneof![fragment(), any::<char>().prop_map(String::from)], 0..40),
    ) {
        let text = parts.concat();
        let mut env = Env;
        let mut bounds = subst::Bounds { max_value_bytes: 64, ..subst::Bounds::default() };
        if let Ok(value) = subst::expand_bounded(&text, &mut env, &mut bounds) {
            prop_assert!(value.len() <= 64);
        }
    }
}

struct Env;

impl SubstEnv for Env {
    fn var(&self, name: &str) -> Option<String> {
        matches!(name, "x" | "which").then(|| "x".repeat(20))
    }
    fn env(&self, _name: &str) -> Option<String> {
        None
    }
    fn file(&self) -> &Path {
        Path::new("/ws/f.launch.xml")
    }
    fn package_prefix(&self, package: &str) -> Option<std::path::PathBuf> {
        (package == "demo").then(|| "/opt/ws".into())
    }
    fn anon(&mut self, name: &str) -> String {
        format!("{name}_1")
    }
}
