//! Planning: groups the checked rules into strata and compiles each rule into join plans (the order in
//! which its body literals run, and the hash indexes its lookups need).

use std::collections::HashSet;

use rustc_hash::FxHashMap;

use crate::check::{all_bound, positive_atom_vars, Checked, ResolvedRule};
use crate::parser::{Atom, CmpOp, Expr, Literal};
use crate::program::{assign_memos, Arg, CExpr, CRule, Program, Source, Step, Stratum};
use crate::value::Value;

/// Compiles a checked program: one [`Stratum`] per component that some rule derives, in evaluation order.
pub(crate) fn compile(checked: Checked<'_>) -> Program {
    let Checked {
        preds,
        pred_ids,
        base_facts,
        rules,
        components,
    } = checked;
    let mut index_specs: Vec<Vec<Vec<usize>>> = vec![Vec::new(); preds.len()];
    let mut strata = Vec::new();
    for (members, recursive) in components {
        let mut in_stratum = vec![false; preds.len()];
        for &p in &members {
            in_stratum[p] = true;
        }
        let mut compiled = Vec::new();
        for rule in rules.iter().filter(|r| in_stratum[r.head]) {
            compiled.push(compile_rule(rule, &in_stratum, recursive, &mut index_specs));
        }
        if !compiled.is_empty() {
            strata.push(Stratum::new(members, compiled, recursive));
        }
    }
    Program {
        preds,
        pred_ids,
        base_facts,
        strata,
        index_specs,
    }
}

struct Slots<'a> {
    names: FxHashMap<&'a str, usize>,
}

impl<'a> Slots<'a> {
    fn slot(&mut self, name: &'a str) -> usize {
        let n = self.names.len();
        *self.names.entry(name).or_insert(n)
    }

    fn expr(&mut self, e: &'a Expr) -> CExpr {
        match e {
            Expr::Const(v, _) => CExpr::Const(*v),
            Expr::Var(v, _) => CExpr::Slot(self.slot(v)),
            // Safety checks rejected anonymous variables in expressions before compilation.
            Expr::Anon(_) => CExpr::Const(Value::Int(0)),
            Expr::Neg(a, _) => CExpr::Neg(Box::new(self.expr(a))),
            Expr::Bin(op, a, b, _) => CExpr::Bin(*op, Box::new(self.expr(a)), Box::new(self.expr(b))),
        }
    }
}

/// The index of `pred` on `cols`, registered in `specs` on first use; `None` (read every row) when no
/// column is bound.
fn index_on(specs: &mut [Vec<Vec<usize>>], pred: usize, cols: Vec<usize>) -> Option<usize> {
    if cols.is_empty() {
        return None;
    }
    let list = &mut specs[pred];
    if let Some(i) = list.iter().position(|c| *c == cols) {
        return Some(i);
    }
    list.push(cols);
    Some(list.len() - 1)
}

/// The lookup-key argument of a constant or a bound variable (`None` for `_`).
fn key_arg<'a>(arg: &'a Expr, slots: &mut Slots<'a>) -> Option<Arg> {
    match arg {
        Expr::Const(v, _) => Some(Arg::Const(*v)),
        Expr::Var(v, _) => Some(Arg::Slot(slots.slot(v))),
        _ => None,
    }
}

fn compile_rule(
    rule: &ResolvedRule<'_>,
    in_stratum: &[bool],
    recursive: bool,
    specs: &mut [Vec<Vec<usize>>],
) -> CRule {
    let mut slots = Slots {
        names: FxHashMap::default(),
    };
    let mut full = join_plan(rule, None, in_stratum, &mut slots, specs);
    let mut memo = assign_memos(&mut full);
    let mut deltas = Vec::new();
    if recursive {
        for (i, (lit, pred)) in rule.clause.body.iter().zip(&rule.body_preds).enumerate() {
            if let (Literal::Pos(_), Some(p)) = (lit, *pred) {
                if in_stratum[p] {
                    let mut plan = join_plan(rule, Some(i), in_stratum, &mut slots, specs);
                    memo = memo.max(assign_memos(&mut plan));
                    deltas.push((p, plan));
                }
            }
        }
    }
    let head_args = rule.clause.head.args.iter().map(|a| slots.expr(a)).collect();
    CRule {
        head: rule.head,
        head_args,
        slots: slots.names.len(),
        full,
        deltas,
        memo,
    }
}

/// Orders the body: the delta atom first (it is the smallest input), then repeatedly every comparison or
/// negation whose variables are bound, then the positive atom with the most bound arguments.
fn join_plan<'a>(
    rule: &ResolvedRule<'a>,
    delta: Option<usize>,
    in_stratum: &[bool],
    slots: &mut Slots<'a>,
    specs: &mut [Vec<Vec<usize>>],
) -> Vec<Step> {
    let body = &rule.clause.body;
    let mut placed = vec![false; body.len()];
    let mut bound: HashSet<&str> = HashSet::new();
    let mut steps = Vec::new();
    let source_of = |k: usize, pred: usize| -> Source {
        match delta {
            Some(j) if in_stratum[pred] => match k.cmp(&j) {
                std::cmp::Ordering::Less => Source::All,
                std::cmp::Ordering::Equal => Source::Delta,
                std::cmp::Ordering::Greater => Source::Old,
            },
            _ => Source::All,
        }
    };
    // A variable that a positive atom binds is never assigned by `X = expr`: the comparison then tests the
    // atom's value (numerically, so `2 = 2.0` holds) instead of turning into a lookup of the exact value.
    let atom_vars = positive_atom_vars(body);
    // Per aggregate: the variables used outside it (in the head or another literal); those of its atom must
    // be bound before it runs, the others are its own.
    let outside: Vec<HashSet<&str>> = (0..body.len())
        .map(|k| {
            let mut vars = HashSet::new();
            let mut exprs: Vec<&Expr> = rule.clause.head.args.iter().collect();
            for (_, lit) in body.iter().enumerate().filter(|(j, _)| *j != k) {
                match lit {
                    Literal::Pos(a) | Literal::Neg(a) => exprs.extend(&a.args),
                    Literal::Cmp { lhs, rhs, .. } => exprs.extend([lhs, rhs]),
                    Literal::Agg {
                        target, value, atom, ..
                    } => {
                        vars.insert(target.as_str());
                        exprs.extend(value);
                        exprs.extend(&atom.args);
                    }
                }
            }
            for e in exprs {
                e.visit_vars(&mut |v, _| {
                    if let Some(v) = v {
                        vars.insert(v);
                    }
                });
            }
            vars
        })
        .collect();
    let mut next_atom = delta;
    loop {
        // Filters as early as possible: they prune the search before the next join.
        let mut changed = true;
        while changed {
            changed = false;
            for (k, lit) in body.iter().enumerate() {
                if placed[k] || next_atom == Some(k) {
                    continue;
                }
                match lit {
                    Literal::Pos(_) => {}
                    Literal::Agg {
                        target,
                        op,
                        value,
                        atom,
                        ..
                    } => {
                        let ready = atom.args.iter().all(|e| match e {
                            Expr::Var(v, _) => !outside[k].contains(v.as_str()) || bound.contains(v.as_str()),
                            _ => true,
                        });
                        if let (true, Some(pred)) = (ready, rule.body_preds[k]) {
                            // The atom's own variables are bound only inside the aggregate.
                            let mut inner_bound = bound.clone();
                            let inner = scan_step(atom, pred, Source::All, &mut inner_bound, slots, specs);
                            let value = value.as_ref().map(|e| slots.expr(e));
                            steps.push(Step::Aggregate {
                                inner: Box::new(inner),
                                op: *op,
                                value,
                                out: slots.slot(target),
                                out_bound: bound.contains(target.as_str()),
                            });
                            bound.insert(target.as_str());
                            placed[k] = true;
                            changed = true;
                        }
                    }
                    Literal::Neg(a) => {
                        let ready = a.args.iter().all(|e| match e {
                            Expr::Var(v, _) => bound.contains(v.as_str()),
                            _ => true,
                        });
                        if ready {
                            if let Some(pred) = rule.body_preds[k] {
                                steps.push(negation_step(a, pred, slots, specs));
                            }
                            placed[k] = true;
                            changed = true;
                        }
                    }
                    Literal::Cmp { op, lhs, rhs, .. } => {
                        if all_bound(lhs, &bound) && all_bound(rhs, &bound) {
                            steps.push(Step::Filter {
                                op: *op,
                                lhs: slots.expr(lhs),
                                rhs: slots.expr(rhs),
                            });
                            placed[k] = true;
                            changed = true;
                        } else if *op == CmpOp::Eq {
                            for (target, source) in [(lhs, rhs), (rhs, lhs)] {
                                if let Expr::Var(v, _) = target {
                                    if !bound.contains(v.as_str())
                                        && !atom_vars.contains(v.as_str())
                                        && all_bound(source, &bound)
                                    {
                                        let expr = slots.expr(source);
                                        steps.push(Step::Assign {
                                            slot: slots.slot(v),
                                            expr,
                                        });
                                        bound.insert(v.as_str());
                                        placed[k] = true;
                                        changed = true;
                                        break;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        let pick = next_atom.take().or_else(|| {
            let mut best: Option<(usize, usize)> = None;
            for (k, lit) in body.iter().enumerate() {
                if let (false, Literal::Pos(a)) = (placed[k], lit) {
                    let score = a
                        .args
                        .iter()
                        .filter(|e| match e {
                            Expr::Var(v, _) => bound.contains(v.as_str()),
                            Expr::Anon(_) => false,
                            _ => true,
                        })
                        .count();
                    if best.is_none_or(|(_, s)| score > s) {
                        best = Some((k, score));
                    }
                }
            }
            best.map(|(k, _)| k)
        });
        let Some(k) = pick else { break };
        placed[k] = true;
        if let (Literal::Pos(a), Some(pred)) = (&body[k], rule.body_preds[k]) {
            steps.push(scan_step(a, pred, source_of(k, pred), &mut bound, slots, specs));
        }
    }
    steps
}

fn scan_step<'a>(
    atom: &'a Atom,
    pred: usize,
    source: Source,
    bound: &mut HashSet<&'a str>,
    slots: &mut Slots<'a>,
    specs: &mut [Vec<Vec<usize>>],
) -> Step {
    let mut key_cols = Vec::new();
    let mut key = Vec::new();
    let mut binds = Vec::new();
    let mut same = Vec::new();
    let mut first_col: FxHashMap<&str, usize> = FxHashMap::default();
    for (col, arg) in atom.args.iter().enumerate() {
        match arg {
            Expr::Var(v, _) if !bound.contains(v.as_str()) => {
                if let Some(&c) = first_col.get(v.as_str()) {
                    same.push((c, col));
                } else {
                    first_col.insert(v.as_str(), col);
                    binds.push((col, slots.slot(v)));
                }
            }
            _ => {
                if let Some(k) = key_arg(arg, slots) {
                    key_cols.push(col);
                    key.push(k);
                }
            }
        }
    }
    for v in first_col.keys() {
        bound.insert(v);
    }
    if key_cols.len() == atom.args.len() {
        return Step::Contains {
            pred,
            source,
            args: key,
        };
    }
    Step::Scan {
        pred,
        source,
        index: index_on(specs, pred, key_cols),
        key,
        binds,
        same,
        memo: 0,
    }
}

fn negation_step<'a>(
    atom: &'a Atom,
    pred: usize,
    slots: &mut Slots<'a>,
    specs: &mut [Vec<Vec<usize>>],
) -> Step {
    let mut key_cols = Vec::new();
    let mut key = Vec::new();
    // Every named variable is bound here: the planner places a negation only then.
    for (col, arg) in atom.args.iter().enumerate() {
        if let Some(k) = key_arg(arg, slots) {
            key_cols.push(col);
            key.push(k);
        }
    }
    if key_cols.len() == atom.args.len() {
        return Step::NotContains { pred, args: key };
    }
    Step::NotExists {
        pred,
        index: index_on(specs, pred, key_cols),
        key,
    }
}
