//! Warnings: things that load but are likely mistakes, each with its `file:line:column`.
//!
//! - A variable that occurs once in a rule (a typo, or a value nobody uses: write `_` or start its name with
//!   `_` to say so).
//! - A body predicate that nothing defines: no fact and no rule has it in its head. Predicates whose facts come
//!   from outside (asserted at run time, `--facts`) are named as inputs by the caller and not reported.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::ast::{Clause, Expr, Literal};
use crate::error::Location;

/// A likely mistake that does not stop the rules from loading.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Warning {
    pub location: Location,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: warning: {}", self.location, self.message)
    }
}

/// Variables used once per rule, in source order (a rule written with `|` is checked per alternative; the
/// same place is reported once).
pub(crate) fn singletons(clauses: &[Clause]) -> Vec<Warning> {
    let mut out = BTreeSet::new();
    for clause in clauses.iter().filter(|c| !c.is_fact) {
        let mut exprs: Vec<&Expr> = clause.head.args.iter().collect();
        for lit in &clause.body {
            match lit {
                Literal::Pos(a) | Literal::Neg(a) => exprs.extend(&a.args),
                Literal::Cmp { lhs, rhs, .. } => exprs.extend([lhs, rhs]),
                Literal::Agg { value, atom, .. } => {
                    exprs.extend(value);
                    exprs.extend(&atom.args);
                }
            }
        }
        let mut seen: BTreeMap<&str, (usize, &Location)> = BTreeMap::new();
        for e in exprs {
            e.visit_vars(&mut |name, location| {
                // `_X` says "unused on purpose"; `#...` are the parser's own variables.
                if let Some(name) = name.filter(|n| !n.starts_with('_') && !n.starts_with('#')) {
                    seen.entry(name).or_insert((0, location)).0 += 1;
                }
            });
        }
        for lit in &clause.body {
            if let Literal::Agg {
                target,
                target_location,
                ..
            } = lit
            {
                seen.entry(target.as_str()).or_insert((0, target_location)).0 += 1;
            }
        }
        for (name, (n, location)) in seen {
            if n == 1 {
                out.insert(Warning {
                    location: location.clone(),
                    message: format!("variable `{name}` occurs only once in this rule (write `_` or `_{name}` if that is meant)"),
                });
            }
        }
    }
    out.into_iter().collect()
}

/// Body predicates that no fact or rule defines, each with its warning at its first use.
pub(crate) fn undefined(clauses: &[Clause]) -> Vec<(String, Warning)> {
    let defined: BTreeSet<&str> = clauses.iter().map(|c| c.head.pred.as_str()).collect();
    let mut first: BTreeMap<&str, &Location> = BTreeMap::new();
    for clause in clauses {
        for lit in &clause.body {
            if let Literal::Pos(a) | Literal::Neg(a) | Literal::Agg { atom: a, .. } = lit {
                if !defined.contains(a.pred.as_str()) {
                    first.entry(a.pred.as_str()).or_insert(&a.location);
                }
            }
        }
    }
    first
        .into_iter()
        .map(|(name, location)| {
            let warning = Warning {
                location: location.clone(),
                message: format!(
                    "`{name}` is used but never defined: no fact or rule has it in its head (a typo? if its facts \
                     come from outside, name it as an input)"
                ),
            };
            (name.to_owned(), warning)
        })
        .collect()
}
