//! What compiling one rule fills in besides its steps: the register slot of each variable, each
//! expression compiled once, and the hash indexes the lookups need.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::ast::Expr;
use crate::program::{Arg, CExpr};
use crate::value::Value;

/// Whether a predicate belongs to the stratum being compiled.
#[derive(Clone, Copy)]
pub(super) struct InStratum<'a> {
    pub(super) component: &'a [usize],
    pub(super) id: usize,
}

impl InStratum<'_> {
    pub(super) fn has(self, pred: usize) -> bool {
        self.component[pred] == self.id
    }
}

/// Per predicate, the column sets some plan looks rows up by, with a map to find one in constant time.
pub(super) struct IndexSpecs {
    pub(super) specs: Vec<Vec<Vec<usize>>>,
    find: FxHashMap<(usize, Vec<usize>), usize>,
}

impl IndexSpecs {
    pub(super) fn new(preds: usize) -> Self {
        IndexSpecs {
            specs: vec![Vec::new(); preds],
            find: FxHashMap::default(),
        }
    }

    /// The index of `pred` on `cols`, registered on first use; `None` (read every row) when no column is
    /// bound.
    pub(super) fn index_on(&mut self, pred: usize, cols: Vec<usize>) -> Option<usize> {
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
pub(super) struct Slots<'a> {
    pub(super) names: FxHashMap<&'a str, usize>,
    pub(super) compiled: FxHashMap<*const Expr, Arc<CExpr>>,
}

impl<'a> Slots<'a> {
    pub(super) fn slot(&mut self, name: &'a str) -> usize {
        let n = self.names.len();
        *self.names.entry(name).or_insert(n)
    }

    pub(super) fn expr(&mut self, e: &'a Expr) -> Arc<CExpr> {
        if let Some(c) = self.compiled.get(&std::ptr::from_ref(e)) {
            return Arc::clone(c);
        }
        let c = Arc::new(self.build(e));
        self.compiled.insert(std::ptr::from_ref(e), Arc::clone(&c));
        c
    }

    /// Recursive over the expression: its height is bounded by the parser.
    pub(super) fn build(&mut self, e: &'a Expr) -> CExpr {
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
pub(super) fn key_arg<'a>(arg: &'a Expr, slots: &mut Slots<'a>) -> Option<Arg> {
    match arg {
        Expr::Const(v, _) => Some(Arg::Const(*v)),
        Expr::Var(v, _) => Some(Arg::Slot(slots.slot(v))),
        _ => None,
    }
}
