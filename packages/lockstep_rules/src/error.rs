//! Errors: every diagnostic about a rule file names its `file:line:column`.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// A position in a rule source: the origin name given to `RuleSet::parse` (the path for files),
/// a 1-based line and a 1-based column counted in characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// File path or other origin name.
    pub origin: Arc<str>,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.origin, self.line, self.column)
    }
}

/// Where a variable that is not bound appears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariableContext {
    /// An argument of the rule's head (or of a fact).
    Head,
    /// An argument of a negated atom `!pred(...)`.
    Negation {
        /// The negated predicate.
        predicate: String,
    },
    /// A side of a comparison or assignment.
    Comparison,
    /// The value of an aggregate over `predicate`.
    Aggregate {
        /// The aggregated predicate.
        predicate: String,
    },
    /// An arithmetic argument of a body atom (`fib(N - 1, X)`).
    Argument {
        /// The atom's predicate.
        predicate: String,
    },
}

impl fmt::Display for VariableContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VariableContext::Head => f.write_str("head"),
            VariableContext::Negation { predicate } => write!(f, "negated atom `{predicate}`"),
            VariableContext::Comparison => f.write_str("comparison"),
            VariableContext::Argument { predicate } => write!(f, "an argument of `{predicate}`"),
            VariableContext::Aggregate { predicate } => write!(f, "the aggregate over `{predicate}`"),
        }
    }
}

/// Everything that can go wrong loading rules, asserting facts or evaluating.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A rule file could not be read.
    #[error("{}: error: cannot read rule file: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not valid rule syntax.
    #[error("{location}: error: {message}")]
    Parse {
        /// Where the offending token starts.
        location: Location,
        /// What was expected and what was found.
        message: String,
    },
    /// A predicate is used with two different numbers of arguments.
    #[error(
        "{location}: error: predicate `{predicate}` is used with {arity} argument(s) here but with \
         {first_arity} at {first_location}"
    )]
    ArityMismatch {
        /// The later use.
        location: Location,
        /// The predicate.
        predicate: String,
        /// Its arity at `location`.
        arity: usize,
        /// The first use.
        first_location: Location,
        /// Its arity there.
        first_arity: usize,
    },
    /// A variable in a head, a negation or a comparison is not bound by a positive body atom (or by an
    /// assignment `X = expr` whose right side is bound).
    #[error("{location}: error: variable `{variable}` in {context} is not bound by a positive body atom")]
    UnsafeVariable {
        /// The variable's occurrence.
        location: Location,
        /// Its name (`_` for the anonymous variable).
        variable: String,
        /// Where it occurs.
        context: VariableContext,
    },
    /// An expression is used where only a constant or a variable may stand (an argument of a body atom).
    #[error("{location}: error: {message}")]
    Unsupported {
        /// The construct.
        location: Location,
        /// What is not supported and what to write instead.
        message: String,
    },
    /// A negation lies on a recursive cycle, so the program has no stratification.
    #[error(
        "{location}: error: negation of (or aggregate over) `{predicate}` is inside a recursive cycle ({}); \
         the program cannot be stratified",
        cycle.join(" -> ")
    )]
    Unstratifiable {
        /// The negated atom.
        location: Location,
        /// The negated predicate.
        predicate: String,
        /// The cycle's predicates in dependency order, starting and ending with the rule's head predicate.
        cycle: Vec<String>,
    },
    /// Asserted facts disagree with the rules about a predicate's arity.
    #[error(
        "error: fact `{predicate}` has {found} argument(s) but the rules use it with {expected} (at {location})"
    )]
    FactArity {
        /// The predicate.
        predicate: String,
        /// Arity in the rules.
        expected: usize,
        /// Arity of the fact.
        found: usize,
        /// The predicate's first use in the rules.
        location: Location,
    },
    /// Asserted facts use one predicate with two arities.
    #[error("error: facts for `{predicate}` have both {first} and {found} argument(s)")]
    InconsistentFacts {
        /// The predicate.
        predicate: String,
        /// The arity of the first fact.
        first: usize,
        /// The arity of a later fact.
        found: usize,
    },
    /// A query names a predicate that neither the rules nor the facts mention.
    #[error("error: unknown predicate `{predicate}`")]
    UnknownPredicate {
        /// The name asked for.
        predicate: String,
    },
    /// Evaluation derived more tuples than the engine's limit, which usually means a rule builds new
    /// values without bound (`p(N + 1) :- p(N).`).
    #[error(
        "error: evaluation stopped after more than {limit} tuples; a rule probably derives new values \
         without bound (like `p(N + 1) :- p(N).`)"
    )]
    TupleLimit {
        /// The limit in force.
        limit: usize,
    },
    /// The evaluation ran longer than its time limit (a rule deriving without end, one row per round).
    #[error(
        "evaluation stopped after {secs} s without reaching a fixpoint: a rule probably derives values without \
         bound (like `p(N + 1) :- p(N).`); raise the time limit if the program is only slow"
    )]
    TimeLimit {
        /// The limit in force (s).
        secs: f64,
    },
    /// Several diagnostics, each on its own line, in source order.
    #[error("{}", display_lines(errors))]
    Multiple {
        /// The diagnostics.
        errors: Vec<Error>,
    },
}

fn display_lines(errors: &[Error]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

impl Error {
    /// The individual diagnostics: the members of [`Error::Multiple`], or this error alone.
    pub fn diagnostics(&self) -> Vec<&Error> {
        match self {
            Error::Multiple { errors } => errors.iter().flat_map(Error::diagnostics).collect(),
            other => vec![other],
        }
    }

    /// The source location, when the error has one.
    pub fn location(&self) -> Option<&Location> {
        match self {
            Error::Parse { location, .. }
            | Error::ArityMismatch { location, .. }
            | Error::UnsafeVariable { location, .. }
            | Error::Unsupported { location, .. }
            | Error::Unstratifiable { location, .. } => Some(location),
            _ => None,
        }
    }

    /// Folds a list of diagnostics into one error (`None` when the list is empty).
    pub(crate) fn from_list(mut errors: Vec<Error>) -> Option<Error> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(Error::Multiple { errors }),
        }
    }
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
