//! HeaderMatcher: pairing under loss, reordering and duplicates.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lockstep_trace::{digest, HeaderMatcher, TraceHeader};
use proptest::prelude::*;

fn header(channel: &str, seq: u32) -> TraceHeader {
    TraceHeader {
        module_name: "m".into(),
        channel_name: channel.into(),
        sequence_num: seq,
        payload_digest: digest(&payload(seq)),
        ..TraceHeader::default()
    }
}

fn payload(seq: u32) -> Vec<u8> {
    format!("payload {seq}").into_bytes()
}

#[test]
fn data_first_then_header_pairs() {
    let mut m = HeaderMatcher::new(8);
    assert!(m.push_data("/c", digest(&payload(0)), 0u32).is_none());
    let (data, h) = m.push_header(header("/c", 0)).unwrap();
    assert_eq!((data, h.sequence_num), (0, 0));
    assert_eq!(m.stats().matched, 1);
    assert_eq!((m.pending_data("/c"), m.pending_headers("/c")), (0, 0));
}

#[test]
fn header_first_then_data_pairs() {
    let mut m = HeaderMatcher::new(8);
    assert!(m.push_header(header("/c", 5)).is_none());
    let (data, h) = m.push_data("/c", digest(&payload(5)), 5u32).unwrap();
    assert_eq!((data, h.sequence_num), (5, 5));
}

#[test]
fn same_digest_on_another_channel_does_not_pair() {
    let mut m = HeaderMatcher::new(8);
    assert!(m.push_header(header("/a", 1)).is_none());
    assert!(m.push_data("/b", digest(&payload(1)), 1u32).is_none());
    assert_eq!((m.pending_headers("/a"), m.pending_data("/b")), (1, 1));
}

#[test]
fn lost_headers_and_lost_data_are_evicted_oldest_first_and_counted() {
    let mut m = HeaderMatcher::new(3);
    // Data 0..5 whose headers are lost: only the 3 newest wait, 2 were evicted.
    for seq in 0..5 {
        assert!(m.push_data("/c", digest(&payload(seq)), seq).is_none());
    }
    assert_eq!(m.pending_data("/c"), 3);
    assert_eq!(m.stats().unmatched_data, 2);
    // The header of evicted data 0 finds nothing; the header of data 4 still pairs.
    assert!(m.push_header(header("/c", 0)).is_none());
    assert_eq!(m.push_header(header("/c", 4)).unwrap().0, 4);
    // Headers 10..14 whose data is lost: 3 kept, 1 evicted (header 0 was the oldest).
    for seq in 10..14 {
        assert!(m.push_header(header("/c", seq)).is_none());
    }
    assert_eq!(m.pending_headers("/c"), 3);
    assert_eq!(m.stats().unmatched_headers, 2);
}

#[test]
fn duplicate_header_is_ignored_once_seen() {
    let mut m = HeaderMatcher::new(8);
    assert!(m.push_header(header("/c", 1)).is_none());
    assert!(m.push_header(header("/c", 1)).is_none());
    assert_eq!(m.pending_headers("/c"), 1);
    assert_eq!(m.stats().duplicate_headers, 1);
    assert!(m.push_data("/c", digest(&payload(1)), 1u32).is_some());
    // A redelivery after pairing must not wait for a second copy of the data.
    assert!(m.push_header(header("/c", 1)).is_none());
    assert_eq!(m.pending_headers("/c"), 0);
    assert_eq!(m.stats().duplicate_headers, 2);
}

#[test]
fn identical_payloads_pair_in_arrival_order() {
    let mut m = HeaderMatcher::new(8);
    let d = digest(b"same");
    let mut h0 = header("/c", 0);
    let mut h1 = header("/c", 1);
    h0.payload_digest = d;
    h1.payload_digest = d;
    assert!(m.push_data("/c", d, "first").is_none());
    assert!(m.push_data("/c", d, "second").is_none());
    assert_eq!(m.push_header(h0).unwrap().0, "first");
    assert_eq!(m.push_header(h1).unwrap().0, "second");
}

#[test]
fn give_up_removes_waiting_data() {
    let mut m = HeaderMatcher::new(8);
    let d = digest(&payload(3));
    m.push_data("/c", d, 3u32);
    assert_eq!(m.give_up_data("/c", d, |&x| x == 3), Some(3));
    assert!(m.push_header(header("/c", 3)).is_none());
    assert_eq!(m.stats().unmatched_data, 1);
    assert!(m.has_seen_headers("/c"));
    assert!(!m.has_seen_headers("/other"));
}

#[derive(Debug, Clone)]
enum Event {
    Data(u32),
    Header(u32),
}

proptest! {
    /// Any interleaving (reordering within a window) of data and headers, with some of each lost and some
    /// headers duplicated: every pair is correct, and every message whose both halves arrived is paired.
    #[test]
    fn any_interleaving_pairs_exactly_the_survivors(
        n in 1u32..60,
        lost_data in proptest::collection::btree_set(0u32..60, 0..10),
        lost_headers in proptest::collection::btree_set(0u32..60, 0..10),
        duplicated in proptest::collection::btree_set(0u32..60, 0..10),
        keys in proptest::collection::vec(0u32..1000, 200),
    ) {
        let mut events = Vec::new();
        for seq in 0..n {
            if !lost_data.contains(&seq) { events.push(Event::Data(seq)); }
            if !lost_headers.contains(&seq) {
                events.push(Event::Header(seq));
                // A redelivery only exists for a header that was delivered at all.
                if duplicated.contains(&seq) { events.push(Event::Header(seq)); }
            }
        }
        // Reorder: sort by position plus a bounded random jitter (messages overtake within ~8 slots).
        let mut keyed: Vec<(u32, usize, Event)> = events.into_iter().enumerate()
            .map(|(i, e)| (i as u32 + keys[i % keys.len()] % 8, i, e)).collect();
        keyed.sort_by_key(|(k, i, _)| (*k, *i));

        let mut m = HeaderMatcher::new(64);
        let mut pairs = Vec::new();
        for (_, _, event) in keyed {
            let pair = match event {
                Event::Data(seq) => m.push_data("/c", digest(&payload(seq)), seq),
                Event::Header(seq) => m.push_header(header("/c", seq)),
            };
            if let Some((data, h)) = pair { pairs.push((data, h.sequence_num)); }
        }
        for (data, seq) in &pairs { prop_assert_eq!(data, seq); }
        let expected: Vec<u32> = (0..n).filter(|s| !lost_data.contains(s) && !lost_headers.contains(s)).collect();
        let mut got: Vec<u32> = pairs.iter().map(|(d, _)| *d).collect();
        got.sort_unstable();
        prop_assert_eq!(got, expected);
    }
}
