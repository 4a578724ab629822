//! The checked and compiled program that evaluation runs: predicates, base facts, and strata of rules
//! compiled into join plans. The checks build its predicates, the planner its strata; this module only
//! holds the data, so that both of them and the evaluator can use it.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::arith::arith;
use crate::ast::{AggOp, ArithOp, CmpOp};
use crate::error::Location;
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

/// The value of `e` with the register slots `regs`, or `None` when undefined (see [`arith`]).
#[inline]
pub(crate) fn eval_expr(e: &CExpr, regs: &[Value]) -> Option<Value> {
    match e {
        CExpr::Const(v) => Some(*v),
        CExpr::Slot(s) => Some(regs[*s]),
        CExpr::Neg(a) => match eval_expr(a, regs)? {
            Value::Int(i) => i.checked_neg().map(Value::Int),
            Value::Float(x) => Some(Value::from(-x.get())),
            Value::Sym(_) => None,
        },
        CExpr::Bin(op, a, b) => arith(*op, eval_expr(a, regs)?, eval_expr(b, regs)?),
    }
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
    /// `memo` is where, in its plan's scratch, the step keeps its last key and the rows it found.
    Scan {
        pred: usize,
        source: Source,
        index: Option<usize>,
        key: Vec<Arg>,
        binds: Vec<(usize, usize)>,
        same: Vec<(usize, usize)>,
        memo: usize,
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
    Filter {
        op: CmpOp,
        lhs: Arc<CExpr>,
        rhs: Arc<CExpr>,
    },
    /// `X = expr` with `X` not yet bound.
    Assign { slot: usize, expr: Arc<CExpr> },
    /// `out = op value : { atom }`: `inner` (a Scan or Contains over the whole relation) yields the rows,
    /// `value` is folded by `op`; `out` is assigned, or compared when already bound.
    Aggregate {
        inner: Box<Step>,
        op: AggOp,
        value: Option<Arc<CExpr>>,
        out: usize,
        out_bound: bool,
    },
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
    /// The size of the lookup memo of the largest plan (see [`assign_memos`]).
    pub memo: usize,
}

/// Gives each indexed scan of `steps` its place in the plan's lookup memo: the scan keeps there the key
/// of its last lookup and the chain it found, and reuses the chain while the key does not change (a lookup
/// by variables bound further out, repeated for every row of the steps in between). Returns the memo's
/// size: one place per key value.
pub(crate) fn assign_memos(steps: &mut [Step]) -> usize {
    let mut size = 0;
    for step in steps {
        if let Step::Scan {
            index: Some(_),
            key,
            memo,
            ..
        } = step
        {
            *memo = size;
            size += key.len();
        }
    }
    size
}

/// A strongly connected component of the dependency graph, evaluated to a fixpoint before the next.
#[derive(Debug, Clone)]
pub(crate) struct Stratum {
    pub preds: Vec<usize>,
    pub rules: Vec<CRule>,
    pub recursive: bool,
    /// The indexes, as (predicate, index), that the rules' full plans look rows up by: the ones brought up
    /// to date before the first round. An index no plan of a round reads is left behind and catches up
    /// when one does.
    pub full_indexes: Vec<(usize, usize)>,
    /// The same for the delta plans (the later rounds).
    pub delta_indexes: Vec<(usize, usize)>,
}

impl Stratum {
    pub(crate) fn new(preds: Vec<usize>, rules: Vec<CRule>, recursive: bool) -> Self {
        let mut full_indexes = Vec::new();
        let mut delta_indexes = Vec::new();
        let (mut full_seen, mut delta_seen) = (FxHashSet::default(), FxHashSet::default());
        for rule in &rules {
            indexes_read_into(&rule.full, &mut full_indexes, &mut full_seen);
            for (_, plan) in &rule.deltas {
                indexes_read_into(plan, &mut delta_indexes, &mut delta_seen);
            }
        }
        Stratum {
            preds,
            rules,
            recursive,
            full_indexes,
            delta_indexes,
        }
    }
}

/// Adds to `out` the (predicate, index) pairs `steps` look rows up by; `seen` holds what `out` holds (a set,
/// so that a stratum of many rules stays linear).
fn indexes_read_into(steps: &[Step], out: &mut Vec<(usize, usize)>, seen: &mut FxHashSet<(usize, usize)>) {
    for step in steps {
        let used = match step {
            Step::Scan {
                pred,
                index: Some(ix),
                ..
            }
            | Step::NotExists {
                pred,
                index: Some(ix),
                ..
            } => Some((*pred, *ix)),
            Step::Aggregate { inner, .. } => {
                indexes_read_into(std::slice::from_ref(&**inner), out, seen);
                None
            }
            _ => None,
        };
        if let Some(pair) = used.filter(|p| seen.insert(*p)) {
            out.push(pair);
        }
    }
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
