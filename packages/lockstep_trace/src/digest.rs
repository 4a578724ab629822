//! Payload digests.

use sha2::{Digest as _, Sha256};

/// How many bytes of the SHA-256 a digest keeps.
pub const DIGEST_BYTES: usize = 8;

/// The digest of a serialized payload: the first 8 bytes of its SHA-256, read as a little-endian `u64`.
///
/// This function only hashes the bytes it is given; which bytes those are is the caller's contract. For a ROS
/// message they are its *canonical* CDR form: the encapsulation header included, every alignment padding
/// byte zero. They are not the raw bytes of `rmw_serialize` (r2r's `to_serialized_bytes`, rclpy's
/// `serialize_message`) nor what a raw subscription receives: rmw leaves padding uninitialised, so those
/// bytes can differ between two copies of one message. `lockstep_trace_ros::canonical_cdr` (in its
/// `canonical.rs`) produces the canonical bytes in Rust; any client can produce them with a CDR writer that
/// zeroes padding (e.g. Python's `rosbags`). 64 bits make an accidental collision between two different
/// messages in flight on one channel negligible; identical payloads share a digest by design.
pub fn digest(payload: &[u8]) -> u64 {
    let hash = Sha256::digest(payload);
    let mut first = [0u8; DIGEST_BYTES];
    first.copy_from_slice(&hash[..DIGEST_BYTES]);
    u64::from_le_bytes(first)
}
