//! How much `lockstep launch` reads and evaluates before it refuses a launch file. Real launch files stay far
//! below every bound; a file past one (generated wrongly, or written to hurt) ends in a one-line error that
//! names the place and the limit instead of a stack overflow, a hang or exhausted memory.

/// Largest launch file read, in bytes.
pub const MAX_FILE_BYTES: usize = 16 << 20;
/// Elements nested inside each other, counting `<launch>`, `<group>` and `<include>` across included files.
pub const MAX_DEPTH: usize = 64;
/// Files read by one launch, the top file and every `<include>` (a file included twice counts twice).
pub const MAX_INCLUDES: usize = 1000;
/// Longest value a substitution may expand to, in bytes.
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// Substitutions (`$(...)`) evaluated while reading one file.
pub const MAX_SUBSTITUTIONS_PER_FILE: usize = 100_000;
/// `$(` nested inside each other in one value.
pub const MAX_SUBSTITUTION_NESTING: usize = 64;
/// Text one launch may produce and copy: files read, expanded values, and the arguments, environment,
/// remaps and parameters that groups, includes and nodes copy from their scope, in bytes.
pub const MAX_COPIED_BYTES: usize = 64 << 20;
/// Processes one launch starts.
pub const MAX_PROCESSES: usize = 1000;
/// Longest `--sigterm-timeout`, in seconds.
pub const MAX_SIGTERM_TIMEOUT_SECS: f64 = 3600.0;
/// Longest `timeout` of a `<?lockstep wait-for?>`, in seconds.
pub const MAX_WAIT_SECS: f64 = 3600.0;

/// A byte count as people read it: `16 MiB (16777216 bytes)`.
pub fn bytes_text(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB ({bytes} bytes)", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}
