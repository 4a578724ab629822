//! `lockstep_rules`: a Datalog engine for rule files that drive the vehicle simulator.
//!
//! Rules use classic syntax and are checked before they are used:
//!
//! ```text
//! // Decode a road-surface typecode (one rule per code).
//! surface(C, A, S, V) :- typecode(C), C = 3, A = 1.2, S = 2.0, V = 1.5.
//! blocked_front :- free_front(F), min_step(D), F < D.
//! next_state(turn_left) :- state(obstacle_ahead), left_open, !right_open | state(turn_left), blocked_front.
//! ```
//!
//! Constants are integers, floats, lowercase symbols and quoted strings (a symbol and the quoted string with
//! the same text are one value); variables start with an uppercase letter or `_` (`_` alone is anonymous).
//! Bodies may hold negated atoms (`!p(X)` or `not p(X)`), comparisons (`= != < <= > >=`) and arithmetic
//! (`+ - * / mod`, `min`, `max`, `abs`) on bound values, also inside atom arguments (`fib(N - 1, A)`);
//! `X = expr` binds `X`, and `|` separates alternatives (one rule each). Comments start with `//` or `%`, or
//! are `/* ... */`. Numbers mix by value: `2` and `2.0` are one value. The language is close to Soufflé's
//! (without `.decl`; `mod` for `%`) and, for integers and symbols, to clingo's (write `not` for `!`).
//!
//! Checks report `file:line:column`: syntax, arity mismatches (naming both uses), unbound variables in
//! heads, negations and comparisons, and negation inside recursion (naming the cycle). Evaluation is
//! semi-naive per stratum (strongly connected component of the dependency graph) with hash indexes on the
//! bound columns of every join; query results are sorted.
//!
//! ```
//! use lockstep_rules::{Engine, Facts, RuleSet, Value};
//! let rules = RuleSet::parse(
//!     "path(X, Y) :- edge(X, Y).\n path(X, Z) :- path(X, Y), edge(Y, Z).\n edge(1, 2).",
//!     "example.dl",
//! )?;
//! let mut engine = Engine::new(rules);
//! let mut facts = Facts::new();
//! facts.add("edge", [2, 3]);
//! engine.assert_facts(&facts)?;
//! engine.evaluate()?;
//! let path = engine.query("path")?;
//! assert_eq!(path, vec![
//!     vec![Value::from(1), Value::from(2)],
//!     vec![Value::from(1), Value::from(3)],
//!     vec![Value::from(2), Value::from(3)],
//! ]);
//! # Ok::<(), lockstep_rules::Error>(())
//! ```

mod aggregate;
mod arith;
mod ast;
mod check;
pub mod directives;
mod engine;
mod error;
mod eval;
mod lexer;
pub mod limits;
mod lint;
mod parse_expr;
mod parser;
mod plan;
mod program;
mod relation;
mod table;
mod value;

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "cli")]
pub mod tsv;

pub use engine::{Engine, Facts, RuleSet, Tuple, DEFAULT_MAX_SECONDS, DEFAULT_MAX_TUPLES};
pub use error::{Error, Location, Result, VariableContext};
pub use lint::Warning;
pub use value::{Float, Symbol, Value, ValueTypeError};
