//! The range of periods the player accepts; a leaf module so the file parser, the generator and the CLI
//! check against one definition.

/// The periods the player works with (a file's `period_s`, the output period T_c): down to 10 us, up to 10 s.
/// Shorter ones make the number of ticks per file point overflow; the check says so before anything runs.
pub const PERIOD_S: lockstep_ranges::Real = lockstep_ranges::Real::closed(1e-5, 10.0, "s");
