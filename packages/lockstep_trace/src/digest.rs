//! Payload digests.

use sha2::{Digest as _, Sha256};

/// How many bytes of the SHA-256 a digest keeps.
pub const DIGEST_BYTES: usize = 8;

/// The digest of a serialized payload: the first 8 bytes of its SHA-256, read as a little-endian `u64`.
///
/// For a ROS message the payload is its serialized CDR form *including* the 4-byte encapsulation header, i.e.
/// exactly what `rmw_serialize` (r2r's `to_serialized_bytes`, rclpy's `serialize_message`) returns and what a
/// raw subscription receives, so any client can recompute it. 64 bits make an accidental collision between two
/// different messages in flight on one channel negligible; identical payloads share a digest by design.
pub fn digest(payload: &[u8]) -> u64 {
    let hash = Sha256::digest(payload);
    let mut first = [0u8; DIGEST_BYTES];
    first.copy_from_slice(&hash[..DIGEST_BYTES]);
    u64::from_le_bytes(first)
}
