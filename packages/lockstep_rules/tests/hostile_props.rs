//! Property tests of the rules parser on random and structure-aware hostile input: it never panics or
//! overflows the stack, and either loads the rules or returns one-line diagnostics with a place.

// Test helpers panic on failure: a panic is the test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lockstep_rules::limits::MAX_NESTING;
use lockstep_rules::{Error, RuleSet};
use proptest::prelude::*;

/// Every diagnostic is one line, and a syntax error names `origin:line:column`.
fn well_formed(err: &Error, origin: &str) {
    for d in err.diagnostics() {
        let text = d.to_string();
        assert!(!text.contains('\n'), "not one line: {text}");
        if let Error::Parse { .. } = d {
            assert!(text.starts_with(&format!("{origin}:")), "no place: {text}");
        }
    }
}

fn load(text: &str) {
    if let Err(e) = RuleSet::parse(text, "prop.dl") {
        well_formed(&e, "prop.dl");
    }
}

/// The tokens of the language (and a few near misses), to build random token soup.
fn token() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a",
        "b",
        "p",
        "edge",
        "not",
        "count",
        "sum",
        "min",
        "max",
        "abs",
        "mod",
        "X",
        "Y",
        "_",
        "_Z",
        "0",
        "1",
        "-3",
        "2.5",
        "1e3",
        "9999999999999999999999",
        "\"s\"",
        "\"",
        "(",
        ")",
        "{",
        "}",
        ",",
        ".",
        ":-",
        ":",
        "!",
        "|",
        "=",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "+",
        "-",
        "*",
        "/",
        "%",
        "//",
        "/*",
        "*/",
        ".decl",
        ".input",
        ".output",
        "number",
        "symbol",
        "\n",
        " ",
        "é",
        "\u{0}",
    ])
}

/// A random expression of bounded size (as the grammar allows it: operators, signs, calls, parentheses).
fn expr() -> impl Strategy<Value = String> {
    let leaf =
        prop::sample::select(vec!["X", "Y", "1", "2.5", "-4", "sym", "\"s\"", "_"]).prop_map(String::from);
    leaf.prop_recursive(6, 48, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec!["+", "-", "*", "/", "mod"]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            inner.clone().prop_map(|a| format!("({a})")),
            inner.clone().prop_map(|a| format!("-{a}")),
            inner.clone().prop_map(|a| format!("abs({a})")),
            prop::collection::vec(inner, 1..4).prop_map(|v| format!("min({})", v.join(", "))),
        ]
    })
}

/// How one nesting level opens and closes.
fn nesting_kind() -> impl Strategy<Value = (&'static str, &'static str)> {
    prop::sample::select(vec![
        ("(", ")"),
        ("abs(", ")"),
        ("min(1, ", ")"),
        ("max(", ", 2)"),
        ("(X + ", ")"),
        ("-(", ")"),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(token(), 0..200)) {
        load(&tokens.join(" "));
        load(&tokens.concat());
    }

    #[test]
    fn random_text_never_panics(text in "\\PC{0,300}") {
        load(&text);
    }

    #[test]
    fn random_bytes_in_a_file_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bytes.dl");
        std::fs::write(&path, &bytes).unwrap();
        if let Err(e) = RuleSet::load(&path) {
            let text = e.to_string();
            prop_assert!(text.contains("bytes.dl"), "{}", text);
            for d in e.diagnostics() {
                prop_assert!(!d.to_string().contains('\n'), "{}", d);
            }
        }
    }

    #[test]
    fn random_rules_load_or_give_diagnostics(
        head in expr(),
        lhs in expr(),
        rhs in expr(),
        arg in expr(),
        op in prop::sample::select(vec!["=", "!=", "<", "<=", ">", ">="]),
    ) {
        load(&format!("p({head}) :- q(X, Y), {lhs} {op} {rhs}, !r({arg}).\nq(1, 2). q(2.5, sym)."));
        load(&format!("p(C) :- q(X, Y), C = sum {arg} : {{ q(X, _) }}."));
    }

    #[test]
    fn deep_nesting_of_any_kind_is_refused_past_the_limit(
        kinds in prop::collection::vec(nesting_kind(), 1..8),
        depth in 0usize..5000,
    ) {
        let (mut open, mut close) = (String::new(), String::new());
        for i in 0..depth {
            let (o, c) = kinds[i % kinds.len()];
            open.push_str(o);
            close.insert_str(0, c);
        }
        let text = format!("a(X) :- b(X), Y = {open}X{close}, c(Y).");
        let result = RuleSet::parse(&text, "prop.dl");
        // Each level nests the expression one deeper at least; `(X + ` adds an operator too.
        if depth >= MAX_NESTING as usize {
            let err = result.expect_err("past the limit but loaded");
            well_formed(&err, "prop.dl");
            prop_assert!(err.to_string().contains("nested deeper than"), "{}", err);
        } else if let Err(err) = result {
            well_formed(&err, "prop.dl");
            prop_assert!(err.to_string().contains("nested deeper than"), "{}", err);
        }
    }

    #[test]
    fn long_lines_never_panic(
        unit in prop::sample::select(vec!["p(1). ", "p(X) :- q(X), X < 2. ", "((", "))", "\"x", "/*", "a :- b | c. ", "X = "]),
        n in 1usize..20_000,
    ) {
        load(&unit.repeat(n));
    }
}
