//! Limits on what one rule text may hold, so that hostile or broken input (a message on a topic, a file
//! written by a buggy generator) gets a clear error instead of exhausting the stack, the memory or the time
//! of the process that loads it. Real rule files stay far below every one of them.

/// The most bytes one rule text (a file or a message) may hold.
pub const MAX_TEXT_BYTES: usize = 16 * 1024 * 1024;

/// How deep expressions may nest: parentheses, function calls, `-` signs and chained operators
/// (`X + Y + Z` is two levels). Parsing, checking and evaluation walk expressions recursively, so this
/// bounds their stack use.
pub const MAX_NESTING: u32 = 256;

/// The most literals one rule body (one alternative of `|`) may hold, counting each arithmetic argument of
/// an atom (`fib(N - 1, A)`) as one more. Evaluation runs a rule's join one recursion level per literal and
/// planning is quadratic in the body's length, so this bounds both.
pub const MAX_BODY_LITERALS: usize = 256;

/// The most join steps the compiled rules may hold in all: a rule is planned once, plus once per body atom
/// of its own recursive stratum, each plan one step per body literal. Bounds the memory and time of
/// compiling (a real program needs a few thousand).
pub const MAX_PLAN_STEPS: usize = 500_000;

/// The most diagnostics collected from one text before parsing stops (the rest are counted, not listed).
pub const MAX_DIAGNOSTICS: usize = 100;
