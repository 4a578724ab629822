//! Warnings: rules that load but are likely mistakes.

// Test helpers panic on failure: a panic is the test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::rules;

#[test]
fn a_variable_used_once_and_an_undefined_predicate_are_warned_about() {
    let r = rules(
        "edge(1, 2).\n\
         path(X, Y) :- edge(X, Y).\n\
         path(X, Z) :- path(X, Y), edgee(Y, Z), weight(W).\n\
         lonely(X) :- edge(X, _), edge(X, _Unused).\n",
    );
    let text: Vec<String> = r.warnings(&[]).iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "test.dl:3:27: warning: `edgee` is used but never defined: no fact or rule has it in its head (a typo? \
             if its facts come from outside, name it as an input)",
            "test.dl:3:40: warning: `weight` is used but never defined: no fact or rule has it in its head (a typo? \
             if its facts come from outside, name it as an input)",
            "test.dl:3:47: warning: variable `W` occurs only once in this rule (write `_` or `_W` if that is meant)",
        ]
    );
    // Predicates whose facts come from outside are inputs, not typos.
    let inputs: Vec<String> = r
        .warnings(&["edgee", "weight"])
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(inputs.len(), 1, "{inputs:?}");
}

#[test]
fn the_shipped_rules_warn_only_about_the_simulator_inputs() {
    let r = lockstep_rules::RuleSet::load_all(&[
        common::config_rules().join("surface.dl"),
        common::config_rules().join("behaviour.dl"),
    ])
    .unwrap();
    let undefined: Vec<String> = r
        .warnings(&[])
        .iter()
        .map(|w| w.message.split('`').nth(1).unwrap_or_default().to_owned())
        .collect();
    assert!(undefined.contains(&"typecode".to_owned()) && undefined.contains(&"free_front".to_owned()));
    assert!(
        r.warnings(&[])
            .iter()
            .all(|w| w.message.contains("never defined")),
        "no singleton in them"
    );
}
