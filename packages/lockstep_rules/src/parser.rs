//! Lexer and recursive-descent parser for rule files.
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
//! term       := unary (('*' | '/') unary)*
//! unary      := '-' unary | primary
//! primary    := INT | FLOAT | STRING | symbol | Variable | '_' | '(' expr ')'
//! ```
//!
//! Comments run from `//` or `%` to the end of the line.

use std::sync::Arc;

use crate::error::{Error, Location, Result};
use crate::value::Value;

/// Binary arithmetic operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
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

/// One body literal.
#[derive(Debug, Clone)]
pub(crate) enum Literal {
    Pos(Atom),
    Neg(Atom),
    Cmp { op: CmpOp, lhs: Expr, rhs: Expr },
}

/// A fact (empty body) or a rule; a body with `|` yields one [`Clause`] per alternative.
#[derive(Debug, Clone)]
pub(crate) struct Clause {
    pub head: Atom,
    pub body: Vec<Literal>,
    pub is_fact: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Var(String),
    Anon,
    Int(i64),
    Float(f64),
    Str(String),
    LParen,
    RParen,
    Comma,
    Dot,
    If,
    Bang,
    Pipe,
    Cmp(CmpOp),
    Arith(ArithOp),
    Eof,
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Var(s) => format!("variable `{s}`"),
        Tok::Anon => "`_`".into(),
        Tok::Int(i) => format!("`{i}`"),
        Tok::Float(x) => format!("`{x:?}`"),
        Tok::Str(s) => format!("string {s:?}"),
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
        Tok::Comma => "`,`".into(),
        Tok::Dot => "`.`".into(),
        Tok::If => "`:-`".into(),
        Tok::Bang => "`!`".into(),
        Tok::Pipe => "`|`".into(),
        Tok::Cmp(op) => format!("`{}`", cmp_text(*op)),
        Tok::Arith(op) => format!("`{}`", arith_text(*op)),
        Tok::Eof => "end of file".into(),
    }
}

pub(crate) fn cmp_text(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "=",
        CmpOp::Ne => "!=",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}

fn arith_text(op: ArithOp) -> &'static str {
    match op {
        ArithOp::Add => "+",
        ArithOp::Sub => "-",
        ArithOp::Mul => "*",
        ArithOp::Div => "/",
    }
}

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: u32,
    column: u32,
    origin: Arc<str>,
}

impl Lexer<'_> {
    fn loc(&self) -> Location {
        Location {
            origin: self.origin.clone(),
            line: self.line,
            column: self.column,
        }
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn peek(&mut self) -> Option<char> {
        self.chars.peek().copied()
    }

    fn err(&self, location: Location, message: impl Into<String>) -> Error {
        Error::Parse {
            location,
            message: message.into(),
        }
    }

    fn skip_trivia(&mut self) {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('%') => self.skip_line(),
                Some('/') => {
                    let mut ahead = self.chars.clone();
                    ahead.next();
                    if ahead.peek() == Some(&'/') {
                        self.skip_line();
                    } else {
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' {
                return;
            }
            self.bump();
        }
    }

    fn next_token(&mut self) -> Result<(Tok, Location)> {
        self.skip_trivia();
        let loc = self.loc();
        let Some(c) = self.bump() else {
            return Ok((Tok::Eof, loc));
        };
        let tok = match c {
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            ',' => Tok::Comma,
            '.' => Tok::Dot,
            '|' => Tok::Pipe,
            '+' => Tok::Arith(ArithOp::Add),
            '-' => Tok::Arith(ArithOp::Sub),
            '*' => Tok::Arith(ArithOp::Mul),
            '/' => Tok::Arith(ArithOp::Div),
            '=' => Tok::Cmp(CmpOp::Eq),
            ':' => {
                if self.peek() == Some('-') {
                    self.bump();
                    Tok::If
                } else {
                    return Err(self.err(loc, "expected `:-` after `:`"));
                }
            }
            '!' => {
                if self.peek() == Some('=') {
                    self.bump();
                    Tok::Cmp(CmpOp::Ne)
                } else {
                    Tok::Bang
                }
            }
            '<' => {
                if self.peek() == Some('=') {
                    self.bump();
                    Tok::Cmp(CmpOp::Le)
                } else {
                    Tok::Cmp(CmpOp::Lt)
                }
            }
            '>' => {
                if self.peek() == Some('=') {
                    self.bump();
                    Tok::Cmp(CmpOp::Ge)
                } else {
                    Tok::Cmp(CmpOp::Gt)
                }
            }
            '"' => self.string(&loc)?,
            c if c.is_ascii_digit() => self.number(c, &loc)?,
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut text = String::from(c);
                while let Some(n) = self.peek() {
                    if n.is_ascii_alphanumeric() || n == '_' {
                        text.push(n);
                        self.bump();
                    } else {
                        break;
                    }
                }
                if text == "_" {
                    Tok::Anon
                } else if c.is_ascii_lowercase() {
                    Tok::Ident(text)
                } else {
                    Tok::Var(text)
                }
            }
            other => return Err(self.err(loc, format!("unexpected character `{other}`"))),
        };
        Ok((tok, loc))
    }

    fn string(&mut self, start: &Location) -> Result<Tok> {
        let mut text = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => return Err(self.err(start.clone(), "unterminated string")),
                Some('"') => return Ok(Tok::Str(text)),
                Some('\\') => {
                    let loc = self.loc();
                    match self.bump() {
                        Some('n') => text.push('\n'),
                        Some('t') => text.push('\t'),
                        Some('\\') => text.push('\\'),
                        Some('"') => text.push('"'),
                        _ => return Err(self.err(loc, "unknown escape in string (use \\n \\t \\\\ \\\")")),
                    }
                }
                Some(c) => text.push(c),
            }
        }
    }

    fn number(&mut self, first: char, start: &Location) -> Result<Tok> {
        let mut text = String::from(first);
        let mut is_float = false;
        self.digits(&mut text);
        // A `.` is a decimal point only when a digit follows: `p(3).` ends a clause after `3`.
        let mut ahead = self.chars.clone();
        if ahead.next() == Some('.') && ahead.peek().is_some_and(char::is_ascii_digit) {
            is_float = true;
            text.push('.');
            self.bump();
            self.digits(&mut text);
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            let mut ahead = self.chars.clone();
            ahead.next();
            let sign = ahead.peek().copied();
            let ok = match sign {
                Some('+' | '-') => {
                    ahead.next();
                    ahead.peek().is_some_and(char::is_ascii_digit)
                }
                Some(d) => d.is_ascii_digit(),
                None => false,
            };
            if ok {
                is_float = true;
                text.push('e');
                self.bump();
                if let Some(s @ ('+' | '-')) = self.peek() {
                    text.push(s);
                    self.bump();
                }
                self.digits(&mut text);
            }
        }
        if is_float {
            text.parse::<f64>()
                .map(Tok::Float)
                .map_err(|_| self.err(start.clone(), format!("invalid number `{text}`")))
        } else {
            text.parse::<i64>()
                .map(Tok::Int)
                .map_err(|_| self.err(start.clone(), format!("integer `{text}` does not fit in 64 bits")))
        }
    }

    fn digits(&mut self, text: &mut String) {
        while let Some(d) = self.peek() {
            if d.is_ascii_digit() {
                text.push(d);
                self.bump();
            } else {
                break;
            }
        }
    }
}

struct Parser {
    toks: Vec<(Tok, Location)>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        self.toks.get(self.pos).map_or(&Tok::Eof, |t| &t.0)
    }

    fn peek2(&self) -> &Tok {
        self.toks.get(self.pos + 1).map_or(&Tok::Eof, |t| &t.0)
    }

    fn loc(&self) -> Location {
        match self.toks.get(self.pos).or_else(|| self.toks.last()) {
            Some((_, l)) => l.clone(),
            None => Location {
                origin: Arc::from(""),
                line: 1,
                column: 1,
            },
        }
    }

    fn next(&mut self) -> (Tok, Location) {
        let item = self.toks.get(self.pos).cloned();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        item.unwrap_or((Tok::Eof, self.loc()))
    }

    fn unexpected(&self, expected: &str) -> Error {
        Error::Parse {
            location: self.loc(),
            message: format!("expected {expected}, found {}", describe(self.peek())),
        }
    }

    fn expect(&mut self, tok: &Tok, expected: &str) -> Result<()> {
        if self.peek() == tok {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn clauses(&mut self, out: &mut Vec<Clause>) -> Result<()> {
        while *self.peek() != Tok::Eof {
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
                    self.expect(&Tok::Dot, "`,`, `|` or `.` after a body literal")?;
                    for body in alternatives {
                        out.push(Clause {
                            head: head.clone(),
                            body,
                            is_fact: false,
                        });
                    }
                }
                _ => return Err(self.unexpected("`.` or `:-` after the head")),
            }
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
            Tok::Ident(_) if !matches!(self.peek2(), Tok::Cmp(_) | Tok::Arith(_)) => {
                Ok(Literal::Pos(self.atom("a body literal")?))
            }
            _ => {
                let lhs = self.expr()?;
                let op = match self.peek() {
                    Tok::Cmp(op) => *op,
                    _ => return Err(self.unexpected("a comparison operator (= != < <= > >=)")),
                };
                self.pos += 1;
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

    fn expr(&mut self) -> Result<Expr> {
        let mut lhs = self.term()?;
        while let Tok::Arith(op @ (ArithOp::Add | ArithOp::Sub)) = *self.peek() {
            let location = self.loc();
            self.pos += 1;
            let rhs = self.term()?;
            lhs = fold(op, lhs, rhs, location);
        }
        Ok(lhs)
    }

    fn term(&mut self) -> Result<Expr> {
        let mut lhs = self.unary()?;
        while let Tok::Arith(op @ (ArithOp::Mul | ArithOp::Div)) = *self.peek() {
            let location = self.loc();
            self.pos += 1;
            let rhs = self.unary()?;
            lhs = fold(op, lhs, rhs, location);
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr> {
        if *self.peek() == Tok::Arith(ArithOp::Sub) {
            let location = self.loc();
            self.pos += 1;
            let inner = self.unary()?;
            // Fold negative literals so `-0.2` is a constant (facts need ground constants).
            return Ok(match inner {
                Expr::Const(Value::Int(i), _) if i != i64::MIN => Expr::Const(Value::Int(-i), location),
                Expr::Const(Value::Float(x), _) => Expr::Const(Value::from(-x.get()), location),
                other => Expr::Neg(Box::new(other), location),
            });
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr> {
        let (tok, location) = self.next();
        Ok(match tok {
            Tok::Int(i) => Expr::Const(Value::Int(i), location),
            Tok::Float(x) => Expr::Const(Value::from(x), location),
            Tok::Str(s) => Expr::Const(Value::from(s.as_str()), location),
            Tok::Ident(s) => Expr::Const(Value::from(s.as_str()), location),
            Tok::Var(v) => Expr::Var(v, location),
            Tok::Anon => Expr::Anon(location),
            Tok::LParen => {
                let e = self.expr()?;
                self.expect(&Tok::RParen, "`)`")?;
                e
            }
            _ => {
                self.pos -= 1;
                return Err(self.unexpected("a constant, a variable or `(`"));
            }
        })
    }
}

/// Builds `lhs op rhs`, evaluating it right away when both sides are constants.
fn fold(op: ArithOp, lhs: Expr, rhs: Expr, location: Location) -> Expr {
    if let (Expr::Const(a, _), Expr::Const(b, _)) = (&lhs, &rhs) {
        if let Some(v) = crate::eval::arith(op, *a, *b) {
            return Expr::Const(v, location);
        }
    }
    Expr::Bin(op, Box::new(lhs), Box::new(rhs), location)
}

/// Parses `text`; `origin` names it in locations.
pub(crate) fn parse(text: &str, origin: &str) -> Result<Vec<Clause>> {
    let mut lexer = Lexer {
        chars: text.chars().peekable(),
        line: 1,
        column: 1,
        origin: Arc::from(origin),
    };
    let mut toks = Vec::new();
    loop {
        let (tok, loc) = lexer.next_token()?;
        let end = tok == Tok::Eof;
        toks.push((tok, loc));
        if end {
            break;
        }
    }
    let mut parser = Parser { toks, pos: 0 };
    let mut clauses = Vec::new();
    parser.clauses(&mut clauses)?;
    Ok(clauses)
}
