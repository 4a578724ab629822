//! Every static error class, with its exact `file:line:column`.

// Test helpers panic on failure: a panic is the test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::error;
use lockstep_rules::{Error, RuleSet, VariableContext};

fn only(err: &Error) -> &Error {
    let all = err.diagnostics();
    assert_eq!(all.len(), 1, "expected one diagnostic, got:\n{err}");
    all[0]
}

fn at(err: &Error) -> String {
    let loc = err.location().unwrap_or_else(|| panic!("no location in {err}"));
    format!("{}:{}", loc.line, loc.column)
}

#[test]
fn parse_errors() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "p(X) :- q(X)",
            "1:13",
            "expected `,`, `|` or `.` after a body literal, found end of file",
        ),
        ("p(X) :- q(X).\nr(X) : q(X).", "2:6", "expected `:-` after `:`"),
        (
            "p(1).\n  q(1, ).",
            "2:8",
            "expected a constant, a variable or `(`, found `)`",
        ),
        (
            "p(X) :- q(X), X <> 3.",
            "1:18",
            "expected a constant, a variable or `(`, found `>`",
        ),
        (
            "Big(X) :- q(X).",
            "1:1",
            "expected a fact or rule head (a lowercase predicate name), found variable `Big`",
        ),
        ("p(\"abc) :- q.", "1:3", "unterminated string"),
        ("p(1) :- q(1) # 2.", "1:14", "unexpected character `#`"),
        (
            "p(99999999999999999999).",
            "1:3",
            "integer `99999999999999999999` does not fit in 64 bits",
        ),
        (
            "p :- q, X.",
            "1:10",
            "expected a comparison operator (= != < <= > >=), found `.`",
        ),
        (
            "p(X) :- q(X)\n% comment\n  r(X).",
            "3:3",
            "expected `,`, `|` or `.` after a body literal, found `r`",
        ),
    ];
    for (text, pos, message) in cases {
        let err = error(text);
        let err = only(&err);
        assert!(matches!(err, Error::Parse { .. }), "{text}: {err:?}");
        assert_eq!(at(err), *pos, "{text}: {err}");
        assert_eq!(
            err.to_string(),
            format!("test.dl:{pos}: error: {message}"),
            "{text}"
        );
    }
}

#[test]
fn columns_count_characters_not_bytes() {
    let err = error("// überprüfung\np(\"größe\") :- q(1) q.");
    assert_eq!(at(only(&err)), "2:20");
}

#[test]
fn arity_mismatch_names_both_places() {
    let err = error("edge(1, 2).\nedge(3, 4).\npath(X) :- edge(X, Y, Z), Y = Z.");
    let err = only(&err);
    match err {
        Error::ArityMismatch {
            location,
            predicate,
            arity,
            first_location,
            first_arity,
        } => {
            assert_eq!((location.line, location.column), (3, 12));
            assert_eq!((first_location.line, first_location.column), (1, 1));
            assert_eq!((predicate.as_str(), *arity, *first_arity), ("edge", 3, 2));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "test.dl:3:12: error: predicate `edge` is used with 3 argument(s) here but with 2 at test.dl:1:1"
    );
}

#[test]
fn arity_mismatch_across_files() {
    let err = RuleSet::parse_sources(&[("p(1, 2).", "a.dl"), ("\n  q(X) :- p(X).", "b.dl")]).unwrap_err();
    assert_eq!(
        only(&err).to_string(),
        "b.dl:2:11: error: predicate `p` is used with 1 argument(s) here but with 2 at a.dl:1:1"
    );
}

#[test]
fn unsafe_variable_in_head() {
    let err = error("p(X, Y) :- q(X).");
    let err = only(&err);
    assert!(
        matches!(err, Error::UnsafeVariable { variable, context: VariableContext::Head, .. } if variable == "Y")
    );
    assert_eq!(
        err.to_string(),
        "test.dl:1:6: error: variable `Y` in head is not bound by a positive body atom"
    );
}

#[test]
fn unsafe_variable_in_fact_and_anonymous_head() {
    let err = error("p(X).\nq(_) :- r(1).");
    let all = err.diagnostics();
    assert_eq!(all.len(), 2, "{err}");
    assert_eq!(at(all[0]), "1:3");
    assert_eq!(at(all[1]), "2:3");
    assert!(all[1].to_string().contains("variable `_` in head"));
}

#[test]
fn unsafe_variable_only_in_negation() {
    let err = error("ok(X) :- p(X),\n    !q(X, Y).");
    let err = only(&err);
    assert!(
        matches!(err, Error::UnsafeVariable { context: VariableContext::Negation { predicate }, .. } if predicate == "q")
    );
    assert_eq!(
        err.to_string(),
        "test.dl:2:11: error: variable `Y` in negated atom `q` is not bound by a positive body atom"
    );
    // `_` in a negation is fine: "no q(X, anything)".
    common::rules("ok(X) :- p(X), !q(X, _).");
}

#[test]
fn unsafe_variable_in_comparison() {
    let err = error("small(X) :- p(X), X < Limit.");
    let err = only(&err);
    assert!(matches!(
        err,
        Error::UnsafeVariable {
            context: VariableContext::Comparison,
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "test.dl:1:23: error: variable `Limit` in comparison is not bound by a positive body atom"
    );
    // Two unbound sides of an assignment bind nothing.
    let err = error("r(X) :- p(X), Y = Z.");
    let all = err.diagnostics();
    assert_eq!(
        all.iter().map(|e| at(e)).collect::<Vec<_>>(),
        vec!["1:15", "1:19"]
    );
}

#[test]
fn arithmetic_inside_body_atom_needs_its_variables_bound() {
    // Arithmetic in a body atom's argument is allowed (tests/eval.rs); a variable in it that nothing binds is
    // an unsafe variable at its own place.
    let err = error("r(X) :- p(X), q(Y + 1).");
    let err = only(&err);
    assert!(
        matches!(err, Error::UnsafeVariable { variable, context: VariableContext::Argument { predicate }, .. }
            if variable == "Y" && predicate == "q"),
        "{err}"
    );
    assert_eq!(at(err), "1:17");
}

#[test]
fn unstratifiable_negation_names_the_cycle() {
    let text = "\
a(X) :- base(X), !b(X).
b(X) :- c(X).
c(X) :- a(X).
";
    let err = error(text);
    let err = only(&err);
    match err {
        Error::Unstratifiable {
            location,
            predicate,
            cycle,
        } => {
            assert_eq!((location.line, location.column), (1, 19));
            assert_eq!(predicate, "b");
            assert_eq!(cycle, &["a", "b", "c", "a"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "test.dl:1:19: error: negation of (or aggregate over) `b` is inside a recursive cycle (a -> b -> c -> a); the program \
         cannot be stratified"
    );
}

#[test]
fn negation_of_itself_is_unstratifiable() {
    let err = error("p(X) :- q(X), not p(X).");
    match only(&err) {
        Error::Unstratifiable { location, cycle, .. } => {
            assert_eq!((location.line, location.column), (1, 19));
            assert_eq!(cycle, &["p", "p"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn all_diagnostics_are_reported_in_order() {
    let text = "p(X) :- q(X, Y), Z > 1.\nq(1).\nr(X) :- s(X), !r(X).\n";
    let err = error(text);
    let lines: Vec<String> = err.diagnostics().iter().map(|e| e.to_string()).collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines[0].starts_with("test.dl:1:18: error: variable `Z` in comparison"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("test.dl:2:1: error: predicate `q` is used with 1"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("test.dl:3:16: error: negation of (or aggregate over) `r`"),
        "{}",
        lines[2]
    );
    assert_eq!(err.to_string(), lines.join("\n"));
}

#[test]
fn io_error_names_the_file() {
    let err = RuleSet::load("/nonexistent/rules.dl").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/nonexistent/rules.dl: error: cannot read rule file"),
        "{err}"
    );
}

#[test]
fn functions_with_the_wrong_number_of_arguments() {
    for (text, place, words) in [
        (
            "r(X) :- v(X), Y = abs(X, 1), Y > 0.",
            "1:19",
            "`abs` takes one argument(s), got 2",
        ),
        (
            "r(X) :- v(X), X < max(3).",
            "1:19",
            "`max` takes two or more argument(s), got 1",
        ),
    ] {
        let err = error(text);
        let err = only(&err);
        assert_eq!(at(err), place, "{err}");
        assert!(err.to_string().contains(words), "{err}");
    }
}

#[test]
fn an_unterminated_block_comment_is_named_where_it_starts() {
    let err = error("p(1).\n  /* never closed\nq(2).");
    let err = only(&err);
    assert_eq!(at(err), "2:3");
    assert!(err.to_string().contains("unterminated `/*` comment"), "{err}");
}

#[test]
fn every_clause_that_does_not_parse_is_reported() {
    let err = error("p(1.\nq(X) :- p(X).\nr(X) :- p(X) q(X).\ns(X) :- p(X), X >.\n");
    let places: Vec<String> = err.diagnostics().iter().map(|e| at(e)).collect();
    assert_eq!(places, ["1:4", "3:14", "4:18"], "{err}");
}

#[test]
fn aggregates_are_stratified_and_their_values_bound() {
    // Recursion through an aggregate: like negation, it must read a lower stratum.
    let err = error("p(X) :- q(X).\nq(C) :- C = count : { p(_) }.\n");
    let err = only(&err);
    assert!(matches!(err, Error::Unstratifiable { .. }), "{err}");
    // The aggregated value reads the atom's variables.
    let err = error("s(T) :- T = sum W : { e(_, V) }.\ne(1, 2).\n");
    let err = only(&err);
    assert!(
        matches!(err, Error::UnsafeVariable { variable, context: VariableContext::Aggregate { predicate }, .. }
            if variable == "W" && predicate == "e"),
        "{err}"
    );
    assert_eq!(at(err), "1:17");
}
