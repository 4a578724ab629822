//! Sample data for tests (feature `testing`), shared by this crate's tests and by lockstep_trace_ros's, so
//! both check their conversions on the same two-level header.

use std::time::Duration;

use crate::{digest, TraceHeader, Tracer};

/// Start stamp of [`two_level_header`]'s first-level input (m1's `/c3` output), ns since the epoch.
pub const INPUT_START_NS: i64 = 1_700_000_000_100_000_007;
/// Start stamp of [`two_level_header`] itself (m2's `/c5` output), ns since the epoch.
pub const OUTPUT_START_NS: i64 = 1_700_000_001_200_000_009;

/// Epochs of [`two_level_header`]'s producers.
pub const M1_EPOCH: u64 = 1_600_000_000_000_000_001;
/// See [`M1_EPOCH`].
pub const M2_EPOCH: u64 = 1_600_000_000_000_000_002;

/// The header of m2's first output on `/c5`, computed in 77 ns from m1's first `/c3` output (42 ns, started at
/// [`INPUT_START_NS`]), itself computed from the untraced `/c1` message number 4: every field of both levels
/// of the backtrace is set, with values that tell the levels apart.
pub fn two_level_header() -> TraceHeader {
    let mut m1 = Tracer::with_epoch("m1", M1_EPOCH);
    let mut m2 = Tracer::with_epoch("m2", M2_EPOCH);
    let c1 = TraceHeader::external("/c1", 4, 1_700_000_000_000_000_001, digest(b"c1"));
    let t = m1.begin_at(INPUT_START_NS);
    let c3 = m1.finish_with_process_time(t, Duration::from_nanos(42), "/c3", b"c3", &[&c1]);
    let t = m2.begin_at(OUTPUT_START_NS);
    m2.finish_with_process_time(t, Duration::from_nanos(77), "/c5", b"c5", &[&c3])
}
