//! rosbag2's own compression (`--compression-mode file|message --compression-format zstd`), read
//! from bags written by the Python `rosbags` package (tests/data/compressed/make.py), one per
//! storage plugin x mode: every message comes out decompressed, in write order for equal times,
//! and the bag directory is left as it was.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::cdr_string;
use lockstep_bag::{BagCompression, BagReader, Error, ReadOptions, StorageKind, WriterOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const BAGS: [(&str, StorageKind, BagCompression); 4] = [
    ("mcap_file", StorageKind::Mcap, BagCompression::File),
    ("mcap_message", StorageKind::Mcap, BagCompression::Message),
    ("sqlite3_file", StorageKind::Sqlite3, BagCompression::File),
    ("sqlite3_message", StorageKind::Sqlite3, BagCompression::Message),
];

fn bag(name: &str) -> PathBuf {
    common::data_dir().join("compressed").join(name)
}

/// What make.py wrote, in write order: /c /a /b at each even time, /b /c /a at each odd one.
fn expected() -> Vec<(String, u64, Vec<u8>)> {
    let mut out = Vec::new();
    for round in 0..4u64 {
        let t = 1_000_000_000 + round * 2;
        for (dt, order) in [(0, ["/c", "/a", "/b"]), (1, ["/b", "/c", "/a"])] {
            for topic in order {
                let text = format!("{topic} {} #{}", t + dt, out.len());
                out.push((topic.to_string(), t + dt, cdr_string(&text)));
            }
        }
    }
    out
}

fn listing(dir: &Path) -> BTreeMap<PathBuf, (u64, Vec<u8>)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, (bytes.len() as u64, bytes))
        })
        .collect()
}

#[test]
fn every_storage_and_mode_reads_decompressed_in_write_order() {
    for (name, storage, compression) in BAGS {
        let dir = bag(name);
        let before = listing(&dir);
        {
            let reader = BagReader::open(&dir).unwrap();
            assert_eq!(reader.storage(), storage, "{name}");
            assert_eq!(reader.compression(), compression, "{name}");
            assert_eq!(reader.message_count(), 24, "{name}");
            assert_eq!(
                reader.time_range(),
                Some((1_000_000_000, 1_000_000_007)),
                "{name}"
            );
        }
        assert_eq!(
            common::all_messages(&dir, ReadOptions::default()),
            expected(),
            "{name}"
        );
        let only_b: Vec<_> = expected().into_iter().filter(|m| m.0 == "/b").collect();
        assert_eq!(
            common::all_messages(&dir, ReadOptions::topics(["/b"])),
            only_b,
            "{name}"
        );
        // Seeking on a started iterator.
        let reader = BagReader::open(&dir).unwrap();
        let mut it = reader.messages();
        it.next().unwrap().unwrap();
        it.seek(1_000_000_005);
        let rest: Vec<_> = it.map(|m| m.unwrap().log_time_ns).collect();
        assert_eq!(
            rest,
            vec![
                1_000_000_005,
                1_000_000_005,
                1_000_000_005,
                1_000_000_006,
                1_000_000_006,
                1_000_000_006,
                1_000_000_007,
                1_000_000_007,
                1_000_000_007
            ],
            "{name}"
        );
        drop(reader);
        assert_eq!(listing(&dir), before, "{name}: reading changed the bag directory");
    }
}

#[test]
fn decompressed_copies_go_to_a_temporary_directory_removed_on_drop() {
    let tmp = tempfile::tempdir().unwrap();
    // This test runs in its own process (nextest), so pointing TMPDIR elsewhere affects only it.
    std::env::set_var("TMPDIR", tmp.path());
    let reader = BagReader::open(bag("mcap_file")).unwrap();
    let scratch: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(scratch.len(), 1, "{scratch:?}");
    assert_eq!(reader.messages().count(), 24);
    drop(reader);
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// A copy of the bag `name` in a new temporary directory.
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    std::fs::create_dir(&dir).unwrap();
    for (p, (_, bytes)) in listing(&bag(name)) {
        std::fs::write(dir.join(p.file_name().unwrap()), bytes).unwrap();
    }
    (tmp, dir)
}

fn set_metadata(dir: &Path, from: &str, to: &str) {
    let md = dir.join("metadata.yaml");
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(&md, text.replace(from, to)).unwrap();
}

#[test]
fn damaged_compressed_file_names_the_file() {
    let (_tmp, dir) = copy_of("mcap_file");
    let file = dir.join("mcap_file.mcap.zstd");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let err = BagReader::open(&dir).unwrap_err();
    assert!(matches!(err, Error::Decompress { .. }), "{err:?}");
    assert!(err.to_string().contains("mcap_file.mcap.zstd"), "{err}");
}

#[test]
fn message_that_is_not_zstd_names_topic_and_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plain");
    let mut w = lockstep_bag::BagWriter::create(&dir, WriterOptions::default()).unwrap();
    let id = w
        .add_topic(lockstep_bag::TopicSpec::new("/x", "std_msgs/msg/String"))
        .unwrap();
    w.write_id(id, 42, 42, &cdr_string("not zstd")).unwrap();
    w.finish().unwrap();
    set_metadata(&dir, "compression_mode: \"\"", "compression_mode: message");
    set_metadata(&dir, "compression_format: \"\"", "compression_format: zstd");
    let reader = BagReader::open(&dir).unwrap();
    let err = reader.messages().next().unwrap().unwrap_err();
    assert!(matches!(err, Error::DecompressMessage { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("`/x`") && text.contains("42 ns"), "{text}");
}

#[test]
fn other_formats_and_modes_are_refused_by_name() {
    for (from, to) in [
        ("compression_format: zstd", "compression_format: lz4"),
        ("compression_mode: file", "compression_mode: chunk"),
    ] {
        let (_tmp, dir) = copy_of("mcap_file");
        set_metadata(&dir, from, to);
        let err = BagReader::open(&dir).unwrap_err();
        assert!(matches!(err, Error::UnsupportedCompression { .. }), "{err:?}");
        assert!(err.to_string().contains(to.split(": ").nth(1).unwrap()), "{err}");
    }
}

#[test]
fn reindex_refuses_compressed_bags() {
    let (_tmp, dir) = copy_of("sqlite3_message");
    let before = listing(&dir);
    let err = lockstep_bag::reindex(&dir).unwrap_err();
    assert!(matches!(err, Error::ReindexCompressed { .. }), "{err:?}");
    assert_eq!(listing(&dir), before);
}
