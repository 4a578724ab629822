//! Lexer for rule files: characters to tokens, each with the `file:line:column` it starts at.
//!
//! Comments run from `//` or `%` to the end of the line.

use std::sync::Arc;

use crate::ast::{ArithOp, CmpOp};
use crate::error::{Error, Location, Result};

/// A token of a rule file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    Var(String),
    Anon,
    Int(i64),
    Float(f64),
    Str(String),
    LParen,
    RParen,
    /// `{` and `}` around an aggregate's atom.
    LBrace,
    RBrace,
    Comma,
    Dot,
    If,
    /// `:` alone (the column types of a `.decl`).
    Colon,
    Bang,
    Pipe,
    Cmp(CmpOp),
    Arith(ArithOp),
    Eof,
}

/// A token's text as a diagnostic quotes it: at most 40 characters, so that a huge name or string in a
/// hostile text still gives a short one-line error.
pub(crate) fn clip(text: &str) -> String {
    const MAX_CHARS: usize = 40;
    match text.char_indices().nth(MAX_CHARS) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

/// How a diagnostic names `tok`.
pub(crate) fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Ident(s) => format!("`{}`", clip(s)),
        Tok::Var(s) => format!("variable `{}`", clip(s)),
        Tok::Anon => "`_`".into(),
        Tok::Int(i) => format!("`{i}`"),
        Tok::Float(x) => format!("`{x:?}`"),
        Tok::Str(s) => format!("string {:?}", clip(s)),
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
        Tok::LBrace => "`{`".into(),
        Tok::RBrace => "`}`".into(),
        Tok::Comma => "`,`".into(),
        Tok::Dot => "`.`".into(),
        Tok::If => "`:-`".into(),
        Tok::Colon => "`:`".into(),
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
        ArithOp::Mod => "mod",
        ArithOp::Min => "min",
        ArithOp::Max => "max",
        ArithOp::Abs => "abs",
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

    /// Consumes the next character when it is `c`: the second character of `:-`, `!=`, `<=` and `>=`.
    fn eat(&mut self, c: char) -> bool {
        let next = self.peek() == Some(c);
        if next {
            self.bump();
        }
        next
    }

    fn err(&self, location: Location, message: impl Into<String>) -> Error {
        Error::Parse {
            location,
            message: message.into(),
        }
    }

    /// Skips whitespace and comments: `//` and `%` to the end of the line, `/* ... */` (not nested).
    fn skip_trivia(&mut self) -> Result<()> {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('%') => self.skip_line(),
                Some('/') => {
                    let mut ahead = self.chars.clone();
                    ahead.next();
                    match ahead.peek() {
                        Some('/') => self.skip_line(),
                        Some('*') => self.skip_block()?,
                        _ => return Ok(()),
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// Skips a `/* ... */` comment, from its `/`.
    fn skip_block(&mut self) -> Result<()> {
        let start = self.loc();
        self.bump();
        self.bump();
        let mut star = false;
        while let Some(c) = self.bump() {
            if star && c == '/' {
                return Ok(());
            }
            star = c == '*';
        }
        Err(self.err(start, "unterminated `/*` comment"))
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
        self.skip_trivia()?;
        let loc = self.loc();
        let Some(c) = self.bump() else {
            return Ok((Tok::Eof, loc));
        };
        let tok = match c {
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '{' => Tok::LBrace,
            '}' => Tok::RBrace,
            ',' => Tok::Comma,
            '.' => Tok::Dot,
            '|' => Tok::Pipe,
            '+' => Tok::Arith(ArithOp::Add),
            '-' => Tok::Arith(ArithOp::Sub),
            '*' => Tok::Arith(ArithOp::Mul),
            '/' => Tok::Arith(ArithOp::Div),
            '=' => Tok::Cmp(CmpOp::Eq),
            ':' if self.eat('-') => Tok::If,
            ':' => Tok::Colon,
            '!' if self.eat('=') => Tok::Cmp(CmpOp::Ne),
            '!' => Tok::Bang,
            '<' if self.eat('=') => Tok::Cmp(CmpOp::Le),
            '<' => Tok::Cmp(CmpOp::Lt),
            '>' if self.eat('=') => Tok::Cmp(CmpOp::Ge),
            '>' => Tok::Cmp(CmpOp::Gt),
            '"' => self.string(&loc)?,
            c if c.is_ascii_digit() => self.number(c, &loc)?,
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut text = String::from(c);
                self.take_while(&mut text, |n| n.is_ascii_alphanumeric() || n == '_');
                if text == "_" {
                    Tok::Anon
                } else if text == "mod" {
                    Tok::Arith(ArithOp::Mod)
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
                .map_err(|_| self.err(start.clone(), format!("invalid number `{}`", clip(&text))))
        } else {
            text.parse::<i64>().map(Tok::Int).map_err(|_| {
                let message = format!("integer `{}` does not fit in 64 bits", clip(&text));
                self.err(start.clone(), message)
            })
        }
    }

    fn digits(&mut self, text: &mut String) {
        self.take_while(text, |d| d.is_ascii_digit());
    }

    /// Moves characters to `text` while `keep` accepts them.
    fn take_while(&mut self, text: &mut String, keep: impl Fn(char) -> bool) {
        while let Some(c) = self.peek().filter(|&c| keep(c)) {
            text.push(c);
            self.bump();
        }
    }
}

/// Splits `text` into tokens, the last one [`Tok::Eof`]; `origin` names it in locations.
pub(crate) fn tokenize(text: &str, origin: &str) -> Result<Vec<(Tok, Location)>> {
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
            return Ok(toks);
        }
    }
}
