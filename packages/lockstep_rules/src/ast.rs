//! The syntax tree of rule files: what the parser builds from the text, and what the checks, the warnings
//! and the planner read. It holds only data and the walks over it, so every other module can use it
//! without depending on the parser.

use crate::error::Location;
use crate::value::Value;

/// Binary arithmetic operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `a mod b`: the remainder of the truncating division (its sign is `a`'s, as C's and Soufflé's `%`).
    Mod,
    /// The functions `min(a, b)` and `max(a, b)` (by value, as comparisons order numbers).
    Min,
    Max,
    /// `abs(a)`, written `Bin(Abs, a, 0)`: `max(a, -a)` by value (the second operand is ignored). One node,
    /// so that nested calls do not copy their argument (`abs(abs(...))` would double it per level).
    Abs,
}

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// An argument or a side of a comparison.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Const(Value, Location),
    Var(String, Location),
    Anon(Location),
    Neg(Box<Expr>, Location),
    Bin(ArithOp, Box<Expr>, Box<Expr>, Location),
}

impl Expr {
    pub(crate) fn location(&self) -> &Location {
        match self {
            Expr::Const(_, l) | Expr::Var(_, l) | Expr::Anon(l) | Expr::Neg(_, l) | Expr::Bin(_, _, _, l) => {
                l
            }
        }
    }

    /// Calls `f` on every variable occurrence (named and anonymous), left to right.
    pub(crate) fn visit_vars<'a>(&'a self, f: &mut impl FnMut(Option<&'a str>, &'a Location)) {
        match self {
            Expr::Const(..) => {}
            Expr::Var(name, l) => f(Some(name), l),
            Expr::Anon(l) => f(None, l),
            Expr::Neg(e, _) => e.visit_vars(f),
            Expr::Bin(_, a, b, _) => {
                a.visit_vars(f);
                b.visit_vars(f);
            }
        }
    }
}

/// `pred(args)`.
#[derive(Debug, Clone)]
pub(crate) struct Atom {
    pub pred: String,
    pub args: Vec<Expr>,
    pub location: Location,
}

/// An aggregate's function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggOp {
    Count,
    Sum,
    Min,
    Max,
}

/// One body literal.
#[derive(Debug, Clone)]
pub(crate) enum Literal {
    Pos(Atom),
    Neg(Atom),
    Cmp {
        op: CmpOp,
        lhs: Expr,
        rhs: Expr,
    },
    /// `Target = op [value] : { atom }`: over the rows of `atom` matching the variables bound outside it.
    Agg {
        target: String,
        target_location: Location,
        op: AggOp,
        value: Option<Expr>,
        atom: Atom,
    },
}

/// A fact (empty body) or a rule; a body with `|` yields one [`Clause`] per alternative.
#[derive(Debug, Clone)]
pub(crate) struct Clause {
    pub head: Atom,
    pub body: Vec<Literal>,
    pub is_fact: bool,
}
