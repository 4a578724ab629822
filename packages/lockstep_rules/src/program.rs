//! The checked and compiled program that evaluation runs: predicates, base facts, and strata of rules
//! compiled into join plans. [`build`] runs the checks of [`crate::check`], then the planning of
//! [`crate::plan`].

use rustc_hash::FxHashMap;

use crate::check::check;
use crate::error::{Location, Result};
use crate::parser::{AggOp, ArithOp, Clause, CmpOp};
use crate::plan::compile;
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
    /// `out = op value : { atom }`: `inner` (a Scan or Contains over the whole relation) yields the rows,
    /// `value` is folded by `op`; `out` is assigned, or compared when already bound.
    Aggregate {
        inner: Box<Step>,
        op: AggOp,
        value: Option<CExpr>,
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

/// Checks and compiles `clauses` (all sources together).
pub(crate) fn build(clauses: &[Clause]) -> Result<Program> {
    check(clauses).map(compile)
}
