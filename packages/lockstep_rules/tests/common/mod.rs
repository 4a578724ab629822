//! Helpers shared by the integration tests.
// Helpers panic on failure: a panic is the test failure report.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use lockstep_rules::{Engine, Error, Facts, RuleSet, Value};

/// Parses `text` as `test.dl`, panicking with the diagnostics on error.
pub fn rules(text: &str) -> RuleSet {
    match RuleSet::parse(text, "test.dl") {
        Ok(r) => r,
        Err(e) => panic!("rules did not load:\n{e}"),
    }
}

/// The error `text` fails with.
pub fn error(text: &str) -> Error {
    match RuleSet::parse(text, "test.dl") {
        Ok(_) => panic!("rules loaded but should not have:\n{text}"),
        Err(e) => e,
    }
}

/// Evaluates `text` with `facts` and returns the engine for queries.
pub fn run(text: &str, facts: &Facts) -> Engine {
    let mut engine = Engine::new(rules(text));
    engine.assert_facts(facts).unwrap();
    engine.evaluate().unwrap();
    engine
}

/// Integer tuples, for comparing with query results.
pub fn ints(rows: &[&[i64]]) -> Vec<Vec<Value>> {
    rows.iter()
        .map(|r| r.iter().map(|&i| Value::from(i)).collect())
        .collect()
}

/// `config/rules/` of the repository.
pub fn config_rules() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/rules")
}

/// A test data file.
pub fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}
