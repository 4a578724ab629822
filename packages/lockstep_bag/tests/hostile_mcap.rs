//! Damaged and hostile MCAP files: every reader entry point answers `Ok` or `Err`, never panics, and
//! never allocates much more than the file holds (a length field larger than what is left of the file
//! is an error before anything is allocated for it).
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::cdr_string;
use lockstep_bag::{
    BagReader, BagWriter, ChunkCompression, Location, MessageDefinition, Payload, ReadOptions, TopicSpec,
    WriterOptions,
};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Records the largest single allocation made by the current thread while tracking is on (the reader
/// allocates on the calling thread only).
struct Tracking;

thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    if TRACKING.try_with(Cell::get).unwrap_or(false) {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
    }
}

// SAFETY: forwards every call to the system allocator unchanged; only reads the requested size.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// Runs `f` and returns the largest single allocation it made on this thread.
fn largest_allocation(f: impl FnOnce()) -> usize {
    LARGEST.with(|l| l.set(0));
    TRACKING.with(|t| t.set(true));
    f();
    TRACKING.with(|t| t.set(false));
    LARGEST.with(Cell::get)
}

/// Fixed allowance on top of the file size for the reader's own buffers (file buffers, the message
/// heap, sqlite's cache), whatever the file.
const ALLOWANCE: usize = 256 * 1024;

fn spec(name: &str) -> TopicSpec {
    TopicSpec::new(name, "std_msgs/msg/String").with_definition(MessageDefinition {
        encoding: "ros2msg".into(),
        text: "string data\n".into(),
    })
}

/// A small finished bag (a few chunks, an attachment, a metadata record); returns its MCAP bytes.
fn small_bag(compression: ChunkCompression) -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    let opts = WriterOptions {
        chunk_size_bytes: 300,
        compression,
        chunk_crcs: true,
        ..WriterOptions::default()
    };
    let mut w = BagWriter::create(&dir, opts).unwrap();
    w.add_topic(spec("/a")).unwrap();
    w.add_topic(spec("/b")).unwrap();
    for i in 0..30u64 {
        let topic = if i % 3 == 0 { "/b" } else { "/a" };
        w.write(topic, 1_000 + i, &cdr_string(&format!("message {i}")))
            .unwrap();
    }
    let entries: BTreeMap<String, String> = [("k".to_string(), "v".to_string())].into_iter().collect();
    w.write_metadata_record("lockstep", &entries).unwrap();
    w.attach("note", "text/plain", 1_000, 1_000, b"hello").unwrap();
    w.finish().unwrap();
    std::fs::read(dir.join("bag_0.mcap")).unwrap()
}

fn uncompressed_bag() -> &'static [u8] {
    static BAG: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BAG.get_or_init(|| small_bag(ChunkCompression::None))
}

fn zstd_bag() -> &'static [u8] {
    static BAG: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BAG.get_or_init(|| small_bag(ChunkCompression::Zstd))
}

/// Byte offsets of the top-level records of a well-formed MCAP file (after the magic).
fn record_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 8;
    while at + 9 <= bytes.len() {
        out.push(at);
        let len = u64::from_le_bytes(bytes[at + 1..at + 9].try_into().unwrap());
        match usize::try_from(len).ok().and_then(|l| (at + 9).checked_add(l)) {
            Some(next) => at = next,
            None => break,
        }
    }
    out
}

/// Byte offsets of the records inside the uncompressed chunks of a well-formed MCAP file.
fn records_in_chunks(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    for r in record_offsets(bytes).into_iter().filter(|&r| bytes[r] == 0x06) {
        let body = r + 9;
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()) as usize;
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap()) as usize;
        let compression_len = u32_at(body + 28);
        assert_eq!(compression_len, 0, "only uncompressed chunks");
        let size_at = body + 32;
        let (mut at, end) = (size_at + 8, size_at + 8 + u64_at(size_at));
        while at < end {
            out.push(at);
            at += 9 + u64_at(at + 1);
        }
    }
    out
}

/// Calls every reader entry point on `path` and drains what they return. Errors are fine; a panic
/// fails the test.
fn exercise(path: &Path) {
    let Ok(reader) = BagReader::open(path) else {
        return;
    };
    let _ = reader.metadata();
    let _ = reader.topics();
    let _ = reader.message_count();
    let _ = reader.time_range();
    let _ = reader.size_bytes();
    for m in reader.messages().take(10_000) {
        if m.is_err() {
            break;
        }
    }
    let mut it = reader.messages_with(ReadOptions {
        topics: Some(["/a".to_string()].into_iter().collect()),
        start_ns: Some(1_005),
        end_ns: Some(1_020),
    });
    let _ = it.by_ref().take(10_000).count();
    it.seek(1_010);
    let _ = it.take(10_000).count();
    let _ = reader.attachments();
    let _ = reader.metadata_records();
    // Reading by location: every location iteration yields reads back; made-up ones are answered.
    for payload in [Payload::Read, Payload::Skip] {
        for m in reader
            .located_messages(ReadOptions::default(), payload)
            .take(10_000)
        {
            let Ok(m) = m else { break };
            let _ = reader.read_at(&m.location);
            let at = m.location;
            for index in [None, Some(0), Some(u32::MAX)] {
                let _ = reader.read_at(&Location::from_parts(at.file_index(), at.position(), index));
            }
        }
    }
    for position in [0, 8, 9, 100, u64::MAX] {
        let _ = reader.read_at(&Location::from_parts(0, position, Some(0)));
        let _ = reader.read_at(&Location::from_parts(0, position, None));
    }
}

/// Writes `bytes` as a lone MCAP file and as the storage file of a bag directory with a metadata.yaml,
/// and exercises both; returns the largest allocation made.
fn exercise_bytes(bytes: &[u8]) -> usize {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("lone.mcap");
    std::fs::write(&file, bytes).unwrap();
    let dir = tmp.path().join("bag");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("bag_0.mcap"), bytes).unwrap();
    std::fs::write(dir.join("metadata.yaml"), METADATA).unwrap();
    largest_allocation(|| {
        exercise(&file);
        exercise(&dir);
    })
}

/// metadata.yaml of the bag above (one file `bag_0.mcap`).
const METADATA: &str = "rosbag2_bagfile_information:
  version: 9
  storage_identifier: mcap
  duration:
    nanoseconds: 29
  starting_time:
    nanoseconds_since_epoch: 1000
  message_count: 30
  topics_with_message_count: []
  compression_format: ''
  compression_mode: ''
  relative_file_paths:
    - bag_0.mcap
  files:
    - path: bag_0.mcap
      starting_time:
        nanoseconds_since_epoch: 1000
      duration:
        nanoseconds: 29
      message_count: 30
  custom_data: ~
  ros_distro: jazzy
";

fn assert_bounded(bytes: &[u8], what: &str) {
    let largest = exercise_bytes(bytes);
    assert!(
        largest <= bytes.len() + ALLOWANCE,
        "{what}: allocated {largest} bytes at once for a file of {} bytes",
        bytes.len()
    );
}

#[test]
fn an_intact_bag_reads_within_the_allocation_bound() {
    for bag in [uncompressed_bag(), zstd_bag()] {
        assert_bounded(bag, "intact bag");
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("x.mcap");
        std::fs::write(&file, bag).unwrap();
        let reader = BagReader::open(&file).unwrap();
        assert_eq!(
            reader.messages().collect::<Result<Vec<_>, _>>().unwrap().len(),
            30
        );
    }
}

/// The case first reported: a record length of all ones (what a killed writer leaves in a chunk it did
/// not finish, or what an attacker writes), on each record in turn, top-level or inside a chunk.
#[test]
fn a_length_of_all_ones_on_any_record_is_an_error() {
    let inner = records_in_chunks(uncompressed_bag());
    assert!(inner.len() >= 30, "the bag's chunks hold its messages");
    for (bag, inside) in [(uncompressed_bag(), inner), (zstd_bag(), Vec::new())] {
        for at in record_offsets(bag).into_iter().chain(inside) {
            for value in [u64::MAX, u64::MAX - 8, 1 << 63, bag.len() as u64] {
                let mut bytes = bag.to_vec();
                bytes[at + 1..at + 9].copy_from_slice(&value.to_le_bytes());
                assert_bounded(&bytes, &format!("length {value:#x} at byte {at}"));
            }
        }
    }
}

/// Positions worth a sweep: around every top-level record's start (the byte before, its opcode,
/// length field and first body byte) and every `stride`-th byte in between (every byte would take
/// minutes in a debug build).
fn sweep(bag: &[u8], stride: usize) -> Vec<usize> {
    let mut at: std::collections::BTreeSet<usize> = (0..bag.len()).step_by(stride).collect();
    for r in record_offsets(bag) {
        at.extend(
            [r.saturating_sub(1), r, r + 1, r + 5, r + 9, r + 10]
                .into_iter()
                .filter(|&p| p < bag.len()),
        );
    }
    at.into_iter().collect()
}

/// Reads a lone file made of `bytes`, checking the allocation bound.
fn assert_bounded_file(bytes: &[u8], what: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("lone.mcap");
    std::fs::write(&file, bytes).unwrap();
    let largest = largest_allocation(|| exercise(&file));
    assert!(
        largest <= bytes.len() + ALLOWANCE,
        "{what}: allocated {largest} bytes at once for a file of {} bytes",
        bytes.len()
    );
}

/// 8 bytes set to all ones at many positions: covers the length fields inside records (chunk sizes,
/// index offsets and lengths, string and map lengths).
#[test]
fn a_huge_value_at_any_position_is_an_error() {
    let bag = uncompressed_bag();
    for at in sweep(bag, 5).into_iter().filter(|&p| p + 8 <= bag.len()) {
        let mut bytes = bag.to_vec();
        bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_bounded_file(&bytes, &format!("all ones at byte {at}"));
    }
}

/// Truncation at many points of both bags.
#[test]
fn a_file_cut_anywhere_reads_without_panic() {
    for bag in [uncompressed_bag(), zstd_bag()] {
        for cut in sweep(bag, 23) {
            assert_bounded_file(&bag[..cut], &format!("cut at byte {cut}"));
        }
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    /// XOR the byte at (position modulo length) with a non-zero value.
    Flip(usize, u8),
    /// Overwrite 8 bytes at a position with a value (a length field set to a huge value).
    SetU64(usize, u64),
    /// Overwrite the length field of the n-th top-level record.
    SetRecordLength(usize, u64),
    /// Insert bytes at a position.
    Insert(usize, Vec<u8>),
    /// Keep only the first (position modulo length) bytes.
    Truncate(usize),
}

fn huge() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(1u64 << 63),
        Just(u64::from(u32::MAX)),
        Just(u64::from(u32::MAX) + 1),
        0u64..100_000,
        any::<u64>(),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(p, x)| Mutation::Flip(p, x)),
        (any::<usize>(), huge()).prop_map(|(p, v)| Mutation::SetU64(p, v)),
        (any::<usize>(), huge()).prop_map(|(n, v)| Mutation::SetRecordLength(n, v)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..64))
            .prop_map(|(p, b)| Mutation::Insert(p, b)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let len = bytes.len();
    match m {
        Mutation::Flip(p, x) => bytes[p % len] ^= x,
        Mutation::SetU64(p, v) => {
            let at = p % len;
            let end = (at + 8).min(len);
            bytes[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
        }
        Mutation::SetRecordLength(n, v) => {
            let offsets = record_offsets(bytes);
            if let Some(&at) = offsets.get(n % offsets.len().max(1)) {
                bytes[at + 1..at + 9].copy_from_slice(&v.to_le_bytes());
            }
        }
        Mutation::Insert(p, b) => {
            let at = p % (len + 1);
            bytes.splice(at..at, b.iter().copied());
        }
        Mutation::Truncate(p) => bytes.truncate(p % len),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_bags_never_panic_nor_overallocate(
        zstd in any::<bool>(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut bytes = if zstd { zstd_bag() } else { uncompressed_bag() }.to_vec();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        let largest = exercise_bytes(&bytes);
        prop_assert!(
            largest <= bytes.len() + ALLOWANCE,
            "allocated {} bytes at once for a file of {} bytes", largest, bytes.len()
        );
    }
}

/// Random bytes behind a valid magic, and plain random bytes.
#[test]
fn random_bytes_are_an_error() {
    for seed in 0..64u64 {
        let mut bytes = common::bytes(seed, 64 + seed as usize * 37);
        assert_bounded(&bytes, &format!("random bytes {seed}"));
        bytes[..8].copy_from_slice(b"\x89MCAP0\r\n");
        assert_bounded(&bytes, &format!("magic then random bytes {seed}"));
        let tmp = tempfile::tempdir().unwrap();
        let p: PathBuf = tmp.path().join("r.mcap");
        std::fs::write(&p, &bytes).unwrap();
        if let Ok(reader) = BagReader::open(&p) {
            assert_eq!(reader.message_count(), 0, "random bytes {seed} hold no messages");
        }
    }
}
