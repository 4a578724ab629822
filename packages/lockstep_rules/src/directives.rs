//! Soufflé's directives, optional here: `.decl name(a: number, b: symbol)` declares a relation (checked
//! against every use and every fact written in the rules when present), `.input name` marks a relation whose
//! facts come from outside (`lockstep rules eval --facts-dir`, or asserted at run time: not "never
//! defined"), `.output name` one to write (`--output-dir`).

use std::collections::BTreeMap;

use crate::ast::{Clause, Expr, Literal};
use crate::error::{Error, Location};
use crate::value::Value;

/// A column type of a `.decl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// `number` (Soufflé's signed integer) or `unsigned`.
    Number,
    /// `float`.
    Float,
    /// `symbol`.
    Symbol,
}

impl ColumnType {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "number" | "unsigned" => Some(ColumnType::Number),
            "float" => Some(ColumnType::Float),
            "symbol" => Some(ColumnType::Symbol),
            _ => None,
        }
    }

    /// Whether `value` fits (a number fits `float` and an integral float fits `number`: numbers mix by value).
    pub fn admits(self, value: Value) -> bool {
        match (self, value) {
            (ColumnType::Symbol, Value::Sym(_)) => true,
            (ColumnType::Float, Value::Int(_) | Value::Float(_)) => true,
            (ColumnType::Number, Value::Int(_)) => true,
            (ColumnType::Number, Value::Float(x)) => x.get().fract() == 0.0,
            _ => false,
        }
    }

    /// A value of this type from a text field of a facts file.
    pub fn read(self, text: &str) -> Option<Value> {
        match self {
            ColumnType::Symbol => Some(Value::from(text)),
            ColumnType::Number => text.trim().parse::<i64>().ok().map(Value::Int),
            ColumnType::Float => text
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map(Value::from),
        }
    }
}

/// `.decl name(col: type, ...)`.
#[derive(Debug, Clone)]
pub struct Decl {
    pub name: String,
    pub columns: Vec<(String, ColumnType)>,
    pub location: Location,
}

/// The directives of all sources.
#[derive(Debug, Clone, Default)]
pub struct Directives {
    pub decls: Vec<Decl>,
    /// `.input` relations, in order.
    pub inputs: Vec<String>,
    /// `.output` relations, in order.
    pub outputs: Vec<String>,
}

impl Directives {
    /// The declaration of `name`, if any.
    pub fn decl(&self, name: &str) -> Option<&Decl> {
        self.decls.iter().find(|d| d.name == name)
    }
}

/// Check the declarations: one per relation, and every use and written fact agrees with it (arity, and the
/// column types of constants in facts).
pub(crate) fn check(clauses: &[Clause], directives: &Directives) -> Vec<Error> {
    let mut errors = Vec::new();
    let mut declared: BTreeMap<&str, &Decl> = BTreeMap::new();
    for d in &directives.decls {
        if let Some(first) = declared.insert(&d.name, d) {
            errors.push(Error::Parse {
                location: d.location.clone(),
                message: format!("`{}` is declared twice (first at {})", d.name, first.location),
            });
        }
    }
    let mut check_atom = |pred: &str, args: &[Expr], location: &Location, is_fact: bool| {
        let Some(decl) = declared.get(pred) else {
            return;
        };
        if args.len() != decl.columns.len() {
            errors.push(Error::ArityMismatch {
                location: location.clone(),
                predicate: pred.to_owned(),
                arity: args.len(),
                first_location: decl.location.clone(),
                first_arity: decl.columns.len(),
            });
            return;
        }
        if !is_fact {
            return;
        }
        for (arg, (column, ty)) in args.iter().zip(&decl.columns) {
            if let Expr::Const(v, l) = arg {
                if !ty.admits(*v) {
                    errors.push(Error::Parse {
                        location: l.clone(),
                        message: format!(
                            "`{v}` does not fit column `{column}` of `{pred}`, declared {ty:?} at {}",
                            decl.location
                        ),
                    });
                }
            }
        }
    };
    for clause in clauses {
        check_atom(
            &clause.head.pred,
            &clause.head.args,
            &clause.head.location,
            clause.is_fact,
        );
        for lit in &clause.body {
            if let Literal::Pos(a) | Literal::Neg(a) | Literal::Agg { atom: a, .. } = lit {
                check_atom(&a.pred, &a.args, &a.location, false);
            }
        }
    }
    errors
}
