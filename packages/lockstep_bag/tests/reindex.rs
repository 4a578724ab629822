//! Crash recovery: truncated MCAP files (a writer killed mid-file) are repaired by `reindex`.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::cdr_string;
use lockstep_bag::{reindex, BagReader, BagWriter, MessageDefinition, ReadOptions, TopicSpec, WriterOptions};
use std::collections::BTreeMap;
use std::path::Path;

fn spec(name: &str) -> TopicSpec {
    TopicSpec::new(name, "std_msgs/msg/String").with_definition(MessageDefinition {
        encoding: "ros2msg".into(),
        text: "string data\n".into(),
    })
}

/// A finished bag with small chunks; returns its messages.
fn make_bag(dir: &Path, n: u64) -> Vec<(String, u64, Vec<u8>)> {
    let mut w = common::chunked_writer(dir, 512);
    w.add_topic(spec("/a")).unwrap();
    w.add_topic(spec("/b")).unwrap();
    let mut out = Vec::new();
    for i in 0..n {
        let topic = if i % 3 == 0 { "/b" } else { "/a" };
        let data = cdr_string(&format!("message number {i}"));
        w.write(topic, 1000 + i, &data).unwrap();
        out.push((topic.to_string(), 1000 + i, data));
        if i == n / 2 {
            let entries: BTreeMap<String, String> =
                [("k".to_string(), "v".to_string())].into_iter().collect();
            w.write_metadata_record("lockstep", &entries).unwrap();
        }
    }
    w.finish().unwrap();
    out
}

#[test]
fn truncated_files_are_recovered_up_to_the_last_complete_chunk() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let all = make_bag(&src, 300);
    let bytes = std::fs::read(src.join("src_0.mcap")).unwrap();
    let metadata = std::fs::read(src.join("metadata.yaml")).unwrap();
    let mut previous = 0;
    for (k, cut) in [
        9usize,
        40,
        700,
        1500,
        bytes.len() / 3,
        bytes.len() / 2,
        bytes.len() - 300,
        bytes.len() - 1,
    ]
    .into_iter()
    .enumerate()
    {
        let dir = tmp.path().join(format!("cut{k}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("src_0.mcap"), &bytes[..cut]).unwrap();
        if k % 2 == 0 {
            // Half of the cases keep the (stale) metadata.yaml, half lost it.
            std::fs::write(dir.join("metadata.yaml"), &metadata).unwrap();
        }
        let report = reindex(&dir).unwrap();
        assert_eq!(report.files.len(), 1);
        assert!(!report.files[0].was_complete, "cut at {cut}");
        let got = common::all_messages(&dir, ReadOptions::default());
        // What survives is a prefix of what was written, and more survives from a longer file.
        assert_eq!(got[..], all[..got.len()], "cut at {cut}");
        assert!(got.len() >= previous, "cut at {cut}: {} < {previous}", got.len());
        previous = got.len();
        let reader = BagReader::open(&dir).unwrap();
        assert_eq!(reader.metadata().message_count, got.len() as u64);
        assert_eq!(report.metadata.message_count, got.len() as u64);
        if cut > bytes.len() / 2 {
            assert!(got.len() > 100, "cut at {cut}: only {}", got.len());
            assert_eq!(reader.topics().len(), 2);
            assert!(reader
                .metadata_records()
                .unwrap()
                .iter()
                .any(|r| r.name == "lockstep"));
        }
        if k % 2 == 0 {
            assert_eq!(reader.topics().len(), 2, "stale metadata keeps its topics");
        }
        // Reindexing a repaired bag changes nothing.
        let again = reindex(&dir).unwrap();
        assert!(again.files[0].was_complete);
        assert_eq!(again.metadata, report.metadata);
    }
    // A chunk completes every ~512 bytes, so cutting 300 bytes short of the end loses little.
    assert!(previous >= 280, "{previous}");
}

#[test]
fn killed_writer_loses_at_most_the_open_chunk() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("killed");
    let mut w = common::chunked_writer(&dir, 1024);
    w.add_topic(spec("/a")).unwrap();
    let data = vec![7u8; 100];
    for i in 0..95u64 {
        w.write("/a", i, &data).unwrap();
    }
    // Simulate SIGKILL: nothing in Drop runs, buffered bytes never reach the file.
    std::mem::forget(w);
    // Each chunk closes after 8 records of 131 bytes (>= 1024): 11 complete chunks = 88 messages.
    // Before repair the bag is still readable up to the damage, with an error at the end.
    let before: Vec<_> = BagReader::open(&dir).unwrap().messages().collect();
    assert_eq!(before.iter().filter(|m| m.is_ok()).count(), 88);
    assert!(before.last().unwrap().is_err());
    let report = reindex(&dir).unwrap();
    assert_eq!(report.metadata.message_count, 88);
    let got: Vec<u64> = BagReader::open(&dir)
        .unwrap()
        .messages()
        .map(|m| m.unwrap().log_time_ns)
        .collect();
    assert_eq!(got, (0..88).collect::<Vec<_>>());
}

#[test]
fn split_bag_with_truncated_last_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("split");
    let mut w = BagWriter::create(
        &dir,
        WriterOptions {
            chunk_size_bytes: 256,
            max_bag_duration_ns: Some(99),
            ..WriterOptions::default()
        },
    )
    .unwrap();
    w.add_topic(spec("/a")).unwrap();
    // 63-byte records close a 256-byte chunk every 5 messages: the last file's 53 messages are 10
    // complete chunks and 3 buffered messages that the kill loses.
    for i in 0..353u64 {
        w.write("/a", i, &cdr_string("payload payload payload")).unwrap();
    }
    std::mem::forget(w);
    let report = reindex(&dir).unwrap();
    assert_eq!(report.files.len(), 4);
    assert!(
        report.files[..3]
            .iter()
            .all(|f| f.was_complete && f.messages == 100),
        "{:?}",
        report.files
    );
    assert!(!report.files[3].was_complete);
    let n = report.metadata.message_count;
    assert_eq!(n, 350);
    let got: Vec<u64> = BagReader::open(&dir)
        .unwrap()
        .messages()
        .map(|m| m.unwrap().log_time_ns)
        .collect();
    assert_eq!(got, (0..n).collect::<Vec<_>>());
}

#[test]
fn garbage_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(reindex(&empty).unwrap_err().to_string().contains("no .mcap"));
    let junk = tmp.path().join("junk");
    std::fs::create_dir(&junk).unwrap();
    std::fs::write(junk.join("junk_0.mcap"), b"not an mcap file at all").unwrap();
    let err = reindex(&junk).unwrap_err().to_string();
    assert!(err.contains("not an MCAP file"), "{err}");
    assert_eq!(
        std::fs::read(junk.join("junk_0.mcap")).unwrap(),
        b"not an mcap file at all"
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        /// Cutting a bag anywhere and reindexing gives a valid bag holding a prefix of the messages.
        #[test]
        fn any_truncation_recovers_a_prefix(cut_permille in 0usize..1000) {
            let tmp = tempfile::tempdir().unwrap();
            let src = tmp.path().join("src");
            let all = make_bag(&src, 120);
            let bytes = std::fs::read(src.join("src_0.mcap")).unwrap();
            let cut = bytes.len() * cut_permille / 1000;
            let dir = tmp.path().join("cut");
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("src_0.mcap"), &bytes[..cut]).unwrap();
            reindex(&dir).unwrap();
            let got = common::all_messages(&dir, ReadOptions::default());
            prop_assert_eq!(&got[..], &all[..got.len()]);
            prop_assert_eq!(BagReader::open(&dir).unwrap().metadata().message_count, got.len() as u64);
        }
    }
}
