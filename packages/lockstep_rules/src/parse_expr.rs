//! The expression part of the recursive-descent parser (see [`crate::parser`] for the grammar):
//! arithmetic, function calls and parentheses, with constant folding.
//!
//! Every expression is depth-checked while it is built: a parenthesis, a function call's argument or a chain
//! of operators deeper than [`MAX_NESTING`] is refused at its `file:line:column`. The parser recurses once
//! per parenthesis or call (never per operator or `-` sign), and the trees it returns are never higher than
//! the limit, so the recursive walks over them in checking, planning, evaluation and `Drop` stay shallow.

use crate::arith::arith;
use crate::ast::{ArithOp, Expr};
use crate::error::{Error, Location, Result};
use crate::lexer::Tok;
use crate::limits::MAX_NESTING;
use crate::parser::{Parser, FUNCTIONS};
use crate::value::Value;

/// An expression and its height (0 for a constant or a variable).
type Sized = (Expr, u32);

fn too_deep(location: Location) -> Error {
    Error::Parse {
        location,
        message: format!(
            "expression nested deeper than {MAX_NESTING} levels (parentheses, function calls, `-` signs or \
             chained operators); split it with intermediate variables"
        ),
    }
}

/// `lhs op rhs`, evaluated right away when both sides are constants; refused when higher than the limit.
fn fold(op: ArithOp, (lhs, hl): Sized, (rhs, hr): Sized, location: Location) -> Result<Sized> {
    if let (Expr::Const(a, _), Expr::Const(b, _)) = (&lhs, &rhs) {
        if let Some(v) = arith(op, *a, *b) {
            return Ok((Expr::Const(v, location), 0));
        }
    }
    let height = hl.max(hr) + 1;
    if height > MAX_NESTING {
        return Err(too_deep(location));
    }
    Ok((Expr::Bin(op, Box::new(lhs), Box::new(rhs), location), height))
}

/// `-inner`: a negative literal stays a constant (facts need ground constants).
fn negate((inner, height): Sized, location: Location) -> Result<Sized> {
    Ok(match inner {
        Expr::Const(Value::Int(i), _) if i != i64::MIN => (Expr::Const(Value::Int(-i), location), 0),
        Expr::Const(Value::Float(x), _) => (Expr::Const(Value::from(-x.get()), location), 0),
        other => {
            if height + 1 > MAX_NESTING {
                return Err(too_deep(location));
            }
            (Expr::Neg(Box::new(other), location), height + 1)
        }
    })
}

/// `min`/`max` over `args`, folded as a balanced tree so that many arguments do not make a high one. The
/// result is the same as folding left to right: `min` keeps the first smallest argument and `max` the last
/// largest at every level, and any symbol makes the whole call undefined either way.
fn fold_balanced(op: ArithOp, mut args: Vec<Sized>, location: &Location) -> Result<Sized> {
    while args.len() > 1 {
        let mut next = Vec::with_capacity(args.len().div_ceil(2));
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                Some(b) => next.push(fold(op, a, b, location.clone())?),
                None => next.push(a),
            }
        }
        args = next;
    }
    args.pop().ok_or_else(|| Error::Parse {
        location: location.clone(),
        message: "a function call without arguments".into(),
    })
}

impl Parser {
    pub(crate) fn expr(&mut self) -> Result<Expr> {
        self.expr_sized().map(|(e, _)| e)
    }

    /// One nesting level: the whole expression, a parenthesis or a function's argument.
    fn expr_sized(&mut self) -> Result<Sized> {
        if self.nesting >= MAX_NESTING {
            return Err(too_deep(self.loc()));
        }
        self.nesting += 1;
        let result = self.left_assoc(&[ArithOp::Add, ArithOp::Sub], Self::term);
        self.nesting -= 1;
        result
    }

    fn term(&mut self) -> Result<Sized> {
        self.left_assoc(&[ArithOp::Mul, ArithOp::Div, ArithOp::Mod], Self::unary)
    }

    /// `operand (op operand)*` for the operators `ops` of one precedence level, grouped to the left.
    fn left_assoc(&mut self, ops: &[ArithOp], operand: fn(&mut Self) -> Result<Sized>) -> Result<Sized> {
        let mut lhs = operand(self)?;
        loop {
            let op = match *self.peek() {
                Tok::Arith(op) if ops.contains(&op) => op,
                _ => return Ok(lhs),
            };
            let location = self.loc();
            self.pos += 1;
            let rhs = operand(self)?;
            lhs = fold(op, lhs, rhs, location)?;
        }
    }

    /// `-`* primary: the signs are counted in a loop, not by recursion, then applied innermost first.
    fn unary(&mut self) -> Result<Sized> {
        let mut signs = Vec::new();
        while *self.peek() == Tok::Arith(ArithOp::Sub) {
            if signs.len() >= MAX_NESTING as usize {
                return Err(too_deep(self.loc()));
            }
            signs.push(self.loc());
            self.pos += 1;
        }
        let mut e = self.primary()?;
        while let Some(location) = signs.pop() {
            e = negate(e, location)?;
        }
        Ok(e)
    }

    fn primary(&mut self) -> Result<Sized> {
        let (tok, location) = self.next();
        Ok(match tok {
            Tok::Int(i) => (Expr::Const(Value::Int(i), location), 0),
            Tok::Float(x) => (Expr::Const(Value::from(x), location), 0),
            Tok::Str(s) => (Expr::Const(Value::from(s.as_str()), location), 0),
            Tok::Ident(s) if FUNCTIONS.contains(&s.as_str()) && *self.peek() == Tok::LParen => {
                self.call(&s, location)?
            }
            Tok::Ident(s) => (Expr::Const(Value::from(s.as_str()), location), 0),
            Tok::Var(v) => (Expr::Var(v, location), 0),
            Tok::Anon => (Expr::Anon(location), 0),
            Tok::LParen => {
                let e = self.expr_sized()?;
                self.expect(&Tok::RParen, "`)`")?;
                e
            }
            _ => {
                self.pos -= 1;
                return Err(self.unexpected("a constant, a variable or `(`"));
            }
        })
    }

    /// `min(a, b, ...)`, `max(a, b, ...)` or `abs(x)` (= `max(x, -x)`, one node), after the name.
    fn call(&mut self, name: &str, location: Location) -> Result<Sized> {
        self.expect(&Tok::LParen, "`(`")?;
        let mut args = vec![self.expr_sized()?];
        while *self.peek() == Tok::Comma {
            self.pos += 1;
            args.push(self.expr_sized()?);
        }
        self.expect(&Tok::RParen, "`,` or `)` in the arguments of a function")?;
        let got = args.len();
        let wrong = |wanted: &str| Error::Parse {
            location: location.clone(),
            message: format!("`{name}` takes {wanted} argument(s), got {got}"),
        };
        match name {
            "abs" if args.len() == 1 => {
                let x = args.remove(0);
                fold(
                    ArithOp::Abs,
                    x,
                    (Expr::Const(Value::Int(0), location.clone()), 0),
                    location,
                )
            }
            "abs" => Err(wrong("one")),
            _ if args.len() < 2 => Err(wrong("two or more")),
            _ => {
                let op = if name == "min" { ArithOp::Min } else { ArithOp::Max };
                fold_balanced(op, args, &location)
            }
        }
    }
}
