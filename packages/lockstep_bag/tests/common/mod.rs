//! Helpers shared by the integration tests.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)]

use lockstep_bag::{BagReader, BagWriter, ReadOptions, WriterOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The real rosbag2 bags the repository keeps in test/data/rosbag2 (rosbag2's own test bags, Apache-2.0).
pub fn rosbag2_bags() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../test/data/rosbag2"))
}

/// A new bag at `dir` whose chunks close after `chunk_size_bytes` (other options default).
pub fn chunked_writer(dir: &Path, chunk_size_bytes: u64) -> BagWriter {
    let opts = WriterOptions {
        chunk_size_bytes,
        ..WriterOptions::default()
    };
    BagWriter::create(dir, opts).unwrap()
}

/// Small data files of this crate's tests.
pub fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data"))
}

/// Message count per topic, by reading every message.
pub fn count_by_topic(path: &Path) -> BTreeMap<String, u64> {
    let reader = BagReader::open(path).unwrap();
    let mut counts = BTreeMap::new();
    for m in reader.messages() {
        *counts.entry(m.unwrap().topic.to_string()).or_insert(0) += 1;
    }
    counts
}

/// All messages as (topic, time, data), in read order.
pub fn all_messages(path: &Path, opts: ReadOptions) -> Vec<(String, u64, Vec<u8>)> {
    let reader = BagReader::open(path).unwrap();
    reader
        .messages_with(opts)
        .map(|m| m.unwrap())
        .map(|m| (m.topic.to_string(), m.log_time_ns, m.data))
        .collect()
}

/// A CDR-encoded std_msgs/String (little endian encapsulation).
pub fn cdr_string(s: &str) -> Vec<u8> {
    let mut out = vec![0u8, 1, 0, 0];
    out.extend_from_slice(&((s.len() + 1) as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    out.push(0);
    out
}

/// Deterministic pseudo-random bytes.
pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
