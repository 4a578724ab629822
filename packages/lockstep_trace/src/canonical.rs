//! The canonical form of CDR bytes, the input of a payload digest ([`crate::digest`]), from two
//! serializations of one message; `lockstep_trace_ros::canonical_cdr` makes them with rmw.
//!
//! `rmw_serialize` (behind r2r's `to_serialized_bytes` and rclpy's `serialize_message`) skips the alignment
//! padding of CDR without writing it, so padding bytes hold whatever the buffer held before: rclpy's output
//! for a `geometry_msgs/PoseArray` carries heap garbage before the first double, and so may a reused r2r
//! buffer or a DDS payload pool. Digesting those bytes would make one message's digest vary by process.
//! The canonical form is the same CDR with every padding byte zero and nothing after the last field (what
//! `rosbags`, `lockstep_bag`'s decoder and any from-scratch CDR writer produce). rmw_fastrtps reports its size
//! *estimate* as the serialized length, which can exceed what it wrote (`std_msgs/UInt8` is 5 bytes, reported
//! as 8; an empty `float64[]` at the end adds 4 more): those bytes, never written, are not part of the message.
//! So the message is serialized twice, into a buffer filled with zeros and then with 0xff beforehand: a byte
//! rmw wrote is the same both times, padding and the unwritten end differ; the zero-filled bytes up to the
//! last byte written are the canonical form.

/// The encapsulation header every serialized message starts with.
pub const CDR_HEADER_BYTES: usize = 4;

/// The canonical CDR of a message from its serialization over a zero-filled buffer (`zeroed`) and over a
/// 0xff-filled one (`filled`): `zeroed` up to the last byte both agree on, the encapsulation header kept.
pub fn canonical_from_passes(mut zeroed: Vec<u8>, filled: &[u8]) -> Vec<u8> {
    let len = canonical_len(&zeroed, filled);
    zeroed.truncate(len);
    zeroed
}

/// How many bytes of `zeroed` are canonical (see [`canonical_from_passes`]), for callers that keep the passes
/// in buffers of their own.
pub fn canonical_len(zeroed: &[u8], filled: &[u8]) -> usize {
    // Past the encapsulation header, the last byte both passes agree on is the last one rmw wrote.
    let written = zeroed
        .iter()
        .zip(filled)
        .rposition(|(a, b)| a == b)
        .map_or(0, |last| last + 1);
    written.max(CDR_HEADER_BYTES.min(zeroed.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unwritten_end_is_cut_and_padding_stays_zero() {
        // UInt8 {data: 1}: header, the byte, then 3 bytes rmw reports but never writes.
        let zeroed = vec![0, 1, 0, 0, 1, 0, 0, 0];
        let filled = [0, 1, 0, 0, 1, 0xff, 0xff, 0xff];
        assert_eq!(canonical_from_passes(zeroed, &filled), [0, 1, 0, 0, 1]);
        // Padding between written fields stays, zeroed.
        let zeroed = vec![0, 1, 0, 0, 7, 0, 0, 0, 9];
        let filled = [0, 1, 0, 0, 7, 0xff, 0xff, 0xff, 9];
        assert_eq!(canonical_from_passes(zeroed.clone(), &filled), zeroed);
    }

    #[test]
    fn a_message_without_fields_keeps_its_encapsulation_header() {
        // Empty: the header, then one zero byte rmw writes (equal in both passes).
        assert_eq!(
            canonical_from_passes(vec![0, 1, 0, 0, 0], &[0, 1, 0, 0, 0]),
            [0, 1, 0, 0, 0]
        );
        // Nothing agrees (cannot happen with rmw, which always writes the header): the header is kept.
        assert_eq!(
            canonical_from_passes(vec![0, 0, 0, 0, 0], &[1, 1, 1, 1, 1]),
            [0, 0, 0, 0]
        );
        assert_eq!(canonical_from_passes(vec![0, 0], &[1, 1]), [0, 0]);
    }
}
