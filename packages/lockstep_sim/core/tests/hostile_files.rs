//! Scene files, drive scripts and `sim_facts` texts as an attacker or a bad editor would write them: every
//! parser returns a value or an error naming the place, never panics, and refuses sizes that would exhaust
//! memory before allocating them.

use lockstep_sim::{parse_facts, DriveScript, Scene};
use proptest::prelude::*;

/// Tokens the scene, drive and facts syntaxes use, plus numbers that overflow or are not finite.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_owned()),
        Just("1".to_owned()),
        Just("-1".to_owned()),
        Just("nan".to_owned()),
        Just("inf".to_owned()),
        Just("1e308".to_owned()),
        Just("1e-320".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("9223372036854775807".to_owned()),
        Just("#".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just(".".to_owned()),
        Just(",".to_owned()),
        Just(":-".to_owned()),
        Just("\"".to_owned()),
        Just("wet_floor".to_owned()),
        Just("load_kg".to_owned()),
        Just("\n".to_owned()),
        "[a-z_]{1,8}",
        "[0-9.eE+-]{1,12}",
        any::<char>().prop_map(|c| c.to_string()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(token(), 0..200).prop_map(|t| t.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn scene_parse_never_panics(body in text(), columns in 0usize..5000, rows in 0usize..5000) {
        let _ = Scene::parse(&format!("{columns} {rows} 0.5\n{body}"), "fuzz.scene");
        let _ = Scene::parse(&body, "fuzz.scene");
    }

    #[test]
    fn drive_parse_never_panics_and_commands_stay_finite(body in text(), at in any::<f64>()) {
        if let Ok(script) = DriveScript::parse(&body, "fuzz.drive") {
            for repeat in [false, true] {
                if let Some((v, w)) = script.command_at(at, repeat) {
                    prop_assert!(v.is_finite() && w.is_finite());
                }
            }
        }
    }

    #[test]
    fn facts_parse_never_panics(body in text()) {
        let _ = parse_facts(&body, "/sim_facts");
    }
}

#[test]
fn a_scene_header_asking_for_more_cells_than_memory_allows_is_refused_before_allocating() {
    let err = Scene::parse("4294967296 4294967296 0.5\n0\n", "huge.scene").err();
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("huge.scene:1"), "{message}");
}

#[test]
fn facts_nested_thousands_deep_are_an_error_not_a_stack_overflow() {
    // Run on a thread with a small stack, as a node's worker thread would be, so that recursion without a
    // depth limit fails here rather than passing on a large main-thread stack.
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let deep = format!("load_kg({}1.0{}).", "(".repeat(2000), ")".repeat(2000));
            parse_facts(&deep, "/sim_facts").err().map(|e| e.to_string())
        })
        .map(|h| h.join());
    let message = match handle {
        Ok(Ok(Some(message))) => message,
        other => panic!("expected a depth error, got {other:?}"),
    };
    assert!(message.contains("/sim_facts:1:"), "{message}");
}

#[test]
fn a_drive_segment_of_overflowing_numbers_is_refused_with_its_line() {
    let err = DriveScript::parse("0.5 0 1\n1e999 0 1\n", "bad.drive").err();
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("bad.drive") && message.contains('2'),
        "{message}"
    );
}
