//! Aggregates (`C = count : { edge(X, _) }`, `S = sum W : { w(X, W) }`, `min`, `max`): the fold over the
//! rows of one atom, in a lower stratum, that match the variables bound outside the aggregate.

use crate::arith::arith;
use crate::ast::{AggOp, ArithOp};
use crate::program::{eval_expr, CExpr, Step};
use crate::relation::{bind_row, Relation};
use crate::value::{hash_values, Value};

/// Fold `value` (or count) over the rows `inner` matches in its whole relation; `None` for `min` or `max`
/// over no row, or an overflowing `sum` (the rule instance then derives nothing).
pub(crate) fn fold(
    rels: &[Relation],
    inner: &Step,
    op: AggOp,
    value: Option<&CExpr>,
    regs: &mut [Value],
) -> Option<Value> {
    let mut acc: Option<Value> = match op {
        AggOp::Count | AggOp::Sum => Some(Value::Int(0)),
        AggOp::Min | AggOp::Max => None,
    };
    let mut failed = false;
    let mut add = |regs: &[Value]| {
        let v = match (op, value) {
            (AggOp::Count, _) | (_, None) => Value::Int(1),
            (_, Some(e)) => match eval_expr(e, regs) {
                Some(v) => v,
                None => return failed = true,
            },
        };
        acc = match (op, acc) {
            (AggOp::Count | AggOp::Sum, Some(a)) => arith(ArithOp::Add, a, v),
            (AggOp::Min, Some(a)) => arith(ArithOp::Min, a, v),
            (AggOp::Max, Some(a)) => arith(ArithOp::Max, a, v),
            (_, None) => Some(v),
        };
        failed |= acc.is_none() && matches!(op, AggOp::Count | AggOp::Sum);
    };
    match inner {
        Step::Contains { pred, args, .. } => {
            let rel = &rels[*pred];
            let hash = hash_values(args.iter().map(|a| a.get(regs)));
            if rel.find_hashed(hash, |c| args[c].get(regs)).is_some() {
                add(regs);
            }
        }
        Step::Scan {
            pred,
            index,
            key,
            binds,
            same,
            ..
        } => {
            let rel = &rels[*pred];
            rel.for_each_match(*index, key, (0, rel.len()), regs, |row, regs| {
                if bind_row(row, same, binds, regs) {
                    add(regs);
                }
            });
        }
        _ => {}
    }
    if failed {
        None
    } else {
        acc
    }
}
