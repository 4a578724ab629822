//! Hostile and broken rule texts: nesting, length and size limits give a one-line error with the place, and
//! long texts load in time linear in their length.

// Test helpers panic on failure: a panic is the test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{error, rules};
use lockstep_rules::limits::{MAX_BODY_LITERALS, MAX_NESTING, MAX_TEXT_BYTES};
use lockstep_rules::{Engine, Error, Facts, RuleSet, Value};

fn nested(open: &str, inner: &str, close: &str, depth: usize) -> String {
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
}

/// The one diagnostic of `err`, as its text, checked to be one line that names `test.dl:line:column`.
fn one_line(err: &Error) -> String {
    let all = err.diagnostics();
    assert_eq!(all.len(), 1, "expected one diagnostic, got:\n{err}");
    let text = all[0].to_string();
    assert!(!text.contains('\n'), "not one line: {text}");
    assert!(text.starts_with("test.dl:"), "no place: {text}");
    text
}

#[test]
fn two_thousand_parentheses_give_the_depth_error() {
    let deep = nested("(", "X", ")", 2000);
    let texts = [
        format!("a(X) :- b({deep})."),
        format!("a(X) :- b(X), Y = {deep}, c(Y)."),
        format!("a({deep}) :- b(X)."),
        format!("a(X) :- b(X), Y = {}, c(Y).", nested("abs(", "X", ")", 2000)),
        format!("a(X) :- b(X), Y = {}, c(Y).", nested("min(1, ", "X", ")", 2000)),
        format!("a(X) :- b(X), Y = {}X, c(Y).", "-".repeat(2000)),
        format!("a(X) :- b(X), Y = X{}, c(Y).", " + X".repeat(2000)),
        format!("a(X) :- b(X), Y = X{}, c(Y).", " * X".repeat(2000)),
        format!("a(C) :- b(Z), C = sum X + {deep} : {{ b(X) }}."),
        // Unclosed: the depth error comes before the end of the text.
        format!("a(X) :- b({}", "(".repeat(2000)),
    ];
    for text in &texts {
        let msg = one_line(&error(text));
        assert!(
            msg.contains(&format!("nested deeper than {MAX_NESTING} levels")),
            "{msg}"
        );
    }
    // The place is where the limit is crossed: the 257th `(` of `b(((...`, the first being b's own.
    let msg = one_line(&error(&format!("a(X) :- b({deep}).")));
    assert!(msg.starts_with("test.dl:1:267:"), "{msg}");
}

#[test]
fn nesting_below_the_limit_loads_and_evaluates() {
    let depth = MAX_NESTING as usize - 10;
    let text = format!(
        "a(Y) :- b(X), Y = {}.\nn(Y) :- b(X), Y = {}X.\nm(Y) :- b(X), Y = {}.",
        nested("(", "X + 1", ")", depth),
        "-".repeat(depth),
        nested("abs(", "X", ")", depth / 2),
    );
    let mut engine = Engine::new(rules(&text));
    let mut facts = Facts::new();
    facts.add("b", [3]);
    engine.tick(&facts).unwrap();
    assert_eq!(engine.query("a").unwrap(), vec![vec![Value::from(4)]]);
    let sign = if depth % 2 == 0 { 3 } else { -3 };
    assert_eq!(engine.query("n").unwrap(), vec![vec![Value::from(sign)]]);
    assert_eq!(engine.query("m").unwrap(), vec![vec![Value::from(3)]]);
}

#[test]
fn many_function_arguments_are_not_too_deep() {
    // min/max over many arguments folds as a balanced tree: 1,000 arguments are 10 levels, not 999.
    let args: Vec<String> = (0..1000).map(|i| format!("X + {i}")).collect();
    let text = format!(
        "lo(Y) :- b(X), Y = min({}).\nhi(Y) :- b(X), Y = max({}).",
        args.join(", "),
        args.join(", ")
    );
    let mut engine = Engine::new(rules(&text));
    let mut facts = Facts::new();
    facts.add("b", [5]);
    engine.tick(&facts).unwrap();
    assert_eq!(engine.query("lo").unwrap(), vec![vec![Value::from(5)]]);
    assert_eq!(engine.query("hi").unwrap(), vec![vec![Value::from(1004)]]);
}

#[test]
fn a_body_longer_than_the_limit_is_refused_and_the_limit_itself_evaluates() {
    let body = |n: usize| (0..n).map(|i| format!("b(X{i})")).collect::<Vec<_>>().join(", ");
    let msg = one_line(&error(&format!("a(X0) :- {}.", body(MAX_BODY_LITERALS + 1))));
    assert!(
        msg.contains(&format!("longer than the limit of {MAX_BODY_LITERALS}")),
        "{msg}"
    );
    // Arithmetic arguments count: each is one more literal.
    let args = (0..MAX_BODY_LITERALS)
        .map(|i| format!("X + {i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let msg = one_line(&error(&format!("a(X) :- b(X), c({args}).")));
    assert!(msg.contains("longer than the limit"), "{msg}");
    // The next clause still parses: its own error is reported too.
    let err = error(&format!("a(X0) :- {}.\nq(X) :- .", body(300)));
    assert_eq!(err.diagnostics().len(), 2, "{err}");

    // A body at the limit is evaluated one recursion level per literal: it must fit the stack of a thread.
    let text = format!("a(X0) :- {}.", body(MAX_BODY_LITERALS));
    let mut engine = Engine::new(rules(&text));
    let mut facts = Facts::new();
    facts.add("b", [1]);
    engine.tick(&facts).unwrap();
    assert_eq!(engine.query("a").unwrap(), vec![vec![Value::from(1)]]);
}

#[test]
fn a_text_over_the_size_limit_is_refused() {
    let text = format!("a.\n%{}", "x".repeat(MAX_TEXT_BYTES));
    let msg = one_line(&error(&text));
    assert!(msg.contains("larger than the limit of 16777216 bytes"), "{msg}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.dl");
    std::fs::write(&path, text).unwrap();
    let err = RuleSet::load(&path).unwrap_err();
    assert!(err.to_string().contains("larger than the limit"), "{err}");
}

#[test]
fn a_file_that_is_not_utf8_names_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.dl");
    std::fs::write(&path, b"a(1).\n\xff b.\n").unwrap();
    let err = RuleSet::load(&path).unwrap_err();
    assert!(err.to_string().contains("invalid byte at offset 6"), "{err}");
}

#[test]
fn recursive_rules_over_the_plan_budget_are_refused() {
    // Each rule is planned once per recursive atom: 40 rules of 255 recursive atoms are ~2.6 million steps.
    let rule = format!("a(X) :- b(X){}.\n", ", a(X)".repeat(255));
    let err = error(&rule.repeat(40));
    let msg = one_line(&err);
    assert!(msg.contains("join steps"), "{msg}");
    // A few of them are fine.
    rules(&rule.repeat(2));
}

#[test]
fn errors_are_capped() {
    let err = error(&"p(.\n".repeat(10_000));
    let all = err.diagnostics();
    assert_eq!(all.len(), 101, "{err}");
    assert!(
        all[100]
            .to_string()
            .contains("too many errors; stopped after 100"),
        "{}",
        all[100]
    );
}

#[test]
fn a_long_negation_cycle_is_reported_without_recursing_per_predicate() {
    // 20,000 predicates on one cycle: finding the components must not recurse once per predicate.
    let n = 20_000;
    let text: String = (0..n).map(|i| format!("p{i} :- !p{}.\n", (i + 1) % n)).collect();
    let err = error(&text);
    assert!(
        err.diagnostics().len() <= 100,
        "{} diagnostics",
        err.diagnostics().len()
    );
    assert!(err.to_string().contains("cannot be stratified"), "{err}");
}

/// The shortest of three timings of `f` (the machine is shared: the minimum is the least disturbed).
fn best_of_three(mut f: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// One line of `n` bytes or more: facts, rules with arithmetic, negation and comparisons, comments, strings.
fn long_line(n: usize) -> String {
    let mut line = String::with_capacity(n + 200);
    let mut i = 0;
    while line.len() < n {
        line.push_str(&format!(
            "f{i}(X, \"s {i}\") :- g(X), X = (X + {i}) * 2 - abs(X), !h{i}(X), X < {i}.5. /* c */ f(\"t\", {i}). "
        ));
        i += 1;
    }
    line
}

#[test]
fn a_one_megabyte_line_loads_in_linear_time() {
    let small = long_line(128 * 1024);
    let large = long_line(1024 * 1024);
    let load = |text: &str| {
        let rules = rules(text);
        assert!(rules.rule_count() > 0);
    };
    let t_small = best_of_three(|| load(&small));
    let t_large = best_of_three(|| load(&large));
    // 8 times the text: linear is ~8 times the time (a little more as caches fill), quadratic ~64 times.
    assert!(
        t_large < t_small * 30,
        "1 MiB took {t_large:?}, 128 KiB took {t_small:?}: not linear"
    );
}

#[test]
fn long_lines_of_errors_and_one_long_rule_are_linear_too() {
    type Make = fn(usize) -> String;
    let cases: [(&str, Make); 3] = [
        ("unclosed", |n| format!("a(X) :- b({}", "(X, ".repeat(n / 4))),
        ("errors", |n| "p(X) :- q(X) r(X). ".repeat(n / 19)),
        ("long comparison", |n| {
            let sum = (0..n / 8).map(|i| format!("X{}", i % 50)).collect::<Vec<_>>();
            // Balanced parentheses keep the depth low; the expression holds every variable.
            let mut level: Vec<String> = sum;
            while level.len() > 1 {
                level = level.chunks(2).map(|c| format!("({})", c.join(" + "))).collect();
            }
            let vars = (0..50).map(|i| format!("X{i}")).collect::<Vec<_>>().join(", ");
            format!("a(Y) :- b({vars}), Y = {}.", level[0])
        }),
    ];
    for (what, make) in cases {
        let small = make(128 * 1024);
        let large = make(1024 * 1024);
        let t_small = best_of_three(|| drop(RuleSet::parse(&small, "test.dl")));
        let t_large = best_of_three(|| drop(RuleSet::parse(&large, "test.dl")));
        assert!(
            t_large < t_small * 30,
            "{what}: 1 MiB took {t_large:?}, 128 KiB took {t_small:?}: not linear"
        );
    }
}

#[test]
fn the_limit_fits_the_stack_of_a_spawned_thread() {
    // Tokio's and std's threads have 2 MiB stacks: loading at the limit, or far past it, must fit there.
    for depth in [MAX_NESTING as usize - 1, 5000] {
        for open in ["(", "abs(", "min(1, ", "max(X, "] {
            let text = format!("a(Y) :- b(X), Y = {}.", nested(open, "X", ")", depth));
            let thread = std::thread::Builder::new().stack_size(2 << 20);
            let loaded = thread
                .spawn(move || RuleSet::parse(&text, "test.dl").is_ok())
                .unwrap();
            assert_eq!(
                loaded.join().unwrap(),
                depth < MAX_NESTING as usize,
                "{open} x {depth}"
            );
        }
    }
}
