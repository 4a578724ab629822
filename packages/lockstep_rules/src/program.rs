//! Static checks (arity, safety, stratification) and compilation of rules into join plans.

use std::collections::VecDeque;

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::FxHashMap;

use crate::error::{Error, Location, Result, VariableContext};
use crate::parser::{ArithOp, Atom, Clause, CmpOp, Expr, Literal};
use crate::value::{Symbol, Value};

/// A predicate of the program.
#[derive(Debug, Clone)]
pub(crate) struct PredInfo {
    pub name: String,
    pub arity: usize,
    /// First use, for arity diagnostics.
    pub location: Location,
    /// Whether some rule derives it.
    pub derived: bool,
}

/// An argument of a body atom after variables became register slots.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg {
    Const(Value),
    Slot(usize),
}

impl Arg {
    #[inline]
    pub(crate) fn get(self, regs: &[Value]) -> Value {
        match self {
            Arg::Const(v) => v,
            Arg::Slot(s) => regs[s],
        }
    }
}

/// An arithmetic expression over register slots.
#[derive(Debug, Clone)]
pub(crate) enum CExpr {
    Const(Value),
    Slot(usize),
    Neg(Box<CExpr>),
    Bin(ArithOp, Box<CExpr>, Box<CExpr>),
}

/// Which rows of a relation a body atom reads during a semi-naive round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Every row (relations of lower strata, and recursive ones before the delta atom).
    All,
    /// Rows added in the previous round.
    Delta,
    /// Rows present before the previous round.
    Old,
}

/// One step of a join plan; steps run left to right, each extending the variable bindings.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// Iterate the rows matching `key` on the index's columns (or every row when `index` is `None`),
    /// binding `binds` (column, slot) and checking `same` (column, column) for repeated variables.
    Scan {
        pred: usize,
        source: Source,
        index: Option<usize>,
        key: Vec<Arg>,
        binds: Vec<(usize, usize)>,
        same: Vec<(usize, usize)>,
    },
    /// A positive atom whose arguments are all bound: a membership test.
    Contains {
        pred: usize,
        source: Source,
        args: Vec<Arg>,
    },
    /// A negated atom with all arguments bound.
    NotContains { pred: usize, args: Vec<Arg> },
    /// A negated atom with anonymous arguments: no row may match `key` on the index's columns.
    NotExists {
        pred: usize,
        index: Option<usize>,
        key: Vec<Arg>,
    },
    /// A comparison of two bound expressions.
    Filter { op: CmpOp, lhs: CExpr, rhs: CExpr },
    /// `X = expr` with `X` not yet bound.
    Assign { slot: usize, expr: CExpr },
}

/// A rule compiled for evaluation.
#[derive(Debug, Clone)]
pub(crate) struct CRule {
    pub head: usize,
    pub head_args: Vec<CExpr>,
    pub slots: usize,
    /// The plan reading every row of every relation (first round, and non-recursive strata).
    pub full: Vec<Step>,
    /// One plan per body atom of a predicate of the same recursive stratum, reading that atom's delta.
    pub deltas: Vec<(usize, Vec<Step>)>,
}

/// A strongly connected component of the dependency graph, evaluated to a fixpoint before the next.
#[derive(Debug, Clone)]
pub(crate) struct Stratum {
    pub preds: Vec<usize>,
    pub rules: Vec<CRule>,
    pub recursive: bool,
}

/// A checked and compiled program.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    pub preds: Vec<PredInfo>,
    pub pred_ids: FxHashMap<Symbol, usize>,
    pub base_facts: Vec<(usize, Vec<Value>)>,
    pub strata: Vec<Stratum>,
    /// Per predicate, the column sets some plan looks rows up by.
    pub index_specs: Vec<Vec<Vec<usize>>>,
}

impl Program {
    pub(crate) fn pred_id(&self, name: &str) -> Option<usize> {
        self.pred_ids.get(&Symbol::new(name)).copied()
    }
}

struct Builder {
    preds: Vec<PredInfo>,
    pred_ids: FxHashMap<Symbol, usize>,
    errors: Vec<Error>,
}

impl Builder {
    /// Registers a use of `atom`'s predicate, reporting an arity that differs from the first use.
    fn use_pred(&mut self, atom: &Atom) -> Option<usize> {
        let sym = Symbol::new(&atom.pred);
        if let Some(&id) = self.pred_ids.get(&sym) {
            let info = &self.preds[id];
            if info.arity != atom.args.len() {
                self.errors.push(Error::ArityMismatch {
                    location: atom.location.clone(),
                    predicate: atom.pred.clone(),
                    arity: atom.args.len(),
                    first_location: info.location.clone(),
                    first_arity: info.arity,
                });
                return None;
            }
            return Some(id);
        }
        let id = self.preds.len();
        self.preds.push(PredInfo {
            name: atom.pred.clone(),
            arity: atom.args.len(),
            location: atom.location.clone(),
            derived: false,
        });
        self.pred_ids.insert(sym, id);
        Some(id)
    }
}

/// A rule after name resolution, before planning.
struct ResolvedRule<'a> {
    clause: &'a Clause,
    head: usize,
    /// Predicate id per body literal (`None` for comparisons).
    body_preds: Vec<Option<usize>>,
}

/// Checks and compiles `clauses` (all sources together).
pub(crate) fn build(clauses: &[Clause]) -> Result<Program> {
    let mut b = Builder {
        preds: Vec::new(),
        pred_ids: FxHashMap::default(),
        errors: Vec::new(),
    };
    let mut base_facts = Vec::new();
    let mut rules = Vec::new();

    for clause in clauses {
        let head = b.use_pred(&clause.head);
        let mut body_preds = Vec::with_capacity(clause.body.len());
        let mut ok = head.is_some();
        for lit in &clause.body {
            match lit {
                Literal::Pos(a) | Literal::Neg(a) => {
                    let id = b.use_pred(a);
                    ok &= id.is_some();
                    body_preds.push(id);
                    for arg in &a.args {
                        if matches!(arg, Expr::Neg(..) | Expr::Bin(..)) {
                            ok = false;
                            b.errors.push(Error::Unsupported {
                                location: arg.location().clone(),
                                message: format!(
                                    "arithmetic is not allowed in an argument of body atom `{}`; bind a \
                                     variable instead, e.g. `{}(..., M, ...), M = N + 1`",
                                    a.pred, a.pred
                                ),
                            });
                        }
                    }
                }
                Literal::Cmp { .. } => body_preds.push(None),
            }
        }
        if clause.is_fact {
            let mut tuple = Vec::with_capacity(clause.head.args.len());
            for arg in &clause.head.args {
                match arg {
                    Expr::Const(v, _) => tuple.push(*v),
                    Expr::Var(name, l) => b.errors.push(unsafe_var(name, l, VariableContext::Head)),
                    Expr::Anon(l) => b.errors.push(unsafe_var("_", l, VariableContext::Head)),
                    other => b.errors.push(Error::Unsupported {
                        location: other.location().clone(),
                        message: "this expression has no value (division by zero, overflow or arithmetic \
                                  on a symbol)"
                            .into(),
                    }),
                }
            }
            if let (Some(h), true) = (head, tuple.len() == clause.head.args.len()) {
                base_facts.push((h, tuple));
            }
            continue;
        }
        check_safety(clause, &mut b.errors);
        if let (true, Some(h)) = (ok, head) {
            b.preds[h].derived = true;
            rules.push(ResolvedRule {
                clause,
                head: h,
                body_preds,
            });
        }
    }

    let strata_order = stratify(&b.preds, &rules, &mut b.errors);
    if let Some(err) = Error::from_list(dedup(b.errors)) {
        return Err(err);
    }

    let mut index_specs: Vec<Vec<Vec<usize>>> = vec![Vec::new(); b.preds.len()];
    let mut strata = Vec::new();
    for (members, recursive) in strata_order {
        let mut in_stratum = vec![false; b.preds.len()];
        for &p in &members {
            in_stratum[p] = true;
        }
        let mut compiled = Vec::new();
        for rule in rules.iter().filter(|r| in_stratum[r.head]) {
            compiled.push(compile_rule(rule, &in_stratum, recursive, &mut index_specs));
        }
        if !compiled.is_empty() {
            strata.push(Stratum {
                preds: members,
                rules: compiled,
                recursive,
            });
        }
    }

    Ok(Program {
        preds: b.preds,
        pred_ids: b.pred_ids,
        base_facts,
        strata,
        index_specs,
    })
}

fn dedup(errors: Vec<Error>) -> Vec<Error> {
    // `|` copies a head into every alternative, so the same head diagnostic can arise more than once.
    let mut seen = std::collections::HashSet::new();
    errors
        .into_iter()
        .filter(|e| seen.insert(e.to_string()))
        .collect()
}

fn unsafe_var(name: &str, location: &Location, context: VariableContext) -> Error {
    Error::UnsafeVariable {
        location: location.clone(),
        variable: name.to_owned(),
        context,
    }
}

/// Variables bound by positive atoms, then by assignments `X = expr` (either side) whose other side is bound,
/// until nothing changes.
fn bound_vars(body: &[Literal]) -> std::collections::HashSet<&str> {
    let mut bound = std::collections::HashSet::new();
    for lit in body {
        if let Literal::Pos(a) = lit {
            for arg in &a.args {
                if let Expr::Var(v, _) = arg {
                    bound.insert(v.as_str());
                }
            }
        }
    }
    loop {
        let mut changed = false;
        for lit in body {
            if let Literal::Cmp {
                op: CmpOp::Eq,
                lhs,
                rhs,
                ..
            } = lit
            {
                for (target, source) in [(lhs, rhs), (rhs, lhs)] {
                    if let Expr::Var(v, _) = target {
                        if !bound.contains(v.as_str()) && all_bound(source, &bound) {
                            bound.insert(v.as_str());
                            changed = true;
                        }
                    }
                }
            }
        }
        if !changed {
            return bound;
        }
    }
}

fn all_bound(e: &Expr, bound: &std::collections::HashSet<&str>) -> bool {
    let mut ok = true;
    e.visit_vars(&mut |v, _| ok &= v.is_some_and(|v| bound.contains(v)));
    ok
}

fn check_safety(clause: &Clause, errors: &mut Vec<Error>) {
    let bound = bound_vars(&clause.body);
    let report = |expr: &Expr, context: &VariableContext, errors: &mut Vec<Error>| {
        expr.visit_vars(&mut |v, l| match v {
            Some(v) if bound.contains(v) => {}
            Some(v) => errors.push(unsafe_var(v, l, context.clone())),
            None => errors.push(unsafe_var("_", l, context.clone())),
        });
    };
    for arg in &clause.head.args {
        report(arg, &VariableContext::Head, errors);
    }
    for lit in &clause.body {
        match lit {
            Literal::Pos(_) => {}
            Literal::Neg(a) => {
                let context = VariableContext::Negation {
                    predicate: a.pred.clone(),
                };
                for arg in &a.args {
                    // `_` in a negation means "for no value", which is safe.
                    if let Expr::Var(v, l) = arg {
                        if !bound.contains(v.as_str()) {
                            errors.push(unsafe_var(v, l, context.clone()));
                        }
                    }
                }
            }
            Literal::Cmp { lhs, rhs, .. } => {
                report(lhs, &VariableContext::Comparison, errors);
                report(rhs, &VariableContext::Comparison, errors);
            }
        }
    }
}

/// Orders the strongly connected components of the dependency graph (head depends on body) so that each
/// comes after everything it depends on, and reports negations inside a component.
fn stratify(
    preds: &[PredInfo],
    rules: &[ResolvedRule<'_>],
    errors: &mut Vec<Error>,
) -> Vec<(Vec<usize>, bool)> {
    let mut graph: DiGraph<usize, bool> = DiGraph::new();
    let nodes: Vec<NodeIndex> = (0..preds.len()).map(|p| graph.add_node(p)).collect();
    let mut self_loop = vec![false; preds.len()];
    for rule in rules {
        for (lit, pred) in rule.clause.body.iter().zip(&rule.body_preds) {
            if let Some(p) = *pred {
                let negative = matches!(lit, Literal::Neg(_));
                graph.add_edge(nodes[rule.head], nodes[p], negative);
                if p == rule.head {
                    self_loop[p] = true;
                }
            }
        }
    }
    // tarjan_scc yields components in post-order: dependencies before dependents, as evaluation needs.
    let sccs = tarjan_scc(&graph);
    let mut component = vec![0usize; preds.len()];
    for (i, scc) in sccs.iter().enumerate() {
        for n in scc {
            component[graph[*n]] = i;
        }
    }
    for rule in rules {
        for (lit, pred) in rule.clause.body.iter().zip(&rule.body_preds) {
            if let (Literal::Neg(atom), Some(p)) = (lit, *pred) {
                if component[p] == component[rule.head] {
                    let cycle = cycle_through(&graph, &nodes, &component, rule.head, p)
                        .into_iter()
                        .map(|q| preds[q].name.clone())
                        .collect();
                    errors.push(Error::Unstratifiable {
                        location: atom.location.clone(),
                        predicate: atom.pred.clone(),
                        cycle,
                    });
                }
            }
        }
    }
    sccs.into_iter()
        .map(|scc| {
            let mut members: Vec<usize> = scc.into_iter().map(|n| graph[n]).collect();
            members.sort_unstable();
            let recursive = members.len() > 1 || self_loop[members[0]];
            (members, recursive)
        })
        .collect()
}

/// The cycle `head -> negated -> ... -> head` in "depends on" direction, by breadth-first search inside the
/// component, so the message shows the shortest way the negation feeds back into the head.
fn cycle_through(
    graph: &DiGraph<usize, bool>,
    nodes: &[NodeIndex],
    component: &[usize],
    head: usize,
    negated: usize,
) -> Vec<usize> {
    let mut parent: Vec<Option<usize>> = vec![None; nodes.len()];
    let mut seen = vec![false; nodes.len()];
    let mut queue = VecDeque::from([negated]);
    seen[negated] = true;
    while let Some(p) = queue.pop_front() {
        if p == head {
            break;
        }
        let mut next: Vec<usize> = graph.neighbors(nodes[p]).map(|n| graph[n]).collect();
        next.sort_unstable();
        for q in next {
            if !seen[q] && component[q] == component[head] {
                seen[q] = true;
                parent[q] = Some(p);
                queue.push_back(q);
            }
        }
    }
    let mut path = vec![head];
    let mut cur = head;
    while cur != negated {
        match parent[cur] {
            Some(p) => {
                path.push(p);
                cur = p;
            }
            None => break,
        }
    }
    path.reverse();
    // path runs negated -> ... -> head; the cycle reads head -> negated -> ... -> head.
    let mut cycle = vec![head];
    cycle.extend(path);
    cycle
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

fn register_index(specs: &mut [Vec<Vec<usize>>], pred: usize, cols: Vec<usize>) -> usize {
    let list = &mut specs[pred];
    if let Some(i) = list.iter().position(|c| *c == cols) {
        return i;
    }
    list.push(cols);
    list.len() - 1
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
    let full = plan(rule, None, in_stratum, &mut slots, specs);
    let mut deltas = Vec::new();
    if recursive {
        for (i, (lit, pred)) in rule.clause.body.iter().zip(&rule.body_preds).enumerate() {
            if let (Literal::Pos(_), Some(p)) = (lit, *pred) {
                if in_stratum[p] {
                    deltas.push((p, plan(rule, Some(i), in_stratum, &mut slots, specs)));
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
    }
}

/// Orders the body: the delta atom first (it is the smallest input), then repeatedly every comparison or
/// negation whose variables are bound, then the positive atom with the most bound arguments.
fn plan<'a>(
    rule: &ResolvedRule<'a>,
    delta: Option<usize>,
    in_stratum: &[bool],
    slots: &mut Slots<'a>,
    specs: &mut [Vec<Vec<usize>>],
) -> Vec<Step> {
    let body = &rule.clause.body;
    let mut placed = vec![false; body.len()];
    let mut bound: std::collections::HashSet<&str> = std::collections::HashSet::new();
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
    let mut atom_vars: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for lit in body {
        if let Literal::Pos(a) = lit {
            for arg in &a.args {
                if let Expr::Var(v, _) = arg {
                    atom_vars.insert(v.as_str());
                }
            }
        }
    }
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
    bound: &mut std::collections::HashSet<&'a str>,
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
            Expr::Const(v, _) => {
                key_cols.push(col);
                key.push(Arg::Const(*v));
            }
            Expr::Var(v, _) if bound.contains(v.as_str()) => {
                key_cols.push(col);
                key.push(Arg::Slot(slots.slot(v)));
            }
            Expr::Var(v, _) => {
                if let Some(&c) = first_col.get(v.as_str()) {
                    same.push((c, col));
                } else {
                    first_col.insert(v.as_str(), col);
                    binds.push((col, slots.slot(v)));
                }
            }
            _ => {}
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
    let index = if key_cols.is_empty() {
        None
    } else {
        Some(register_index(specs, pred, key_cols))
    };
    Step::Scan {
        pred,
        source,
        index,
        key,
        binds,
        same,
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
    for (col, arg) in atom.args.iter().enumerate() {
        match arg {
            Expr::Const(v, _) => {
                key_cols.push(col);
                key.push(Arg::Const(*v));
            }
            Expr::Var(v, _) => {
                key_cols.push(col);
                key.push(Arg::Slot(slots.slot(v)));
            }
            _ => {}
        }
    }
    if key_cols.len() == atom.args.len() {
        return Step::NotContains { pred, args: key };
    }
    let index = if key_cols.is_empty() {
        None
    } else {
        Some(register_index(specs, pred, key_cols))
    };
    Step::NotExists { pred, index, key }
}
