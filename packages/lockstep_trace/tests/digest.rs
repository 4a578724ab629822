//! Digest: SHA-256's first 8 bytes, little-endian, stable across runs and platforms.

use lockstep_trace::digest;

#[test]
fn digest_matches_known_sha256_vectors() {
    // SHA-256("")    = e3b0c442 98fc1c14 ...
    assert_eq!(digest(b""), 0x141c_fc98_42c4_b0e3);
    // SHA-256("abc") = ba7816bf 8f01cfea ...
    assert_eq!(digest(b"abc"), 0xeacf_018f_bf16_78ba);
}

#[test]
fn digest_of_a_cdr_payload_is_stable_and_sensitive() {
    // std_msgs/String "hi" as CDR little-endian with its encapsulation header.
    let cdr = [0u8, 1, 0, 0, 3, 0, 0, 0, b'h', b'i', 0];
    let first = digest(&cdr);
    assert_eq!(first, digest(&cdr.clone()));
    let mut changed = cdr;
    changed[9] = b'o';
    assert_ne!(first, digest(&changed));
}
