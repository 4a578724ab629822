//! Ordering one rule body into a join plan: what the planner knows about the body ([`Shape`]), its
//! state while it places literals ([`Planner`]), and the steps each literal becomes.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashSet};

use rustc_hash::FxHashMap;

use super::slots::{key_arg, InStratum, IndexSpecs, Slots};
use crate::ast::{Atom, Clause, CmpOp, Expr, Literal};
use crate::check::{positive_atom_vars, ResolvedRule};
use crate::program::{Source, Step};

/// What the planner needs to know about a rule's body, computed once for all its plans.
pub(super) struct Shape<'a> {
    /// Variables a positive atom binds: never assigned by `X = expr` (the comparison then tests the atom's
    /// value, numerically, so `2 = 2.0` holds, instead of turning into a lookup of the exact value).
    pub(super) atom_vars: HashSet<&'a str>,
    /// Per literal and side (a comparison's two sides; a negation's or aggregate's needed variables on side
    /// 0): the distinct variables that must be bound before it can run, and the `_`s (never bound).
    needs: Vec<[(Vec<&'a str>, usize); 2]>,
    /// Per positive atom: how many arguments are constants, and its variables with their multiplicity.
    atom_args: Vec<(usize, Vec<(&'a str, usize)>)>,
}

impl<'a> Shape<'a> {
    pub(super) fn new(rule: &ResolvedRule<'a>) -> Self {
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
pub(super) fn join_plan<'a>(
    rule: &ResolvedRule<'a>,
    shape: &Shape<'a>,
    delta: Option<usize>,
    in_stratum: InStratum<'_>,
    slots: &mut Slots<'a>,
    specs: &mut IndexSpecs,
) -> Vec<Step> {
    let body = &rule.clause.body;
    let mut order = BodyOrder {
        rule,
        shape,
        state: Planner::new(shape, body),
        placed: vec![false; body.len()],
        steps: Vec::new(),
        slots,
        specs,
    };
    let mut next_atom = delta;
    if let Some(k) = delta {
        order.state.place_atom(k);
    }
    loop {
        // Filters as early as possible: they prune the search before the next join.
        while let Some(k) = order.state.candidates.pop_first() {
            if !order.placed[k] {
                order.try_place(k);
            }
        }
        let pick = next_atom
            .take()
            .or_else(|| order.state.atoms.first().map(|&(_, k)| k));
        let Some(k) = pick else { break };
        order.place_scan(k, delta, in_stratum);
    }
    order.steps
}

/// Where the `k`-th body literal (on `pred`) reads its rows in the plan for `delta`: in a delta plan,
/// an atom of the stratum before the delta atom reads everything, the delta atom the new rows, and one
/// after it the rows from before (so that each new combination is found once).
fn source_of(delta: Option<usize>, in_stratum: InStratum<'_>, k: usize, pred: usize) -> Source {
    match delta {
        Some(j) if in_stratum.has(pred) => match k.cmp(&j) {
            std::cmp::Ordering::Less => Source::All,
            std::cmp::Ordering::Equal => Source::Delta,
            std::cmp::Ordering::Greater => Source::Old,
        },
        _ => Source::All,
    }
}

/// One body being ordered: the planner's state, which literals are placed, and the steps so far.
struct BodyOrder<'p, 'a> {
    rule: &'p ResolvedRule<'a>,
    shape: &'p Shape<'a>,
    state: Planner<'a>,
    placed: Vec<bool>,
    steps: Vec<Step>,
    slots: &'p mut Slots<'a>,
    specs: &'p mut IndexSpecs,
}

impl<'a> BodyOrder<'_, 'a> {
    /// Places the `k`-th literal when it can run now (a comparison, negation or aggregate whose
    /// variables are bound, or `X = expr` that can assign `X`); positive atoms wait for [`Self::place_scan`].
    fn try_place(&mut self, k: usize) {
        let clause: &'a Clause = self.rule.clause;
        let [wait_lhs, wait_rhs] = self.state.waiting[k];
        match &clause.body[k] {
            Literal::Pos(_) => {}
            Literal::Agg {
                target,
                op,
                value,
                atom,
                ..
            } => {
                if let (0, Some(pred)) = (wait_lhs, self.rule.body_preds[k]) {
                    // The atom's own variables are bound only inside the aggregate.
                    let state = &self.state;
                    let (inner, _) = scan_step(
                        atom,
                        pred,
                        Source::All,
                        &|v| state.is_bound(v),
                        self.slots,
                        self.specs,
                    );
                    let value = value.as_ref().map(|e| self.slots.expr(e));
                    self.steps.push(Step::Aggregate {
                        inner: Box::new(inner),
                        op: *op,
                        value,
                        out: self.slots.slot(target),
                        out_bound: self.state.is_bound(target),
                    });
                    self.state.bind(target);
                    self.placed[k] = true;
                }
            }
            Literal::Neg(a) => {
                if wait_lhs == 0 {
                    if let Some(pred) = self.rule.body_preds[k] {
                        self.steps.push(negation_step(a, pred, self.slots, self.specs));
                    }
                    self.placed[k] = true;
                }
            }
            Literal::Cmp { op, lhs, rhs, .. } => {
                if wait_lhs == 0 && wait_rhs == 0 {
                    self.steps.push(Step::Filter {
                        op: *op,
                        lhs: self.slots.expr(lhs),
                        rhs: self.slots.expr(rhs),
                    });
                    self.placed[k] = true;
                } else if *op == CmpOp::Eq {
                    self.try_assign(k, lhs, rhs, [wait_lhs, wait_rhs]);
                }
            }
        }
    }

    /// `X = expr` (either way round) with `expr` bound and `X` a variable no positive atom binds:
    /// placed as an assignment that binds `X`.
    fn try_assign(&mut self, k: usize, lhs: &'a Expr, rhs: &'a Expr, [wait_lhs, wait_rhs]: [usize; 2]) {
        for (target, source_waits) in [(lhs, wait_rhs), (rhs, wait_lhs)] {
            if let (Expr::Var(v, _), 0) = (target, source_waits) {
                if !self.state.is_bound(v) && !self.shape.atom_vars.contains(v.as_str()) {
                    let source = if std::ptr::eq(target, lhs) { rhs } else { lhs };
                    let expr = self.slots.expr(source);
                    self.steps.push(Step::Assign {
                        slot: self.slots.slot(v),
                        expr,
                    });
                    self.state.bind(v);
                    self.placed[k] = true;
                    break;
                }
            }
        }
    }

    /// Places the `k`-th literal (the next positive atom) as a scan, binding its variables.
    fn place_scan(&mut self, k: usize, delta: Option<usize>, in_stratum: InStratum<'_>) {
        let clause: &'a Clause = self.rule.clause;
        self.placed[k] = true;
        self.state.place_atom(k);
        if let (Literal::Pos(a), Some(pred)) = (&clause.body[k], self.rule.body_preds[k]) {
            let state = &self.state;
            let source = source_of(delta, in_stratum, k, pred);
            let (step, newly) = scan_step(a, pred, source, &|v| state.is_bound(v), self.slots, self.specs);
            self.steps.push(step);
            for v in newly {
                self.state.bind(v);
            }
        }
    }
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
