//! Evaluation semantics: recursion, stratified negation, comparisons, arithmetic, ticks, reloads.

// Test helpers panic on failure: a panic is the test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{ints, rules, run};
use lockstep_rules::{Engine, Error, Facts, RuleSet, Value};

const CLOSURE: &str = "
    path(X, Y) :- edge(X, Y).
    path(X, Z) :- path(X, Y), edge(Y, Z).
";

#[test]
fn transitive_closure_of_a_chain_with_a_cycle() {
    let mut facts = Facts::new();
    for (a, b) in [(1, 2), (2, 3), (3, 4), (4, 2)] {
        facts.add("edge", [a, b]);
    }
    let engine = run(CLOSURE, &facts);
    let expected = ints(&[
        &[1, 2],
        &[1, 3],
        &[1, 4],
        &[2, 2],
        &[2, 3],
        &[2, 4],
        &[3, 2],
        &[3, 3],
        &[3, 4],
        &[4, 2],
        &[4, 3],
        &[4, 4],
    ]);
    assert_eq!(engine.query("path").unwrap(), expected);
    assert_eq!(engine.count("path").unwrap(), 12);
}

#[test]
fn nonlinear_recursion_matches_linear() {
    let nonlinear = "path(X, Y) :- edge(X, Y).\npath(X, Z) :- path(X, Y), path(Y, Z).";
    let mut facts = Facts::new();
    for i in 0..30 {
        facts.add("edge", [i, (i * 7 + 3) % 30]);
        facts.add("edge", [i, (i + 1) % 31]);
    }
    assert_eq!(
        run(nonlinear, &facts).query("path").unwrap(),
        run(CLOSURE, &facts).query("path").unwrap()
    );
}

#[test]
fn mutual_recursion() {
    let text = "
        even(0).
        even(N) :- odd(M), N = M + 1, N <= 10.
        odd(N) :- even(M), N = M + 1, N <= 10.
    ";
    let engine = run(text, &Facts::new());
    assert_eq!(
        engine.query("even").unwrap(),
        ints(&[&[0], &[2], &[4], &[6], &[8], &[10]])
    );
    assert_eq!(
        engine.query("odd").unwrap(),
        ints(&[&[1], &[3], &[5], &[7], &[9]])
    );
}

#[test]
fn stratified_negation() {
    let text = "
        node(X) :- edge(X, _).
        node(Y) :- edge(_, Y).
        reach(X) :- start(X).
        reach(Y) :- reach(X), edge(X, Y).
        unreachable(X) :- node(X), !reach(X).
        isolated(X) :- node(X), not reach(X), not edge(X, _).
    ";
    let mut facts = Facts::new();
    facts.add("start", [1]);
    for (a, b) in [(1, 2), (2, 3), (4, 5), (5, 4), (6, 4)] {
        facts.add("edge", [a, b]);
    }
    let engine = run(text, &facts);
    assert_eq!(engine.query("reach").unwrap(), ints(&[&[1], &[2], &[3]]));
    assert_eq!(engine.query("unreachable").unwrap(), ints(&[&[4], &[5], &[6]]));
    assert_eq!(engine.query("isolated").unwrap(), ints(&[]));
}

#[test]
fn negation_of_a_nullary_and_of_an_absent_predicate() {
    let text = "go :- !stop.\nwait :- stop.\n";
    let engine = run(text, &Facts::new());
    assert!(engine.contains("go", [0i64; 0]).unwrap());
    assert!(!engine.contains("wait", [0i64; 0]).unwrap());
    let mut facts = Facts::new();
    facts.flag("stop");
    let engine = run(text, &facts);
    assert!(!engine.contains("go", [0i64; 0]).unwrap());
    assert!(engine.contains("wait", [0i64; 0]).unwrap());
}

#[test]
fn comparisons_and_arithmetic() {
    let text = "
        near(D) :- dist(D), D < 2.5.
        far(D) :- dist(D), D >= 2.5.
        double(Y) :- num(X), Y = X * 2.
        shifted(X, Y) :- num(X), Y = (X + 1) * 3 - 4 / 2.
        ratio(R) :- num(X), X != 0, R = 10 / X.
        fratio(R) :- num(X), R = X / 4.0.
        neg(Y) :- num(X), Y = -X.
        same :- num(X), X = 2.0.
        sym_lt(A, B) :- name(A), name(B), A < B.
        head_expr(X + 100) :- num(X).
    ";
    let mut facts = Facts::new();
    facts.add("dist", [1.0]).add("dist", [2.5]).add("dist", [3.0]);
    facts.add("num", [0]).add("num", [2]).add("num", [-3]);
    facts.add("name", ["b"]).add("name", ["a"]);
    let e = run(text, &facts);
    assert_eq!(e.query("near").unwrap(), vec![vec![Value::from(1.0)]]);
    assert_eq!(
        e.query("far").unwrap(),
        vec![vec![Value::from(2.5)], vec![Value::from(3.0)]]
    );
    assert_eq!(e.query("double").unwrap(), ints(&[&[-6], &[0], &[4]]));
    assert_eq!(e.query("shifted").unwrap(), ints(&[&[-3, -8], &[0, 1], &[2, 7]]));
    // Integer division truncates toward zero.
    assert_eq!(e.query("ratio").unwrap(), ints(&[&[-3], &[5]]));
    assert_eq!(
        e.query("fratio").unwrap(),
        vec![
            vec![Value::from(-0.75)],
            vec![Value::from(0.0)],
            vec![Value::from(0.5)]
        ]
    );
    assert_eq!(e.query("neg").unwrap(), ints(&[&[-2], &[0], &[3]]));
    assert!(
        e.contains("same", [0i64; 0]).unwrap(),
        "2 = 2.0 compares numerically"
    );
    assert_eq!(
        e.query("sym_lt").unwrap(),
        vec![vec![Value::from("a"), Value::from("b")]]
    );
    assert_eq!(e.query("head_expr").unwrap(), ints(&[&[97], &[100], &[102]]));
}

#[test]
fn undefined_arithmetic_derives_nothing() {
    let text =
        "q(Y) :- p(X), Y = 10 / X.\nr(Y) :- p(X), Y = X + 9223372036854775807.\ns(Y) :- n(X), Y = X + 1.";
    let mut facts = Facts::new();
    facts.add("p", [0]).add("p", [1]).add("n", ["sym"]);
    let e = run(text, &facts);
    assert_eq!(e.query("q").unwrap(), ints(&[&[10]]));
    // 0 + max fits, 1 + max overflows.
    assert_eq!(e.query("r").unwrap(), ints(&[&[i64::MAX]]));
    assert_eq!(e.query("s").unwrap(), ints(&[]));
}

#[test]
fn assignment_chains_in_any_order() {
    let text = "r(Z) :- Z = Y * 2, Y = X + 1, p(X).";
    let mut facts = Facts::new();
    facts.add("p", [1]);
    assert_eq!(run(text, &facts).query("r").unwrap(), ints(&[&[4]]));
}

#[test]
fn repeated_variables_and_constants_in_atoms() {
    let text =
        "loop(X) :- edge(X, X).\nfrom_one(Y) :- edge(1, Y).\nboth(X) :- edge(X, Y), edge(Y, X), X < Y.";
    let mut facts = Facts::new();
    for (a, b) in [(1, 1), (1, 2), (2, 1), (3, 3), (2, 4)] {
        facts.add("edge", [a, b]);
    }
    let e = run(text, &facts);
    assert_eq!(e.query("loop").unwrap(), ints(&[&[1], &[3]]));
    assert_eq!(e.query("from_one").unwrap(), ints(&[&[1], &[2]]));
    assert_eq!(e.query("both").unwrap(), ints(&[&[1]]));
}

#[test]
fn disjunction_makes_one_rule_per_alternative() {
    let text = "ok(X) :- a(X) | b(X), X > 1 | c(X).";
    let mut facts = Facts::new();
    facts.add("a", [1]).add("b", [1]).add("b", [2]).add("c", [7]);
    let e = run(text, &facts);
    assert_eq!(e.query("ok").unwrap(), ints(&[&[1], &[2], &[7]]));
    assert_eq!(e.rules().rule_count(), 3);
}

#[test]
fn symbols_strings_and_floats_in_rule_facts() {
    let text = r#"
        % facts may sit in rule files
        label(1, asphalt).
        label(2, "wet asphalt").
        label(3, "asphalt").
        speed(1, 2.5e0).
        speed(2, -1.5).
        named(N) :- label(_, N).
    "#;
    let e = run(text, &Facts::new());
    // `asphalt` and "asphalt" are one value.
    assert_eq!(
        e.query("named").unwrap(),
        vec![vec![Value::from("asphalt")], vec![Value::from("wet asphalt")]]
    );
    let speeds = e.query("speed").unwrap();
    assert_eq!(f64::try_from(speeds[1][1]).unwrap(), -1.5);
    assert_eq!(speeds[0][1].as_f64(), Some(2.5));
    assert_eq!(<&str>::try_from(Value::from("ice")).unwrap(), "ice");
    assert_eq!(i64::try_from(Value::from(4)).unwrap(), 4);
    assert!(i64::try_from(Value::from("x")).is_err());
    assert_eq!(Value::from("wet asphalt").to_string(), "\"wet asphalt\"");
    assert_eq!(Value::from(2.0).to_string(), "2.0");
}

#[test]
fn output_is_sorted_and_deterministic() {
    let text = "r(X, Y) :- p(X), q(Y).";
    let build = |reverse: bool| {
        let mut facts = Facts::new();
        let mut values: Vec<Value> = vec![
            3.into(),
            "b".into(),
            1.5.into(),
            "a".into(),
            (-2).into(),
            2.0.into(),
        ];
        if reverse {
            values.reverse();
        }
        for v in &values {
            facts.add("p", [*v]);
            facts.add("q", [*v]);
        }
        run(text, &facts).query("r").unwrap()
    };
    let forward = build(false);
    assert_eq!(forward, build(true));
    let mut sorted = forward.clone();
    sorted.sort();
    assert_eq!(forward, sorted);
    assert_eq!(forward.len(), 36);
    // Numbers (by value) before symbols (by text).
    assert_eq!(forward[0], vec![Value::from(-2), Value::from(-2)]);
    assert_eq!(forward[35], vec![Value::from("b"), Value::from("b")]);
}

#[test]
fn tick_facts_are_cleared_rule_facts_persist() {
    let mut engine = Engine::new(rules("limit(5).\nover(X) :- reading(X), limit(L), X > L."));
    engine.assert_fact("reading", [7]).unwrap();
    engine.evaluate().unwrap();
    assert_eq!(engine.query("over").unwrap(), ints(&[&[7]]));
    assert_eq!(engine.query("reading").unwrap(), ints(&[&[7]]));
    // Next tick: no readings asserted, so nothing is over; the rule file's fact stays.
    engine.evaluate().unwrap();
    assert_eq!(engine.query("over").unwrap(), ints(&[]));
    assert_eq!(engine.query("limit").unwrap(), ints(&[&[5]]));
    let mut facts = Facts::new();
    facts.add("reading", [9]).add("reading", [1]);
    engine.tick(&facts).unwrap();
    assert_eq!(engine.query("over").unwrap(), ints(&[&[9]]));
}

#[test]
fn fact_arity_is_checked_and_batches_are_atomic() {
    let mut engine = Engine::new(rules("r(X) :- p(X, _)."));
    let mut facts = Facts::new();
    facts.add("p", [1, 2]).add("p", [3]);
    let err = engine.assert_facts(&facts).unwrap_err();
    assert!(matches!(err, Error::FactArity { ref predicate, expected: 2, found: 1, .. } if predicate == "p"));
    assert!(err.to_string().contains("test.dl:1:9"), "{err}");
    engine.evaluate().unwrap();
    assert_eq!(
        engine.query("r").unwrap(),
        ints(&[]),
        "nothing of the failed batch was added"
    );
}

#[test]
fn unknown_predicates() {
    let mut engine = Engine::new(rules("r(X) :- p(X)."));
    assert!(matches!(
        engine.query("nope"),
        Err(Error::UnknownPredicate { .. })
    ));
    engine.assert_fact("extra", [1, 2]).unwrap();
    assert!(matches!(
        engine.assert_fact("extra", [1]),
        Err(Error::InconsistentFacts { .. })
    ));
    engine.evaluate().unwrap();
    assert_eq!(engine.query("extra").unwrap(), ints(&[&[1, 2]]));
}

#[test]
fn replacing_rules_is_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.dl");
    std::fs::write(&path, "out(X) :- in(X), X > 1.").unwrap();
    let mut engine = Engine::new(RuleSet::load(&path).unwrap());
    engine.assert_fact("in", [2]).unwrap();
    engine.evaluate().unwrap();
    assert_eq!(engine.query("out").unwrap(), ints(&[&[2]]));

    // A broken edit: the engine keeps the old rules.
    std::fs::write(&path, "out(X) :- in(Y).").unwrap();
    let err = engine.reload(&[&path]).unwrap_err();
    assert!(
        err.to_string().contains("r.dl:1:5: error: variable `X` in head"),
        "{err}"
    );
    engine.assert_fact("in", [3]).unwrap();
    engine.evaluate().unwrap();
    assert_eq!(engine.query("out").unwrap(), ints(&[&[3]]));

    // A good edit takes effect; facts asserted before the swap are kept.
    std::fs::write(&path, "out(Y) :- in(X), Y = X * 10.").unwrap();
    engine.assert_fact("in", [4]).unwrap();
    engine.reload(&[&path]).unwrap();
    engine.evaluate().unwrap();
    assert_eq!(engine.query("out").unwrap(), ints(&[&[40]]));

    let missing = engine.reload(&[dir.path().join("missing.dl")]).unwrap_err();
    assert!(matches!(missing, Error::Io { .. }));
}

#[test]
fn unbounded_generation_hits_the_tuple_limit() {
    let mut engine = Engine::new(rules("n(0).\nn(M) :- n(N), M = N + 1."));
    engine.set_max_tuples(10_000);
    assert!(matches!(
        engine.evaluate(),
        Err(Error::TupleLimit { limit: 10_000 })
    ));
    assert_eq!(engine.count("n").unwrap(), 0);
}

#[test]
fn unbounded_generation_one_row_per_round_hits_the_time_limit() {
    let mut engine = Engine::new(rules("n(0).\nn(M) :- n(N), M = N + 1."));
    engine.set_max_seconds(0.3);
    let started = std::time::Instant::now();
    let e = engine.evaluate().unwrap_err();
    assert!(matches!(e, Error::TimeLimit { .. }), "{e}");
    // Generous: the limit is checked after each round, and a round here is one row.
    assert!(started.elapsed().as_secs_f64() < 30.0);
    assert_eq!(engine.count("n").unwrap(), 0);
}

#[test]
fn several_sources_form_one_program() {
    let rules = RuleSet::parse_sources(&[
        ("a(1).\nb(X) :- a(X).", "one.dl"),
        ("c(X) :- b(X), !d(X).", "two.dl"),
    ])
    .unwrap();
    assert_eq!(rules.derived_predicates(), vec!["b", "c"]);
    assert_eq!(rules.predicates(), vec![("a", 1), ("b", 1), ("c", 1), ("d", 1)]);
    let mut engine = Engine::new(rules);
    engine.evaluate().unwrap();
    assert_eq!(engine.query("c").unwrap(), ints(&[&[1]]));
}

#[test]
fn rule_file_from_disk() {
    let mut engine = Engine::new(RuleSet::load(common::data("reach.dl")).unwrap());
    engine.evaluate().unwrap();
    let syms = |names: &[&str]| names.iter().map(|n| vec![Value::from(*n)]).collect::<Vec<_>>();
    assert_eq!(engine.query("reach").unwrap(), syms(&["a", "b", "c"]));
    assert_eq!(engine.query("unreached").unwrap(), syms(&["d", "e"]));
    assert!(engine.rules().origins()[0].ends_with("tests/data/reach.dl"));
}

#[test]
fn arithmetic_in_body_atom_arguments() {
    // Fibonacci by recursion on N - 1 and N - 2; a negated atom with arithmetic; 2 = 2.0 as in comparisons.
    let text = "
        fib(0, 0). fib(1, 1).
        fib(N, X) :- n(N), N > 1, fib(N - 1, A), fib(N - 2, B), X = A + B.
        first(N) :- n(N), !n(N - 1).
        half(N) :- n(N), n(N / 2 * 2 - N + N / 2), N > 0, N / 2 * 2 = N.
        float_match(N) :- n(N), f(N * 1.0).
    ";
    let mut facts = Facts::new();
    for n in 2..=10 {
        facts.add("n", [n]);
    }
    facts.add("f", [Value::from(4.0)]);
    let engine = run(text, &facts);
    let fib: Vec<Vec<Value>> = engine.query("fib").unwrap();
    assert!(fib.contains(&ints(&[&[10, 55]])[0]), "{fib:?}");
    assert_eq!(fib.len(), 11);
    assert_eq!(engine.query("first").unwrap(), ints(&[&[2]]));
    // n(N/2) exists for N in 4..=10 with N even: 4, 6, 8, 10.
    assert_eq!(engine.query("half").unwrap(), ints(&[&[4], &[6], &[8], &[10]]));
    assert_eq!(engine.query("float_match").unwrap(), ints(&[&[4]]));
}

#[test]
fn min_max_and_abs_functions() {
    let text = "
        spread(Lo, Hi) :- v(A), w(B), Lo = min(A, B), Hi = max(A, B, 0).
        size(X, M) :- v(X), M = abs(X).
        clipped(X) :- v(X), abs(X - 1) <= 2.
        capped(C) :- v(X), C = min(X, 2.5).
        near(X) :- v(X), w(max(X, 2)).
    ";
    let mut facts = Facts::new();
    for v in [-3, 1, 4] {
        facts.add("v", [v]);
    }
    facts.add("w", [2]);
    let engine = run(text, &facts);
    assert_eq!(
        engine.query("spread").unwrap(),
        ints(&[&[-3, 2], &[1, 2], &[2, 4]])
    );
    assert_eq!(engine.query("size").unwrap(), ints(&[&[-3, 3], &[1, 1], &[4, 4]]));
    assert_eq!(engine.query("clipped").unwrap(), ints(&[&[1]]));
    // min keeps its argument's type: 2.5 for 4, the integers for the others.
    assert_eq!(
        engine.query("capped").unwrap(),
        vec![
            vec![Value::from(-3)],
            vec![Value::from(1)],
            vec![Value::from(2.5)]
        ]
    );
    assert_eq!(engine.query("near").unwrap(), ints(&[&[-3], &[1]]));
}

#[test]
fn an_integer_and_an_equal_float_are_one_value() {
    // Joins, lookups and duplicate removal agree with comparisons (`2 = 2.0` holds).
    let text = "
        p(2). q(2.0). r(1). r(1.0). r(1.5).
        both(X) :- p(X), q(X).
        keyed(Y) :- p(X), s(X, Y).
        all(X) :- r(X).
    ";
    let mut facts = Facts::new();
    facts.add("s", [Value::from(2.0), Value::from(7)]);
    facts.add("s", [Value::from(2.5), Value::from(8)]);
    let engine = run(text, &facts);
    assert_eq!(engine.query("both").unwrap(), ints(&[&[2]]));
    assert_eq!(engine.query("keyed").unwrap(), ints(&[&[7]]));
    // r(1) and r(1.0) are one fact: the first one written stays.
    assert_eq!(
        engine.query("all").unwrap(),
        vec![vec![Value::from(1)], vec![Value::from(1.5)]]
    );
    assert_eq!(Value::from(2), Value::from(2.0));
    assert_ne!(Value::from(2), Value::from(2.5));
}

#[test]
fn modulo_and_block_comments() {
    let text = "
        /* even and odd numbers,
           with a block comment */
        even(N) :- n(N), N mod 2 = 0.   % a clingo-style comment
        rem(N, R) :- n(N), R = N mod 3 * 10.   // mod binds like * and /
        neg(R) :- R = -7 mod 3.
        half(X) :- x(X), X mod 1.0 = 0.5.
    ";
    let mut facts = Facts::new();
    for n in 1..=4 {
        facts.add("n", [n]);
    }
    facts.add("x", [Value::from(2.5)]);
    facts.add("x", [Value::from(3.0)]);
    let engine = run(text, &facts);
    assert_eq!(engine.query("even").unwrap(), ints(&[&[2], &[4]]));
    assert_eq!(
        engine.query("rem").unwrap(),
        ints(&[&[1, 10], &[2, 20], &[3, 0], &[4, 10]])
    );
    // The sign of the dividend, as C's and Soufflé's `%`.
    assert_eq!(engine.query("neg").unwrap(), ints(&[&[-1]]));
    assert_eq!(engine.query("half").unwrap(), vec![vec![Value::from(2.5)]]);
}

#[test]
fn aggregates_count_sum_min_max() {
    let text = "
        out_degree(X, C) :- node(X), C = count : { edge(X, _) }.
        weight_sum(X, S) :- node(X), S = sum W : { edge(X, W) }.
        lightest(X, M) :- node(X), M = min W : { edge(X, W) }.
        heaviest(M) :- M = max W * 2 : { edge(_, W) }.
        total(C) :- C = count : { edge(_, _) }.
        has_three(X) :- node(X), C = count : { edge(X, _) }, C = 3.
    ";
    let mut facts = Facts::new();
    for n in [1, 2, 3] {
        facts.add("node", [n]);
    }
    for (a, w) in [(1, 5), (1, 7), (1, 2), (2, 4)] {
        facts.add("edge", [a, w]);
    }
    let engine = run(text, &facts);
    // A node without edges counts 0 and sums 0; min over no row derives nothing (Soufflé's semantics).
    assert_eq!(
        engine.query("out_degree").unwrap(),
        ints(&[&[1, 3], &[2, 1], &[3, 0]])
    );
    assert_eq!(
        engine.query("weight_sum").unwrap(),
        ints(&[&[1, 14], &[2, 4], &[3, 0]])
    );
    assert_eq!(engine.query("lightest").unwrap(), ints(&[&[1, 2], &[2, 4]]));
    assert_eq!(engine.query("heaviest").unwrap(), ints(&[&[14]]));
    assert_eq!(engine.query("total").unwrap(), ints(&[&[4]]));
    assert_eq!(engine.query("has_three").unwrap(), ints(&[&[1]]));
}
