//! `lockstep bag info / echo / convert` on broken bags: each fails with an error naming the file (and,
//! for MCAP damage, the byte offset), never succeeds quietly and never panics.
#![cfg(feature = "cli")]
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::cdr_string;
use lockstep_bag::cli::{convert, echo, info, info_with, EchoOptions};
use lockstep_bag::{BagWriter, MessageDefinition, MessageDefinitions, TopicSpec, WriterOptions};
use std::path::{Path, PathBuf};

/// A finished bag of 200 messages on `/a` in small chunks with CRCs; returns its MCAP file's bytes.
fn good_bag() -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    let opts = WriterOptions {
        chunk_size_bytes: 1024,
        chunk_crcs: true,
        ..WriterOptions::default()
    };
    let mut w = BagWriter::create(&dir, opts).unwrap();
    w.add_topic(
        TopicSpec::new("/a", "std_msgs/msg/String").with_definition(MessageDefinition {
            encoding: "ros2msg".into(),
            text: "string data\n".into(),
        }),
    )
    .unwrap();
    for i in 0..200u64 {
        w.write("/a", 1_000_000 + i, &cdr_string(&format!("message number {i}")))
            .unwrap();
    }
    w.finish().unwrap();
    std::fs::read(dir.join("bag_0.mcap")).unwrap()
}

/// Offsets of the top-level records of a well-formed MCAP file.
fn record_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 8;
    while at + 9 <= bytes.len() {
        out.push(at);
        at += 9 + u64::from_le_bytes(bytes[at + 1..at + 9].try_into().unwrap()) as usize;
    }
    out
}

/// The broken MCAP files of the checklist, by name.
fn broken_mcaps() -> Vec<(&'static str, Vec<u8>)> {
    let good = good_bag();
    let chunks: Vec<usize> = record_offsets(&good)
        .into_iter()
        .filter(|&r| good[r] == 0x06)
        .collect();
    assert!(chunks.len() >= 4, "several chunks");
    let middle = chunks[chunks.len() / 2];
    let mut bad_crc = good.clone();
    // The last byte of the middle chunk lies in its last message's data.
    let next = middle + 9 + u64::from_le_bytes(good[middle + 1..middle + 9].try_into().unwrap()) as usize;
    bad_crc[next - 1] ^= 0x55;
    let mut huge_chunk = good.clone();
    huge_chunk[middle + 1..middle + 9].copy_from_slice(&u64::MAX.to_le_bytes());
    // The first record inside the middle chunk (uncompressed: records start after the 40-byte header).
    let mut huge_inner = good.clone();
    let inner = middle + 9 + 40;
    huge_inner[inner + 1..inner + 9].copy_from_slice(&u64::MAX.to_le_bytes());
    let cut = |percent: usize| good[..good.len() * percent / 100].to_vec();
    vec![
        ("random bytes", common::bytes(7, 5000)),
        ("empty file", Vec::new()),
        ("cut at 10 %", cut(10)),
        ("cut at 50 %", cut(50)),
        ("cut at 90 %", cut(90)),
        ("chunk with a bad CRC", bad_crc),
        ("chunk length all ones", huge_chunk),
        ("record in a chunk with length all ones", huge_inner),
    ]
}

/// Runs info --verify, echo and convert on `input`; each must fail. Returns their error texts.
fn all_fail(input: &Path, what: &str) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let mut sink = Vec::new();
    let mut errors = Vec::new();
    match info_with(input, true, &mut sink) {
        Ok(()) => panic!("{what}: info succeeded:\n{}", String::from_utf8_lossy(&sink)),
        Err(e) => errors.push(format!("{e:#}")),
    }
    match echo(input, "/a", &EchoOptions::default(), &mut sink) {
        Ok(n) => panic!("{what}: echo succeeded after {n} messages"),
        Err(e) => errors.push(format!("{e:#}")),
    }
    let mut defs = MessageDefinitions::from_prefix_path("");
    match convert(
        input,
        &tmp.path().join("out"),
        WriterOptions::default(),
        &mut defs,
        &mut sink,
    ) {
        Ok(n) => panic!("{what}: convert succeeded with {n} messages"),
        Err(e) => errors.push(format!("{e:#}")),
    }
    for e in &errors {
        assert!(!e.contains('\n'), "{what}: one line: {e}");
    }
    errors
}

#[test]
fn info_echo_and_convert_fail_on_every_broken_mcap() {
    for (what, bytes) in broken_mcaps() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("broken.mcap");
        std::fs::write(&file, &bytes).unwrap();
        for e in all_fail(&file, what) {
            assert!(e.contains("broken.mcap"), "{what}: names the file: {e}");
        }
    }
}

#[test]
fn a_truncated_file_is_reported_with_the_byte_it_is_cut_at() {
    let good = good_bag();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("cut.mcap");
    let cut = good.len() * 9 / 10;
    std::fs::write(&file, &good[..cut]).unwrap();
    let mut out = Vec::new();
    let err = format!("{:#}", info_with(&file, false, &mut out).unwrap_err());
    let text = String::from_utf8(out).unwrap();
    assert!(err.contains("truncated at byte"), "{err}");
    assert!(err.contains("summary not trusted"), "{err}");
    assert!(err.contains(&format!("of {cut}")), "{err}");
    // A topic that lies past the damage: echo says the bag is damaged, not only that the topic is absent.
    let early = tmp.path().join("early.mcap");
    std::fs::write(&early, &good[..200]).unwrap();
    let err = format!(
        "{:#}",
        echo(&early, "/a", &EchoOptions::default(), &mut Vec::new()).unwrap_err()
    );
    assert!(
        err.contains("the bag is damaged") && err.contains("truncated at byte"),
        "{err}"
    );
    // What could be counted is still shown, and marked.
    assert!(text.contains("Messages:"), "{text}");
    assert!(text.contains("DAMAGED:"), "{text}");
}

#[test]
fn a_bad_chunk_under_an_intact_summary_is_found_by_info_verify() {
    let (_, bad_crc) = broken_mcaps()
        .into_iter()
        .find(|(w, _)| *w == "chunk with a bad CRC")
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("crc.mcap");
    std::fs::write(&file, bad_crc).unwrap();
    let err = format!("{:#}", info_with(&file, true, &mut Vec::new()).unwrap_err());
    assert!(err.contains("CRC mismatch"), "{err}");
    assert!(err.contains("byte offset"), "{err}");
    assert!(info(&file, &mut Vec::new()).is_ok());
}

#[test]
fn an_intact_bag_passes_info_echo_and_convert() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("good.mcap");
    std::fs::write(&file, good_bag()).unwrap();
    let mut out = Vec::new();
    info_with(&file, true, &mut out).unwrap();
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("all 200 messages read back"));
    assert_eq!(
        echo(&file, "/a", &EchoOptions::default(), &mut Vec::new()).unwrap(),
        200
    );
    let mut defs = MessageDefinitions::from_prefix_path("");
    let n = convert(
        &file,
        &tmp.path().join("out"),
        WriterOptions::default(),
        &mut defs,
        &mut Vec::new(),
    );
    assert_eq!(n.unwrap(), 200);
}

#[test]
fn a_summary_that_points_past_the_file_is_not_trusted() {
    let mut bytes = good_bag();
    let index = record_offsets(&bytes)
        .into_iter()
        .find(|&r| bytes[r] == 0x08)
        .unwrap();
    // ChunkIndex body: start time, end time, then chunk_start_offset.
    bytes[index + 9 + 16..index + 9 + 24].copy_from_slice(&(1u64 << 40).to_le_bytes());
    // No summary CRC (as rosbag2 writes): the index itself must be checked against the file.
    let crc_at = bytes.len() - 8 - 4;
    bytes[crc_at..crc_at + 4].fill(0);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("index.mcap");
    std::fs::write(&file, bytes).unwrap();
    let err = format!("{:#}", info(&file, &mut Vec::new()).unwrap_err());
    assert!(err.contains("summary not trusted"), "{err}");
    assert!(err.contains(&format!("byte {}", 1u64 << 40)), "{err}");
    // The data section itself is intact: every message still reads, from a linear pass.
    assert_eq!(
        echo(&file, "/a", &EchoOptions::default(), &mut Vec::new()).unwrap(),
        200
    );
}

fn talker_db3() -> PathBuf {
    common::rosbag2_bags().join("sqlite3/talker/talker.db3")
}

#[test]
fn corrupt_sqlite3_files_are_clear_errors() {
    let good = std::fs::read(talker_db3()).unwrap();
    let mut pages_garbled = good.clone();
    // Keep the 100-byte database header, garble every page after the first.
    let garbage = common::bytes(3, good.len());
    pages_garbled[4096..].copy_from_slice(&garbage[4096..]);
    let mut header_garbled = good.clone();
    header_garbled[16..100].copy_from_slice(&garbage[16..100]);
    let cases = [
        ("pages garbled", pages_garbled),
        ("header garbled", header_garbled),
        ("cut at 50 %", good[..good.len() / 2].to_vec()),
        ("magic only", b"SQLite format 3\0".to_vec()),
    ];
    for (what, bytes) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("broken.db3");
        std::fs::write(&file, bytes).unwrap();
        for e in all_fail(&file, what) {
            assert!(e.contains("broken.db3"), "{what}: names the file: {e}");
        }
    }
}
