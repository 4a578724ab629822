//! Task configuration files as a bad editor or an attacker would write them: the shipped warehouse file with
//! lines dropped, values replaced by hostile ones and nesting piled up, and random text. Parsing returns a
//! configuration or an error naming the file, never panics; a configuration that loads decomposes its task
//! types or refuses them, also without a panic, whatever the goal's parameters.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{goal, warehouse_text};
use lockstep_tasks::{Config, Tree};
use proptest::prelude::*;
use serde_json::json;

/// Values a field may be given: wrong types, non-finite and huge numbers, deep or long structures.
fn hostile_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(".nan".to_owned()),
        Just("-.inf".to_owned()),
        Just("1e999".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("~".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        Just("\"\"".to_owned()),
        Just("*anchor".to_owned()),
        Just("&anchor x".to_owned()),
        Just("!!binary AAAA".to_owned()),
        Just("task".to_owned()),
        Just("move_material".to_owned()),
        (1usize..400).prop_map(|n| format!("{}0{}", "[".repeat(n), "]".repeat(n))),
        (1usize..400).prop_map(|n| "{a: ".repeat(n) + "0" + &"}".repeat(n)),
        "[a-z_{}\\[\\]:,\"' -]{0,40}",
    ]
}

/// The shipped file, mutated: per line, kept, dropped, or with its value (after the first `:`) replaced.
fn mutated_warehouse() -> impl Strategy<Value = String> {
    let lines: Vec<String> = warehouse_text().lines().map(str::to_owned).collect();
    let n = lines.len();
    prop::collection::vec((0u8..10, hostile_value()), n).prop_map(move |edits| {
        let mut out = String::new();
        for (line, (what, value)) in lines.iter().zip(edits) {
            match what {
                0 => {}
                1 => match line.split_once(':') {
                    Some((key, _)) => out += &format!("{key}: {value}\n"),
                    None => out += &format!("{line}\n"),
                },
                _ => out += &format!("{line}\n"),
            }
        }
        out
    })
}

fn decompose_everything(config: &Config) {
    let goals = [
        json!({"from": "A", "to": "B", "speed": 1.0}),
        json!({"from": "A", "to": "B", "speed": 1e308}),
        json!({"from": [], "to": {"x": 1}, "speed": -1.0}),
        json!({}),
    ];
    for task_type in config.task_types() {
        for g in &goals {
            let _ = Tree::decompose(config, task_type, &goal(g.clone()));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn a_mutated_configuration_loads_or_is_refused_naming_the_file(text in mutated_warehouse()) {
        match Config::parse("warehouse.yaml", &text) {
            Ok(config) => decompose_everything(&config),
            Err(e) => prop_assert!(e.to_string().contains("warehouse.yaml"), "{e}"),
        }
    }

    #[test]
    fn random_text_never_panics(text in "\\PC{0,400}") {
        let _ = Config::parse("random.yaml", &text);
    }
}

#[test]
fn nesting_ten_thousand_deep_is_an_error_not_a_stack_overflow() {
    // On a small stack, as a node's worker thread has: recursion without a limit fails here.
    let result = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            let deep = format!("levels: {}task{}\n", "[".repeat(10_000), "]".repeat(10_000));
            Config::parse("deep.yaml", &deep).err().map(|e| e.to_string())
        })
        .unwrap()
        .join();
    let message = result.expect("no stack overflow").expect("refused");
    assert!(message.contains("deep.yaml"), "{message}");
}
