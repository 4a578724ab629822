//! Static checks of the clauses of all sources together: predicate arities, ground facts, safety (every
//! variable bound by a positive body atom) and stratification (no negation inside recursion). Every
//! diagnostic is collected, so one run reports them all, each with its `file:line:column`.

use std::collections::{HashSet, VecDeque};

use petgraph::algo::kosaraju_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::FxHashMap;

use crate::ast::{Atom, Clause, CmpOp, Expr, Literal};
use crate::error::{Error, Location, Result, VariableContext};
use crate::limits::MAX_DIAGNOSTICS;
use crate::program::PredInfo;
use crate::value::{Symbol, Value};

/// A program that passed every check, ready for planning.
pub(crate) struct Checked<'a> {
    pub preds: Vec<PredInfo>,
    pub pred_ids: FxHashMap<Symbol, usize>,
    pub base_facts: Vec<(usize, Vec<Value>)>,
    pub rules: Vec<ResolvedRule<'a>>,
    /// The strongly connected components of the dependency graph in evaluation order: their predicates
    /// (sorted) and whether they are recursive.
    pub components: Vec<(Vec<usize>, bool)>,
}

/// A rule after name resolution, before planning.
pub(crate) struct ResolvedRule<'a> {
    pub clause: &'a Clause,
    pub head: usize,
    /// Predicate id per body literal (`None` for comparisons).
    pub body_preds: Vec<Option<usize>>,
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

    /// The constant arguments of a fact's head, reporting every argument that is not a constant (the
    /// fact is then shorter than its head and is not stored).
    fn fact_values(&mut self, head: &Atom) -> Vec<Value> {
        let mut tuple = Vec::with_capacity(head.args.len());
        for arg in &head.args {
            match arg {
                Expr::Const(v, _) => tuple.push(*v),
                Expr::Var(name, l) => self.errors.push(unsafe_var(name, l, VariableContext::Head)),
                Expr::Anon(l) => self.errors.push(unsafe_var("_", l, VariableContext::Head)),
                other => self.errors.push(Error::Unsupported {
                    location: other.location().clone(),
                    message: "this expression has no value (division by zero, overflow or arithmetic on a \
                              symbol)"
                        .into(),
                }),
            }
        }
        tuple
    }
}

/// Resolves predicate names and runs every check on `clauses` (all sources together).
pub(crate) fn check(clauses: &[Clause]) -> Result<Checked<'_>> {
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
                Literal::Pos(a) | Literal::Neg(a) | Literal::Agg { atom: a, .. } => {
                    let id = b.use_pred(a);
                    ok &= id.is_some();
                    body_preds.push(id);
                    if let Literal::Agg { atom, .. } = lit {
                        for arg in atom
                            .args
                            .iter()
                            .filter(|e| matches!(e, Expr::Neg(..) | Expr::Bin(..)))
                        {
                            ok = false;
                            b.errors.push(Error::Unsupported {
                                location: arg.location().clone(),
                                message: format!(
                                    "arithmetic inside an aggregate's atom `{}`: bind a variable and use it in \
                                     the aggregated value instead",
                                    atom.pred
                                ),
                            });
                        }
                    }
                }
                Literal::Cmp { .. } => body_preds.push(None),
            }
        }
        if clause.is_fact {
            let tuple = b.fact_values(&clause.head);
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

    let components = stratify(&b.preds, &rules, &mut b.errors);
    if let Some(err) = Error::from_list(dedup(b.errors)) {
        return Err(err);
    }
    Ok(Checked {
        preds: b.preds,
        pred_ids: b.pred_ids,
        base_facts,
        rules,
        components,
    })
}

fn dedup(errors: Vec<Error>) -> Vec<Error> {
    // `|` copies a head into every alternative, so the same head diagnostic can arise more than once.
    let mut seen = HashSet::new();
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
/// until nothing changes. Each equation side counts the distinct variables it still waits for, and binding a
/// variable updates only the sides that use it, so a long chain of equations in any order stays linear.
fn bound_vars(body: &[Literal]) -> HashSet<&str> {
    let mut bound = positive_atom_vars(body);
    // An aggregate binds its target (its atom's other variables are its own, or bound outside).
    for lit in body {
        if let Literal::Agg { target, .. } = lit {
            bound.insert(target.as_str());
        }
    }
    // Per equation side whose other side is a variable: (that variable, unbound variables this side waits
    // for; a `_` waits forever).
    let mut sides: Vec<(&str, usize)> = Vec::new();
    let mut waiters: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
    let mut ready: Vec<usize> = Vec::new();
    for lit in body {
        if let Literal::Cmp {
            op: CmpOp::Eq,
            lhs,
            rhs,
            ..
        } = lit
        {
            for (target, source) in [(lhs, rhs), (rhs, lhs)] {
                let Expr::Var(v, _) = target else { continue };
                let i = sides.len();
                let mut seen = HashSet::new();
                let mut waiting = 0;
                source.visit_vars(&mut |w, _| match w {
                    Some(w) if bound.contains(w) => {}
                    Some(w) if seen.insert(w) => {
                        waiting += 1;
                        waiters.entry(w).or_default().push(i);
                    }
                    Some(_) => {}
                    None => waiting += 1,
                });
                sides.push((v.as_str(), waiting));
                if waiting == 0 {
                    ready.push(i);
                }
            }
        }
    }
    while let Some(i) = ready.pop() {
        let v = sides[i].0;
        if bound.insert(v) {
            for &j in waiters.get(v).map_or(&[][..], Vec::as_slice) {
                sides[j].1 -= 1;
                if sides[j].1 == 0 {
                    ready.push(j);
                }
            }
        }
    }
    bound
}

/// The variables that appear as arguments of positive atoms of `body`.
pub(crate) fn positive_atom_vars(body: &[Literal]) -> HashSet<&str> {
    let mut vars = HashSet::new();
    for lit in body {
        if let Literal::Pos(a) = lit {
            for arg in &a.args {
                if let Expr::Var(v, _) = arg {
                    vars.insert(v.as_str());
                }
            }
        }
    }
    vars
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
            Literal::Agg { value, atom, .. } => {
                // The aggregated value reads the atom's variables (or ones bound outside).
                let own: HashSet<&str> = (atom.args.iter())
                    .filter_map(|arg| match arg {
                        Expr::Var(v, _) => Some(v.as_str()),
                        _ => None,
                    })
                    .collect();
                let context = VariableContext::Aggregate {
                    predicate: atom.pred.clone(),
                };
                if let Some(value) = value {
                    value.visit_vars(&mut |v, l| match v {
                        Some(v) if own.contains(v) || bound.contains(v) => {}
                        Some(v) => errors.push(unsafe_var(v, l, context.clone())),
                        None => errors.push(unsafe_var("_", l, context.clone())),
                    });
                }
            }
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
                // An equation the parser lifted out of an atom's argument names that atom.
                let context = match lhs {
                    Expr::Var(v, _) if v.starts_with('#') => VariableContext::Argument {
                        predicate: v.rsplit('#').next().unwrap_or_default().to_owned(),
                    },
                    _ => VariableContext::Comparison,
                };
                report(lhs, &context, errors);
                report(rhs, &context, errors);
            }
        }
    }
}

/// How many predicates a reported cycle shows at each end.
const CYCLE_ENDS: usize = 8;

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
                // An aggregate reads its relation whole, like a negation: a lower stratum only.
                let negative = matches!(lit, Literal::Neg(_) | Literal::Agg { .. });
                graph.add_edge(nodes[rule.head], nodes[p], negative);
                if p == rule.head {
                    self_loop[p] = true;
                }
            }
        }
    }
    // kosaraju_scc yields components in post-order: dependencies before dependents, as evaluation needs. It
    // is iterative (petgraph 0.6's tarjan_scc recurses once per predicate on a chain of rules).
    let sccs = kosaraju_scc(&graph);
    let mut component = vec![0usize; preds.len()];
    for (i, scc) in sccs.iter().enumerate() {
        for n in scc {
            component[graph[*n]] = i;
        }
    }
    // Each report searches its cycle through the component: only the first few are searched and listed.
    let mut reported = 0;
    for rule in rules {
        for (lit, pred) in rule.clause.body.iter().zip(&rule.body_preds) {
            if let (Literal::Neg(atom) | Literal::Agg { atom, .. }, Some(p)) = (lit, *pred) {
                if component[p] == component[rule.head] && reported < MAX_DIAGNOSTICS {
                    reported += 1;
                    let mut cycle: Vec<String> = cycle_through(&graph, &nodes, &component, rule.head, p)
                        .into_iter()
                        .map(|q| preds[q].name.clone())
                        .collect();
                    // A long cycle is shown by its ends, so the diagnostic stays a readable line.
                    if cycle.len() > 2 * CYCLE_ENDS + 1 {
                        let hidden = cycle.len() - 2 * CYCLE_ENDS;
                        cycle.splice(CYCLE_ENDS..cycle.len() - CYCLE_ENDS, [format!("({hidden} more)")]);
                    }
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
