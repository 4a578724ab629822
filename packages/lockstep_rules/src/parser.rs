//! The recursive-descent parser that builds the syntax tree of rule files (the types of [`crate::ast`])
//! from the tokens of [`crate::lexer`]. Expressions are parsed by the methods of `parse_expr.rs`.
//!
//! Grammar (a subset of Soufflé's and clingo's rule syntax, without declarations):
//!
//! ```text
//! program    := clause*
//! clause     := atom '.' | atom ':-' body '.'
//! body       := conj ('|' conj)*            // `|` is "or": one rule per alternative
//! conj       := literal (',' literal)*
//! literal    := atom | ('!' | 'not') atom | expr cmp expr
//! cmp        := '=' | '!=' | '<' | '<=' | '>' | '>='
//! atom       := name [ '(' [expr (',' expr)*] ')' ]
//! expr       := term (('+' | '-') term)*
//! term       := unary (('*' | '/' | 'mod') unary)*   // `%` starts a comment, as in clingo
//! unary      := '-' unary | primary
//! primary    := INT | FLOAT | STRING | symbol | Variable | '_' | '(' expr ')' | func '(' expr (',' expr)* ')'
//! func       := 'min' | 'max' | 'abs'        // min/max: two or more arguments; abs: one
//! aggregate  := Variable '=' ('count' | ('sum' | 'min' | 'max') expr) ':' '{' atom '}'   // a literal
//! ```
//!
//! Arithmetic in a body atom's argument (`fib(N - 1, A)`) is lifted into a fresh variable and an equation
//! (`fib(#0, A), #0 = N - 1`): a test once both sides are bound for a positive atom, so `2` matches `2.0` as in
//! any comparison; bound before the atom for a negated one (`!p(N + 1)` is `#0 = N + 1, !p(#0)`).

use std::sync::Arc;

use crate::ast::{AggOp, Atom, Clause, CmpOp, Expr, Literal};
use crate::directives::{ColumnType, Decl, Directives};
use crate::error::{Error, Location, Result};
use crate::lexer::{describe, tokenize, Tok};
use crate::limits::{MAX_BODY_LITERALS, MAX_DIAGNOSTICS, MAX_TEXT_BYTES};

/// The names that are functions in expressions: `min(a, b, ...)`, `max(a, b, ...)`, `abs(x)`.
pub(crate) const FUNCTIONS: [&str; 3] = ["min", "max", "abs"];

/// The length of `body` after [`lift_arithmetic`]: one more literal per arithmetic argument of an atom.
fn lifted_len(body: &[Literal]) -> usize {
    let lifted = |a: &Atom| {
        (a.args.iter())
            .filter(|e| matches!(e, Expr::Neg(..) | Expr::Bin(..)))
            .count()
    };
    (body.iter())
        .map(|lit| match lit {
            Literal::Pos(a) | Literal::Neg(a) => 1 + lifted(a),
            Literal::Cmp { .. } | Literal::Agg { .. } => 1,
        })
        .sum()
}

/// Replace each arithmetic argument of a body atom by a fresh variable (`#0#fib`, `#1#fib`, ...: a name no
/// rule can write, carrying the predicate for messages) and an equation between them, placed after a
/// positive atom and before a negated one.
fn lift_arithmetic(body: Vec<Literal>) -> Vec<Literal> {
    let mut fresh = 0;
    let mut out = Vec::with_capacity(body.len());
    for lit in body {
        let (mut atom, negated) = match lit {
            Literal::Pos(a) => (a, false),
            Literal::Neg(a) => (a, true),
            other @ (Literal::Cmp { .. } | Literal::Agg { .. }) => {
                out.push(other);
                continue;
            }
        };
        let mut equations = Vec::new();
        for arg in &mut atom.args {
            if matches!(arg, Expr::Neg(..) | Expr::Bin(..)) {
                let location = arg.location().clone();
                let name = format!("#{fresh}#{}", atom.pred);
                fresh += 1;
                let expr = std::mem::replace(arg, Expr::Var(name.clone(), location.clone()));
                equations.push(Literal::Cmp {
                    op: CmpOp::Eq,
                    lhs: Expr::Var(name, location),
                    rhs: expr,
                });
            }
        }
        if negated {
            out.extend(equations);
            out.push(Literal::Neg(atom));
        } else {
            out.push(Literal::Pos(atom));
            out.extend(equations);
        }
    }
    out
}

pub(crate) struct Parser {
    toks: Vec<(Tok, Location)>,
    pub(crate) pos: usize,
    directives: Directives,
    /// How many expressions are open around the cursor (kept by the expression methods of `parse_expr.rs`).
    pub(crate) nesting: u32,
}

impl Parser {
    pub(crate) fn peek(&self) -> &Tok {
        self.toks.get(self.pos).map_or(&Tok::Eof, |t| &t.0)
    }

    pub(crate) fn peek2(&self) -> &Tok {
        self.toks.get(self.pos + 1).map_or(&Tok::Eof, |t| &t.0)
    }

    pub(crate) fn loc(&self) -> Location {
        match self.toks.get(self.pos).or_else(|| self.toks.last()) {
            Some((_, l)) => l.clone(),
            None => Location {
                origin: Arc::from(""),
                line: 1,
                column: 1,
            },
        }
    }

    pub(crate) fn next(&mut self) -> (Tok, Location) {
        let item = self.toks.get(self.pos).cloned();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        item.unwrap_or((Tok::Eof, self.loc()))
    }

    pub(crate) fn unexpected(&self, expected: &str) -> Error {
        Error::Parse {
            location: self.loc(),
            message: format!("expected {expected}, found {}", describe(self.peek())),
        }
    }

    pub(crate) fn expect(&mut self, tok: &Tok, expected: &str) -> Result<()> {
        if self.peek() == tok {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    /// Every clause; after a syntax error, parsing goes on after the next `.`, so one run reports every
    /// clause that does not parse.
    fn clauses(&mut self, out: &mut Vec<Clause>) -> Result<()> {
        let mut errors = Vec::new();
        while *self.peek() != Tok::Eof {
            if let Err(e) = self.clause(out) {
                if errors.len() == MAX_DIAGNOSTICS {
                    errors.push(Error::Parse {
                        location: e.location().cloned().unwrap_or_else(|| self.loc()),
                        message: format!("too many errors; stopped after {MAX_DIAGNOSTICS}"),
                    });
                    break;
                }
                errors.push(e);
                while !matches!(self.next().0, Tok::Dot | Tok::Eof) {}
            }
        }
        match Error::from_list(errors) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn clause(&mut self, out: &mut Vec<Clause>) -> Result<()> {
        if *self.peek() == Tok::Dot {
            return self.directive();
        }
        {
            let head = self.atom("a fact or rule head (a lowercase predicate name)")?;
            match self.peek() {
                Tok::Dot => {
                    self.pos += 1;
                    out.push(Clause {
                        head,
                        body: Vec::new(),
                        is_fact: true,
                    });
                }
                Tok::If => {
                    self.pos += 1;
                    let mut alternatives = vec![self.conjunction()?];
                    while *self.peek() == Tok::Pipe {
                        self.pos += 1;
                        alternatives.push(self.conjunction()?);
                    }
                    if let Some(len) = alternatives.iter().map(|b| lifted_len(b)).max() {
                        if len > MAX_BODY_LITERALS {
                            return Err(Error::Parse {
                                location: head.location.clone(),
                                message: format!(
                                    "rule body of {len} literals (counting each arithmetic argument of an \
                                     atom) is longer than the limit of {MAX_BODY_LITERALS}; split the rule \
                                     with intermediate predicates"
                                ),
                            });
                        }
                    }
                    self.expect(&Tok::Dot, "`,`, `|` or `.` after a body literal")?;
                    for body in alternatives {
                        out.push(Clause {
                            head: head.clone(),
                            body: lift_arithmetic(body),
                            is_fact: false,
                        });
                    }
                }
                Tok::Colon => {
                    return Err(Error::Parse {
                        location: self.loc(),
                        message: "expected `:-` after `:`".into(),
                    })
                }
                _ => return Err(self.unexpected("`.` or `:-` after the head")),
            }
        }
        Ok(())
    }

    /// The aggregate starting at the cursor, if one does: `count :`, or `sum`, `min`, `max` not followed by
    /// `(` (that is the function).
    fn aggregate_op(&self) -> Option<AggOp> {
        let Tok::Ident(name) = self.peek() else {
            return None;
        };
        match (name.as_str(), self.peek2()) {
            ("count", Tok::Colon) => Some(AggOp::Count),
            ("sum", next) if *next != Tok::LParen => Some(AggOp::Sum),
            ("min", next) if *next != Tok::LParen => Some(AggOp::Min),
            ("max", next) if *next != Tok::LParen => Some(AggOp::Max),
            _ => None,
        }
    }

    /// `op [value] : { atom }`, after `Target =`.
    fn aggregate(&mut self, target: String, target_location: Location, op: AggOp) -> Result<Literal> {
        self.pos += 1;
        let value = if op == AggOp::Count {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect(&Tok::Colon, "`:` before the aggregate's `{ atom }`")?;
        self.expect(&Tok::LBrace, "`{` and an atom after `:`")?;
        let atom = self.atom("an atom inside `{ }`")?;
        self.expect(&Tok::RBrace, "`}` (an aggregate reads one atom)")?;
        Ok(Literal::Agg {
            target,
            target_location,
            op,
            value,
            atom,
        })
    }

    /// `.decl name(col: type, ...)`, `.input name`, `.output name` (after them an optional `.` is allowed).
    fn directive(&mut self) -> Result<()> {
        self.pos += 1;
        let (tok, location) = self.next();
        let kind = match tok {
            Tok::Ident(kind) if matches!(kind.as_str(), "decl" | "input" | "output") => kind,
            _ => {
                self.pos -= 1;
                return Err(self.unexpected("a directive (`.decl`, `.input` or `.output`) after `.`"));
            }
        };
        let name = match self.next() {
            (Tok::Ident(name), _) => name,
            _ => {
                self.pos -= 1;
                return Err(self.unexpected("a relation name"));
            }
        };
        if kind == "decl" {
            self.expect(&Tok::LParen, "`(` after the relation's name")?;
            let mut columns = Vec::new();
            while *self.peek() != Tok::RParen {
                let column = match self.next() {
                    (Tok::Ident(c) | Tok::Var(c), _) => c,
                    _ => {
                        self.pos -= 1;
                        return Err(self.unexpected("a column name"));
                    }
                };
                self.expect(&Tok::Colon, "`:` and a type after the column name")?;
                let ty = match self.next() {
                    (Tok::Ident(t), l) => ColumnType::parse(&t).ok_or_else(|| Error::Parse {
                        location: l,
                        message: format!("unknown type `{t}` (types: number, unsigned, float, symbol)"),
                    })?,
                    _ => {
                        self.pos -= 1;
                        return Err(self.unexpected("a type (number, unsigned, float, symbol)"));
                    }
                };
                columns.push((column, ty));
                if *self.peek() == Tok::Comma {
                    self.pos += 1;
                }
            }
            self.pos += 1;
            self.directives.decls.push(Decl {
                name,
                columns,
                location,
            });
        } else if *self.peek() == Tok::LParen {
            return Err(self.unexpected(&format!("a new line after `.{kind} {name}` (parameters such as IO=file are not supported: files are named <relation>.facts and <relation>.csv)")));
        } else if kind == "input" {
            self.directives.inputs.push(name);
        } else {
            self.directives.outputs.push(name);
        }
        Ok(())
    }

    fn conjunction(&mut self) -> Result<Vec<Literal>> {
        let mut lits = vec![self.literal()?];
        while *self.peek() == Tok::Comma {
            self.pos += 1;
            lits.push(self.literal()?);
        }
        Ok(lits)
    }

    fn literal(&mut self) -> Result<Literal> {
        match self.peek().clone() {
            Tok::Bang => {
                self.pos += 1;
                Ok(Literal::Neg(self.atom("a predicate after `!`")?))
            }
            Tok::Ident(name) if name == "not" && matches!(self.peek2(), Tok::Ident(_)) => {
                self.pos += 1;
                Ok(Literal::Neg(self.atom("a predicate after `not`")?))
            }
            Tok::Ident(name) if self.starts_atom(&name) => Ok(Literal::Pos(self.atom("a body literal")?)),
            _ => {
                let lhs = self.expr()?;
                let op = match self.peek() {
                    Tok::Cmp(op) => *op,
                    _ => return Err(self.unexpected("a comparison operator (= != < <= > >=)")),
                };
                self.pos += 1;
                if let (CmpOp::Eq, Expr::Var(target, target_location), Some(agg)) =
                    (op, &lhs, self.aggregate_op())
                {
                    return self.aggregate(target.clone(), target_location.clone(), agg);
                }
                let rhs = self.expr()?;
                Ok(Literal::Cmp { op, lhs, rhs })
            }
        }
    }

    fn atom(&mut self, expected: &str) -> Result<Atom> {
        let (tok, location) = match self.peek() {
            Tok::Ident(_) => self.next(),
            _ => return Err(self.unexpected(expected)),
        };
        let Tok::Ident(pred) = tok else {
            return Err(self.unexpected(expected));
        };
        let mut args = Vec::new();
        if *self.peek() == Tok::LParen {
            self.pos += 1;
            if *self.peek() != Tok::RParen {
                args.push(self.expr()?);
                while *self.peek() == Tok::Comma {
                    self.pos += 1;
                    args.push(self.expr()?);
                }
            }
            self.expect(&Tok::RParen, "`,` or `)` in an argument list")?;
        }
        Ok(Atom { pred, args, location })
    }
}

impl Parser {
    /// Whether the name at the cursor starts an atom (not a comparison's side, not a function call).
    fn starts_atom(&self, name: &str) -> bool {
        let call = FUNCTIONS.contains(&name) && *self.peek2() == Tok::LParen;
        !call && !matches!(self.peek2(), Tok::Cmp(_) | Tok::Arith(_))
    }
}

/// Texts with more `(` than this are parsed on a thread of their own (see [`parse`]).
const INLINE_PARENTHESES: usize = 32;

/// The stack of that thread: 256 nesting levels take about 2.7 MB in an unoptimised build (the parser
/// recurses several frames deep per parenthesis or call), more than the 2 MiB of a spawned or tokio thread.
const PARSER_STACK_BYTES: usize = 32 << 20;

/// Parses `text`; `origin` names it in locations.
///
/// Nesting is bounded by [`crate::limits::MAX_NESTING`], but the caller's stack may be small, so a text
/// that could nest deeply (many `(`: the parser recurses only on parentheses and calls) is parsed on a
/// thread with a stack known to hold the limit.
pub(crate) fn parse(text: &str, origin: &str) -> Result<(Vec<Clause>, Directives)> {
    if text.bytes().filter(|&b| b == b'(').count() <= INLINE_PARENTHESES {
        return parse_here(text, origin);
    }
    let internal = |what: String| Error::Parse {
        location: Location {
            origin: Arc::from(origin),
            line: 1,
            column: 1,
        },
        message: format!("internal error: the rule parser's thread {what}"),
    };
    std::thread::scope(|scope| {
        let parser = std::thread::Builder::new()
            .name("rules-parser".into())
            .stack_size(PARSER_STACK_BYTES)
            .spawn_scoped(scope, || parse_here(text, origin))
            .map_err(|e| internal(format!("could not start: {e}")))?;
        parser.join().map_err(|_| internal("stopped".into()))?
    })
}

fn parse_here(text: &str, origin: &str) -> Result<(Vec<Clause>, Directives)> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(Error::Parse {
            location: Location {
                origin: Arc::from(origin),
                line: 1,
                column: 1,
            },
            message: format!("rule text is larger than the limit of {MAX_TEXT_BYTES} bytes (16 MiB)"),
        });
    }
    let mut parser = Parser {
        toks: tokenize(text, origin)?,
        pos: 0,
        directives: Directives::default(),
        nesting: 0,
    };
    let mut clauses = Vec::new();
    parser.clauses(&mut clauses)?;
    Ok((clauses, parser.directives))
}
