//! Property test: semi-naive evaluation agrees with a naive evaluator written here, independently of the
//! engine, on random positive and stratified-negation programs.

// Helpers of the property test panic on failure: a panic is the test failure report.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use lockstep_rules::{Engine, Facts, RuleSet, Value};
use proptest::prelude::*;

/// Predicates: `e0`, `e1` are inputs (arity 2); `i0..i3` are derived, `i<k>` at stratum k, arity 1 or 2.
const IDB: usize = 4;

fn idb_arity(k: usize) -> usize {
    if k % 2 == 0 {
        2
    } else {
        1
    }
}

#[derive(Debug, Clone)]
enum Term {
    Var(usize),
    Const(i64),
}

#[derive(Debug, Clone)]
struct Atom {
    pred: String,
    args: Vec<Term>,
}

#[derive(Debug, Clone)]
struct Rule {
    head: Atom,
    pos: Vec<Atom>,
    neg: Vec<Atom>,
    /// `Var(a) < Var(b)` filters.
    less: Vec<(usize, usize)>,
}

fn arity(pred: &str) -> usize {
    match pred.strip_prefix('i') {
        Some(k) => idb_arity(k.parse().unwrap()),
        None => 2,
    }
}

fn render_term(t: &Term) -> String {
    match t {
        Term::Var(v) => format!("V{v}"),
        Term::Const(c) => c.to_string(),
    }
}

fn render_atom(a: &Atom) -> String {
    let args: Vec<String> = a.args.iter().map(render_term).collect();
    format!("{}({})", a.pred, args.join(", "))
}

fn render(rules: &[Rule]) -> String {
    let mut out = String::new();
    for r in rules {
        let mut body: Vec<String> = r.pos.iter().map(render_atom).collect();
        body.extend(r.neg.iter().map(|a| format!("!{}", render_atom(a))));
        body.extend(r.less.iter().map(|(a, b)| format!("V{a} < V{b}")));
        out.push_str(&format!("{} :- {}.\n", render_atom(&r.head), body.join(", ")));
    }
    out
}

/// Random rule for derived predicate `k`: positive atoms over inputs and derived predicates up to `k`,
/// negations of inputs and of derived predicates below `k`, over variables the positive atoms bind.
fn rule_strategy(k: usize) -> impl Strategy<Value = Rule> {
    // The rule's own predicate is weighted up so that bodies often hold it twice (nonlinear recursion,
    // where semi-naive evaluation must split each join into delta and old parts correctly).
    let pos_pred = prop_oneof![
        2 => Just("e0".to_string()),
        2 => Just("e1".to_string()),
        2 => (0..=k).prop_map(|j| format!("i{j}")),
        3 => Just(format!("i{k}")),
    ];
    let term = prop_oneof![4 => (0usize..3).prop_map(Term::Var), 1 => (0i64..4).prop_map(Term::Const)];
    let pos_atom = (pos_pred, prop::collection::vec(term, 2)).prop_map(|(pred, mut args)| {
        args.truncate(arity(&pred));
        Atom { pred, args }
    });
    let neg_pred = if k == 0 {
        prop_oneof![Just("e0".to_string()), Just("e1".to_string())].boxed()
    } else {
        prop_oneof![
            Just("e0".to_string()),
            Just("e1".to_string()),
            (0..k).prop_map(|j| format!("i{j}"))
        ]
        .boxed()
    };
    (
        prop::collection::vec(pos_atom, 1..=3),
        prop::collection::vec(
            (neg_pred, prop::collection::vec(any::<prop::sample::Index>(), 2)),
            0..=1,
        ),
        prop::collection::vec(
            (any::<prop::sample::Index>(), any::<prop::sample::Index>()),
            0..=1,
        ),
        prop::collection::vec(any::<prop::sample::Index>(), 2),
    )
        .prop_map(move |(pos, negs, less, head_pick)| {
            let mut bound: Vec<usize> = pos
                .iter()
                .flat_map(|a| a.args.iter())
                .filter_map(|t| if let Term::Var(v) = t { Some(*v) } else { None })
                .collect();
            bound.sort_unstable();
            bound.dedup();
            let pick = |i: &prop::sample::Index| -> Term {
                if bound.is_empty() {
                    Term::Const(1)
                } else {
                    Term::Var(bound[i.index(bound.len())])
                }
            };
            let neg = negs
                .iter()
                .map(|(pred, idx)| Atom {
                    pred: pred.clone(),
                    args: idx.iter().take(arity(pred)).map(pick).collect(),
                })
                .collect();
            let less = if bound.is_empty() {
                Vec::new()
            } else {
                less.iter()
                    .map(|(a, b)| (bound[a.index(bound.len())], bound[b.index(bound.len())]))
                    .collect()
            };
            let head_pred = format!("i{k}");
            let head = Atom {
                args: head_pick.iter().take(arity(&head_pred)).map(pick).collect(),
                pred: head_pred,
            };
            Rule { head, pos, neg, less }
        })
}

fn program_strategy() -> impl Strategy<Value = Vec<Rule>> {
    let per_pred: Vec<_> = (0..IDB)
        .map(|k| prop::collection::vec(rule_strategy(k), 1..=3))
        .collect();
    per_pred.prop_map(|rules| rules.into_iter().flatten().collect())
}

type Db = BTreeMap<String, BTreeSet<Vec<i64>>>;

/// Every binding of the rule's variables that satisfies its body against `db`, by nested loops.
fn solve(rule: &Rule, db: &Db, i: usize, env: &mut [Option<i64>; 3], out: &mut BTreeSet<Vec<i64>>) {
    if let Some(atom) = rule.pos.get(i) {
        let empty = BTreeSet::new();
        for tuple in db.get(&atom.pred).unwrap_or(&empty) {
            let saved = *env;
            let ok = atom.args.iter().zip(tuple).all(|(t, &v)| match t {
                Term::Const(c) => *c == v,
                Term::Var(x) => match env[*x] {
                    Some(b) => b == v,
                    None => {
                        env[*x] = Some(v);
                        true
                    }
                },
            });
            if ok {
                solve(rule, db, i + 1, env, out);
            }
            *env = saved;
        }
        return;
    }
    let value = |t: &Term, env: &[Option<i64>; 3]| match t {
        Term::Const(c) => *c,
        Term::Var(x) => env[*x].unwrap(),
    };
    for atom in &rule.neg {
        let tuple: Vec<i64> = atom.args.iter().map(|t| value(t, env)).collect();
        if db.get(&atom.pred).is_some_and(|s| s.contains(&tuple)) {
            return;
        }
    }
    if rule
        .less
        .iter()
        .any(|(a, b)| env[*a].unwrap() >= env[*b].unwrap())
    {
        return;
    }
    out.insert(rule.head.args.iter().map(|t| value(t, env)).collect());
}

/// Naive evaluation: stratum by stratum, apply every rule to everything until nothing changes.
fn naive(rules: &[Rule], edb: &Db) -> Db {
    let mut db = edb.clone();
    for k in 0..IDB {
        let pred = format!("i{k}");
        db.entry(pred.clone()).or_default();
        loop {
            let mut derived = BTreeSet::new();
            for rule in rules.iter().filter(|r| r.head.pred == pred) {
                solve(rule, &db, 0, &mut [None; 3], &mut derived);
            }
            let rel = db.get_mut(&pred).unwrap();
            let before = rel.len();
            rel.extend(derived);
            if rel.len() == before {
                break;
            }
        }
    }
    db
}

fn edges() -> impl Strategy<Value = Vec<(i64, i64)>> {
    prop::collection::vec((0i64..6, 0i64..6), 0..14)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn semi_naive_matches_naive(rules in program_strategy(), e0 in edges(), e1 in edges()) {
        let text = render(&rules);
        let mut edb = Db::new();
        let mut facts = Facts::new();
        for (name, list) in [("e0", &e0), ("e1", &e1)] {
            edb.insert(name.to_string(), list.iter().map(|&(a, b)| vec![a, b]).collect());
            for &(a, b) in list {
                facts.add(name, [a, b]);
            }
        }
        let mut engine = Engine::new(RuleSet::parse(&text, "random.dl").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?);
        engine.assert_facts(&facts).unwrap();
        engine.evaluate().unwrap();
        let expected = naive(&rules, &edb);
        for k in 0..IDB {
            let pred = format!("i{k}");
            let ours: Vec<Vec<i64>> = engine
                .query(&pred)
                .unwrap()
                .into_iter()
                .map(|t| t.into_iter().map(|v: Value| v.as_i64().unwrap()).collect())
                .collect();
            let theirs: Vec<Vec<i64>> = expected[&pred].iter().cloned().collect();
            prop_assert_eq!(ours, theirs, "predicate {} of\n{}", pred, text);
        }
    }
}
