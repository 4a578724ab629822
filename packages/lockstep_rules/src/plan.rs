//! Planning: groups the checked rules into strata and compiles each rule into join plans (the order in
//! which its body literals run, and the hash indexes its lookups need).

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::ast::{Atom, CmpOp, Expr, Literal};
use crate::check::{positive_atom_vars, Checked, ResolvedRule};
use crate::error::{Error, Result};
use crate::limits::MAX_PLAN_STEPS;
use crate::program::{assign_memos, Arg, CExpr, CRule, Program, Source, Step, Stratum};
use crate::value::Value;

/// Compiles a checked program: one [`Stratum`] per component that some rule derives, in evaluation order.
/// Refused when its join plans would hold more than [`MAX_PLAN_STEPS`] steps in all.
pub(crate) fn compile(checked: Checked<'_>) -> Result<Program> {
    let Checked {
        preds,
        pred_ids,
        base_facts,
        rules,
        components,
    } = checked;
    let mut index_specs = IndexSpecs::new(preds.len());
    // Each predicate's component, and each component's rules: one pass each, so that a program of many
    // small components stays linear.
    let mut component = vec![0usize; preds.len()];
    for (c, (members, _)) in components.iter().enumerate() {
        for &p in members {
            component[p] = c;
        }
    }
    let mut rules_of: Vec<Vec<&ResolvedRule<'_>>> = vec![Vec::new(); components.len()];
    for rule in &rules {
        rules_of[component[rule.head]].push(rule);
    }
    let mut strata = Vec::new();
    let mut total_steps = 0usize;
    for (c, ((members, recursive), stratum_rules)) in components.into_iter().zip(rules_of).enumerate() {
        let in_stratum = InStratum {
            component: &component,
            id: c,
        };
        for rule in &stratum_rules {
            total_steps += plan_steps(rule, in_stratum, recursive);
            if total_steps > MAX_PLAN_STEPS {
                return Err(Error::Unsupported {
                    location: rule.clause.head.location.clone(),
                    message: format!(
                        "the rules need more than {MAX_PLAN_STEPS} join steps in all (a rule runs once per \
                         recursive body atom, each time over its whole body); shorten this rule's body or \
                         its recursive atoms"
                    ),
                });
            }
        }
        let compiled: Vec<CRule> = (stratum_rules.into_iter())
            .map(|rule| compile_rule(rule, in_stratum, recursive, &mut index_specs))
            .collect();
        if !compiled.is_empty() {
            strata.push(Stratum::new(members, compiled, recursive));
        }
    }
    Ok(Program {
        preds,
        pred_ids,
        base_facts,
        strata,
        index_specs: index_specs.specs,
    })
}

/// The steps of `rule`'s plans: one per body literal, in the full plan and in one delta plan per body atom
/// of its own stratum.
fn plan_steps(rule: &ResolvedRule<'_>, in_stratum: InStratum<'_>, recursive: bool) -> usize {
    let body = &rule.clause.body;
    let deltas = match recursive {
        true => (body.iter().zip(&rule.body_preds))
            .filter(|(lit, pred)| matches!((lit, pred), (Literal::Pos(_), Some(p)) if in_stratum.has(*p)))
            .count(),
        false => 0,
    };
    (1 + deltas) * body.len().max(1)
}

/// Whether a predicate belongs to the stratum being compiled.
#[derive(Clone, Copy)]
struct InStratum<'a> {
    component: &'a [usize],
    id: usize,
}

impl InStratum<'_> {
    fn has(self, pred: usize) -> bool {
        self.component[pred] == self.id
    }
}

/// Per predicate, the column sets some plan looks rows up by, with a map to find one in constant time.
struct IndexSpecs {
    specs: Vec<Vec<Vec<usize>>>,
    find: FxHashMap<(usize, Vec<usize>), usize>,
}

impl IndexSpecs {
    fn new(preds: usize) -> Self {
        IndexSpecs {
            specs: vec![Vec::new(); preds],
            find: FxHashMap::default(),
        }
    }

    /// The index of `pred` on `cols`, registered on first use; `None` (read every row) when no column is
    /// bound.
    fn index_on(&mut self, pred: usize, cols: Vec<usize>) -> Option<usize> {
        if cols.is_empty() {
            return None;
        }
        let list = &mut self.specs[pred];
        let next = list.len();
        let i = *self.find.entry((pred, cols.clone())).or_insert(next);
        if i == next {
            list.push(cols);
        }
        Some(i)
    }
}

/// Register slots of a rule's variables, and each expression compiled once: the full plan and every delta
/// plan share it.
struct Slots<'a> {
    names: FxHashMap<&'a str, usize>,
    compiled: FxHashMap<*const Expr, Arc<CExpr>>,
}

impl<'a> Slots<'a> {
    fn slot(&mut self, name: &'a str) -> usize {
        let n = self.names.len();
        *self.names.entry(name).or_insert(n)
    }

    fn expr(&mut self, e: &'a Expr) -> Arc<CExpr> {
        if let Some(c) = self.compiled.get(&std::ptr::from_ref(e)) {
            return Arc::clone(c);
        }
        let c = Arc::new(self.build(e));
        self.compiled.insert(std::ptr::from_ref(e), Arc::clone(&c));
        c
    }

    /// Recursive over the expression: its height is bounded by the parser.
    fn build(&mut self, e: &'a Expr) -> CExpr {
        match e {
            Expr::Const(v, _) => CExpr::Const(*v),
            Expr::Var(v, _) => CExpr::Slot(self.slot(v)),
            // Safety checks rejected anonymous variables in expressions before compilation.
            Expr::Anon(_) => CExpr::Const(Value::Int(0)),
            Expr::Neg(a, _) => CExpr::Neg(Box::new(self.build(a))),
            Expr::Bin(op, a, b, _) => CExpr::Bin(*op, Box::new(self.build(a)), Box::new(self.build(b))),
        }
    }
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
    in_stratum: InStratum<'_>,
    recursive: bool,
    specs: &mut IndexSpecs,
) -> CRule {
    let mut slots = Slots {
        names: FxHashMap::default(),
        compiled: FxHashMap::default(),
    };
    let shape = Shape::new(rule);
    let mut full = join_plan(rule, &shape, None, in_stratum, &mut slots, specs);
    let mut memo = assign_memos(&mut full);
    let mut deltas = Vec::new();
    if recursive {
        for (i, (lit, pred)) in rule.clause.body.iter().zip(&rule.body_preds).enumerate() {
            if let (Literal::Pos(_), Some(p)) = (lit, *pred) {
                if in_stratum.has(p) {
                    let mut plan = join_plan(rule, &shape, Some(i), in_stratum, &mut slots, specs);
                    memo = memo.max(assign_memos(&mut plan));
                    deltas.push((p, plan));
                }
            }
        }
    }
    let head_args = rule.clause.head.args.iter().map(|a| slots.build(a)).collect();
    CRule {
        head: rule.head,
        head_args,
        slots: slots.names.len(),
        full,
        deltas,
        memo,
    }
}

/// What the planner needs to know about a rule's body, computed once for all its plans.
struct Shape<'a> {
    /// Variables a positive atom binds: never assigned by `X = expr` (the comparison then tests the atom's
    /// value, numerically, so `2 = 2.0` holds, instead of turning into a lookup of the exact value).
    atom_vars: HashSet<&'a str>,
    /// Per literal and side (a comparison's two sides; a negation's or aggregate's needed variables on side
    /// 0): the distinct variables that must be bound before it can run, and the `_`s (never bound).
    needs: Vec<[(Vec<&'a str>, usize); 2]>,
    /// Per positive atom: how many arguments are constants, and its variables with their multiplicity.
    atom_args: Vec<(usize, Vec<(&'a str, usize)>)>,
}

impl<'a> Shape<'a> {
    fn new(rule: &ResolvedRule<'a>) -> Self {
        let body = &rule.clause.body;
        // Per aggregate: the variables used outside it (in the head or another literal); those of its atom
        // must be bound before it runs, the others are its own. Counted once over the rule, so that a body of
        // many aggregates stays linear.
        let mut total: FxHashMap<&str, usize> = FxHashMap::default();
        rule.clause
            .head
            .args
            .iter()
            .for_each(|e| count_vars(e, &mut total));
        body.iter().for_each(|lit| count_literal(lit, &mut total));
        let distinct = |exprs: &mut dyn Iterator<Item = &'a Expr>| {
            let (mut vars, mut anon, mut seen) = (Vec::new(), 0, HashSet::new());
            for e in exprs {
                e.visit_vars(&mut |v, _| match v {
                    Some(v) if seen.insert(v) => vars.push(v),
                    Some(_) => {}
                    None => anon += 1,
                });
            }
            (vars, anon)
        };
        let none = || (Vec::new(), 0);
        let mut needs = Vec::with_capacity(body.len());
        let mut atom_args = Vec::with_capacity(body.len());
        for lit in body {
            let (need, args) = match lit {
                Literal::Pos(a) => {
                    let mut vars: Vec<(&str, usize)> = Vec::new();
                    let mut at: FxHashMap<&str, usize> = FxHashMap::default();
                    let mut consts = 0;
                    for arg in &a.args {
                        match arg {
                            Expr::Var(v, _) => match at.get(v.as_str()) {
                                Some(&i) => vars[i].1 += 1,
                                None => {
                                    at.insert(v.as_str(), vars.len());
                                    vars.push((v.as_str(), 1));
                                }
                            },
                            Expr::Anon(_) => {}
                            _ => consts += 1,
                        }
                    }
                    ([none(), none()], (consts, vars))
                }
                Literal::Neg(a) => {
                    let vars = a.args.iter().filter(|e| matches!(e, Expr::Var(..)));
                    ([(distinct(&mut vars.into_iter()).0, 0), none()], (0, Vec::new()))
                }
                Literal::Cmp { lhs, rhs, .. } => (
                    [
                        distinct(&mut std::iter::once(lhs)),
                        distinct(&mut std::iter::once(rhs)),
                    ],
                    (0, Vec::new()),
                ),
                Literal::Agg { atom, .. } => {
                    let mut own: FxHashMap<&str, usize> = FxHashMap::default();
                    count_literal(lit, &mut own);
                    let outside =
                        |v: &str| total.get(v).copied().unwrap_or(0) > own.get(v).copied().unwrap_or(0);
                    let vars = (atom.args.iter()).filter(|e| matches!(e, Expr::Var(v, _) if outside(v)));
                    ([(distinct(&mut vars.into_iter()).0, 0), none()], (0, Vec::new()))
                }
            };
            needs.push(need);
            atom_args.push(args);
        }
        Shape {
            atom_vars: positive_atom_vars(body),
            needs,
            atom_args,
        }
    }
}

fn count_vars<'a>(e: &'a Expr, counts: &mut FxHashMap<&'a str, usize>) {
    e.visit_vars(&mut |v, _| {
        if let Some(v) = v {
            *counts.entry(v).or_insert(0) += 1;
        }
    });
}

/// Counts the variable occurrences of `lit` (an aggregate's target too).
fn count_literal<'a>(lit: &'a Literal, counts: &mut FxHashMap<&'a str, usize>) {
    match lit {
        Literal::Pos(a) | Literal::Neg(a) => a.args.iter().for_each(|e| count_vars(e, counts)),
        Literal::Cmp { lhs, rhs, .. } => [lhs, rhs].into_iter().for_each(|e| count_vars(e, counts)),
        Literal::Agg {
            target, value, atom, ..
        } => {
            *counts.entry(target.as_str()).or_insert(0) += 1;
            value.iter().chain(&atom.args).for_each(|e| count_vars(e, counts));
        }
    }
}

/// The planner's state while it orders one body: the bound variables, per literal how many of the
/// variables it waits for are still unbound, and the positive atoms by score. Binding a variable updates
/// only the literals that use it, so a plan costs about the size of the rule, not its square.
struct Planner<'a> {
    bound: HashSet<&'a str>,
    /// Per literal and side: unbound variables it still waits for (`_`s count forever).
    waiting: Vec<[usize; 2]>,
    /// Per variable: the (literal, side) places that wait for it, and the (atom, multiplicity) uses.
    waiters: FxHashMap<&'a str, Vec<(usize, usize)>>,
    uses: FxHashMap<&'a str, Vec<(usize, usize)>>,
    /// Per positive atom: arguments that are constants or bound variables.
    score: Vec<usize>,
    /// Unplaced positive atoms, best first: most bound arguments, then the earliest.
    atoms: BTreeSet<(Reverse<usize>, usize)>,
    /// Literals to look at again (their waiting count changed), earliest first.
    candidates: BTreeSet<usize>,
}

impl<'a> Planner<'a> {
    fn new(shape: &Shape<'a>, body: &[Literal]) -> Self {
        let mut waiters: FxHashMap<&str, Vec<(usize, usize)>> = FxHashMap::default();
        let mut uses: FxHashMap<&str, Vec<(usize, usize)>> = FxHashMap::default();
        let mut waiting = Vec::with_capacity(body.len());
        let mut candidates = BTreeSet::new();
        let mut atoms = BTreeSet::new();
        let mut score = Vec::with_capacity(body.len());
        for (k, lit) in body.iter().enumerate() {
            let need = &shape.needs[k];
            waiting.push([need[0].0.len() + need[0].1, need[1].0.len() + need[1].1]);
            for (side, (vars, _)) in need.iter().enumerate() {
                for v in vars {
                    waiters.entry(v).or_default().push((k, side));
                }
            }
            let (consts, vars) = &shape.atom_args[k];
            for &(v, n) in vars {
                uses.entry(v).or_default().push((k, n));
            }
            score.push(*consts);
            if matches!(lit, Literal::Pos(_)) {
                atoms.insert((Reverse(*consts), k));
            } else {
                candidates.insert(k);
            }
        }
        Planner {
            bound: HashSet::new(),
            waiting,
            waiters,
            uses,
            score,
            atoms,
            candidates,
        }
    }

    fn is_bound(&self, v: &str) -> bool {
        self.bound.contains(v)
    }

    fn bind(&mut self, v: &'a str) {
        if !self.bound.insert(v) {
            return;
        }
        for &(k, side) in self.waiters.get(v).map_or(&[][..], Vec::as_slice) {
            self.waiting[k][side] -= 1;
            self.candidates.insert(k);
        }
        for &(k, n) in self.uses.get(v).map_or(&[][..], Vec::as_slice) {
            if self.atoms.remove(&(Reverse(self.score[k]), k)) {
                self.score[k] += n;
                self.atoms.insert((Reverse(self.score[k]), k));
            } else {
                self.score[k] += n;
            }
        }
    }

    fn place_atom(&mut self, k: usize) {
        self.atoms.remove(&(Reverse(self.score[k]), k));
    }
}

/// Orders the body: the delta atom first (it is the smallest input), then repeatedly every comparison or
/// negation whose variables are bound, then the positive atom with the most bound arguments.
fn join_plan<'a>(
    rule: &ResolvedRule<'a>,
    shape: &Shape<'a>,
    delta: Option<usize>,
    in_stratum: InStratum<'_>,
    slots: &mut Slots<'a>,
    specs: &mut IndexSpecs,
) -> Vec<Step> {
    let body = &rule.clause.body;
    let mut placed = vec![false; body.len()];
    let mut state = Planner::new(shape, body);
    let mut steps = Vec::new();
    let source_of = |k: usize, pred: usize| -> Source {
        match delta {
            Some(j) if in_stratum.has(pred) => match k.cmp(&j) {
                std::cmp::Ordering::Less => Source::All,
                std::cmp::Ordering::Equal => Source::Delta,
                std::cmp::Ordering::Greater => Source::Old,
            },
            _ => Source::All,
        }
    };
    let mut next_atom = delta;
    if let Some(k) = delta {
        state.place_atom(k);
    }
    loop {
        // Filters as early as possible: they prune the search before the next join.
        while let Some(k) = state.candidates.pop_first() {
            if placed[k] {
                continue;
            }
            let [wait_lhs, wait_rhs] = state.waiting[k];
            match &body[k] {
                Literal::Pos(_) => {}
                Literal::Agg {
                    target,
                    op,
                    value,
                    atom,
                    ..
                } => {
                    if let (0, Some(pred)) = (wait_lhs, rule.body_preds[k]) {
                        // The atom's own variables are bound only inside the aggregate.
                        let (inner, _) =
                            scan_step(atom, pred, Source::All, &|v| state.is_bound(v), slots, specs);
                        let value = value.as_ref().map(|e| slots.expr(e));
                        steps.push(Step::Aggregate {
                            inner: Box::new(inner),
                            op: *op,
                            value,
                            out: slots.slot(target),
                            out_bound: state.is_bound(target),
                        });
                        state.bind(target);
                        placed[k] = true;
                    }
                }
                Literal::Neg(a) => {
                    if wait_lhs == 0 {
                        if let Some(pred) = rule.body_preds[k] {
                            steps.push(negation_step(a, pred, slots, specs));
                        }
                        placed[k] = true;
                    }
                }
                Literal::Cmp { op, lhs, rhs, .. } => {
                    if wait_lhs == 0 && wait_rhs == 0 {
                        steps.push(Step::Filter {
                            op: *op,
                            lhs: slots.expr(lhs),
                            rhs: slots.expr(rhs),
                        });
                        placed[k] = true;
                    } else if *op == CmpOp::Eq {
                        for (target, source_waits) in [(lhs, wait_rhs), (rhs, wait_lhs)] {
                            if let (Expr::Var(v, _), 0) = (target, source_waits) {
                                if !state.is_bound(v) && !shape.atom_vars.contains(v.as_str()) {
                                    let source = if std::ptr::eq(target, lhs) { rhs } else { lhs };
                                    let expr = slots.expr(source);
                                    steps.push(Step::Assign {
                                        slot: slots.slot(v),
                                        expr,
                                    });
                                    state.bind(v);
                                    placed[k] = true;
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
        let pick = next_atom.take().or_else(|| state.atoms.first().map(|&(_, k)| k));
        let Some(k) = pick else { break };
        placed[k] = true;
        state.place_atom(k);
        if let (Literal::Pos(a), Some(pred)) = (&body[k], rule.body_preds[k]) {
            let (step, newly) = scan_step(a, pred, source_of(k, pred), &|v| state.is_bound(v), slots, specs);
            steps.push(step);
            for v in newly {
                state.bind(v);
            }
        }
    }
    steps
}

/// The step reading `atom`, and the variables it binds (`is_bound` says which are bound before it).
fn scan_step<'a>(
    atom: &'a Atom,
    pred: usize,
    source: Source,
    is_bound: &dyn Fn(&str) -> bool,
    slots: &mut Slots<'a>,
    specs: &mut IndexSpecs,
) -> (Step, Vec<&'a str>) {
    let mut key_cols = Vec::new();
    let mut key = Vec::new();
    let mut binds = Vec::new();
    let mut same = Vec::new();
    let mut first_col: FxHashMap<&str, usize> = FxHashMap::default();
    for (col, arg) in atom.args.iter().enumerate() {
        match arg {
            Expr::Var(v, _) if !is_bound(v) => {
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
    let mut newly: Vec<&str> = first_col.keys().copied().collect();
    newly.sort_unstable();
    if key_cols.len() == atom.args.len() {
        let step = Step::Contains {
            pred,
            source,
            args: key,
        };
        return (step, newly);
    }
    let step = Step::Scan {
        pred,
        source,
        index: specs.index_on(pred, key_cols),
        key,
        binds,
        same,
        memo: 0,
    };
    (step, newly)
}

fn negation_step<'a>(atom: &'a Atom, pred: usize, slots: &mut Slots<'a>, specs: &mut IndexSpecs) -> Step {
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
        index: specs.index_on(pred, key_cols),
        key,
    }
}
