//! Arithmetic and comparison of values, as rules define them: shared by evaluation, aggregates and the
//! parser's constant folding (which must give the same results as evaluation).

use crate::ast::{ArithOp, CmpOp};
use crate::value::Value;

/// `a op b`, or `None` when undefined (division by zero, overflow, non-finite float, arithmetic on a
/// symbol): the rule instance then derives nothing, as in clingo.
pub(crate) fn arith(op: ArithOp, a: Value, b: Value) -> Option<Value> {
    if op == ArithOp::Abs {
        let negated = match a {
            Value::Int(i) => Value::Int(i.checked_neg()?),
            Value::Float(x) => Value::from(-x.get()),
            Value::Sym(_) => return None,
        };
        return arith(ArithOp::Max, a, negated);
    }
    if let ArithOp::Min | ArithOp::Max = op {
        // By value, as comparisons order numbers; the value keeps its type (min(2, 3.5) is 2).
        if matches!(a, Value::Sym(_)) || matches!(b, Value::Sym(_)) {
            return None;
        }
        let a_first = a.compare(b).is_le() == (op == ArithOp::Min);
        return Some(if a_first { a } else { b });
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => match op {
            ArithOp::Add => x.checked_add(y),
            ArithOp::Sub => x.checked_sub(y),
            ArithOp::Mul => x.checked_mul(y),
            // Integer division truncates toward zero, like Soufflé and C.
            ArithOp::Div => x.checked_div(y),
            ArithOp::Mod => x.checked_rem(y),
            ArithOp::Min | ArithOp::Max | ArithOp::Abs => None,
        }
        .map(Value::Int),
        (Value::Sym(_), _) | (_, Value::Sym(_)) => None,
        (a, b) => {
            let (x, y) = (a.as_f64()?, b.as_f64()?);
            let r = match op {
                ArithOp::Add => x + y,
                ArithOp::Sub => x - y,
                ArithOp::Mul => x * y,
                ArithOp::Div => x / y,
                ArithOp::Mod => x % y,
                ArithOp::Min | ArithOp::Max | ArithOp::Abs => return None,
            };
            r.is_finite().then(|| Value::from(r))
        }
    }
}

/// Whether `a op b` holds, comparing numbers by value (`2` equals `2.0`).
#[inline]
pub(crate) fn compare(op: CmpOp, a: Value, b: Value) -> bool {
    let ord = a.compare(b);
    match op {
        CmpOp::Eq => ord.is_eq(),
        CmpOp::Ne => ord.is_ne(),
        CmpOp::Lt => ord.is_lt(),
        CmpOp::Le => ord.is_le(),
        CmpOp::Gt => ord.is_gt(),
        CmpOp::Ge => ord.is_ge(),
    }
}
