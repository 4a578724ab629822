//! Read order: log time, then the order the messages were written (file, then position in the file),
//! whatever the channel ids and MCAP sequence numbers say, on every storage path: indexed MCAP
//! chunks, MCAP read linearly (no index), split files and sqlite3 pages.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::cdr_string;
use lockstep_bag::{BagReader, BagWriter, MessageDefinition, ReadOptions, TopicSpec, WriterOptions};
use std::collections::BTreeMap;
use std::path::Path;

type Msg = (String, u64, Vec<u8>);

fn string_topic(name: &str) -> TopicSpec {
    TopicSpec::new(name, "std_msgs/msg/String").with_definition(MessageDefinition {
        encoding: "ros2msg".into(),
        text: "string data\n".into(),
    })
}

/// Topics /a, /b, /c (channel ids 1, 2, 3) written C, A, B at t=1, then B, C, A at t=2, `rounds`
/// times over (each round adds 2 to the times), so write order differs from channel order at
/// every timestamp. `split_every` rounds, the writer starts a new file.
fn write_interleaved(dir: &Path, opts: WriterOptions, rounds: u64, split_every: Option<u64>) -> Vec<Msg> {
    let mut w = BagWriter::create(dir, opts).unwrap();
    let ids: BTreeMap<&str, _> = ["/a", "/b", "/c"]
        .into_iter()
        .map(|t| (t, w.add_topic(string_topic(t)).unwrap()))
        .collect();
    let mut written = Vec::new();
    for round in 0..rounds {
        if split_every.is_some_and(|n| round > 0 && round % n == 0) {
            w.split_now().unwrap();
        }
        for (dt, order) in [(1, ["/c", "/a", "/b"]), (2, ["/b", "/c", "/a"])] {
            let t = round * 2 + dt;
            for topic in order {
                let data = cdr_string(&format!("{topic} {t} #{}", written.len()));
                w.write_id(ids[topic], t, t, &data).unwrap();
                written.push((topic.to_string(), t, data));
            }
        }
    }
    w.finish().unwrap();
    written
}

/// Every way of reading `bag` gives `expected` (or the matching part of it): all messages, each
/// topic filter, a time window, and `seek` to every timestamp on an iterator already started.
fn assert_reads_in_order(bag: &Path, expected: &[Msg]) {
    assert_eq!(common::all_messages(bag, ReadOptions::default()), expected);
    for topics in [vec!["/a", "/c"], vec!["/b"]] {
        let want: Vec<Msg> = expected
            .iter()
            .filter(|m| topics.contains(&m.0.as_str()))
            .cloned()
            .collect();
        assert_eq!(common::all_messages(bag, ReadOptions::topics(topics)), want);
    }
    let times: Vec<u64> = expected.iter().map(|m| m.1).collect();
    let (lo, hi) = (times[times.len() / 3], times[2 * times.len() / 3]);
    let window = ReadOptions {
        start_ns: Some(lo),
        end_ns: Some(hi),
        ..ReadOptions::default()
    };
    let want: Vec<Msg> = expected
        .iter()
        .filter(|m| m.1 >= lo && m.1 < hi)
        .cloned()
        .collect();
    assert_eq!(common::all_messages(bag, window), want);

    let reader = BagReader::open(bag).unwrap();
    let mut it = reader.messages();
    let mut distinct = times.clone();
    distinct.dedup();
    for &t in distinct.iter().rev().chain(distinct.iter().step_by(3)) {
        it.next();
        it.seek(t);
        let got: Vec<Msg> = it
            .by_ref()
            .map(|m| m.unwrap())
            .map(|m| (m.topic.to_string(), m.log_time_ns, m.data))
            .collect();
        let want: Vec<Msg> = expected.iter().filter(|m| m.1 >= t).cloned().collect();
        assert_eq!(got, want, "after seek({t})");
    }
}

#[test]
fn equal_timestamps_come_in_write_order_not_channel_order() {
    let tmp = tempfile::tempdir().unwrap();
    // One chunk for everything, then chunks of about one message.
    for chunk_size_bytes in [1 << 20, 40] {
        let dir = tmp.path().join(format!("chunks_{chunk_size_bytes}"));
        let opts = WriterOptions {
            chunk_size_bytes,
            ..WriterOptions::default()
        };
        let written = write_interleaved(&dir, opts, 1, None);
        let topics: Vec<&str> = written.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(topics, ["/c", "/a", "/b", "/b", "/c", "/a"]);
        assert_reads_in_order(&dir, &written);
        let more = tmp.path().join(format!("more_{chunk_size_bytes}"));
        let opts = WriterOptions {
            chunk_size_bytes,
            ..WriterOptions::default()
        };
        let written = write_interleaved(&more, opts, 20, None);
        assert_reads_in_order(&more, &written);
    }
}

#[test]
fn write_order_holds_across_split_files() {
    let tmp = tempfile::tempdir().unwrap();
    // Split by size: files of a few chunks.
    let by_size = tmp.path().join("by_size");
    let opts = WriterOptions {
        chunk_size_bytes: 100,
        max_bag_size_bytes: Some(600),
        ..WriterOptions::default()
    };
    let written = write_interleaved(&by_size, opts, 30, None);
    let files = BagReader::open(&by_size).unwrap().file_paths().len();
    assert!(files >= 3, "{files} files");
    assert_reads_in_order(&by_size, &written);

    // Split by duration.
    let by_time = tmp.path().join("by_time");
    let opts = WriterOptions {
        chunk_size_bytes: 100,
        max_bag_duration_ns: Some(5),
        ..WriterOptions::default()
    };
    let written = write_interleaved(&by_time, opts, 30, None);
    assert!(BagReader::open(&by_time).unwrap().file_paths().len() >= 3);
    assert_reads_in_order(&by_time, &written);

    // Split on request every third round.
    let on_request = tmp.path().join("on_request");
    let written = write_interleaved(&on_request, WriterOptions::default(), 9, Some(3));
    assert_eq!(BagReader::open(&on_request).unwrap().file_paths().len(), 3);
    assert_reads_in_order(&on_request, &written);

    // Equal timestamps in three files: the earlier file's messages first, then the later file's, each
    // in write order.
    let same_time = tmp.path().join("same_time");
    let mut w = BagWriter::create(&same_time, WriterOptions::default()).unwrap();
    let ids: Vec<_> = ["/a", "/b", "/c"]
        .into_iter()
        .map(|t| w.add_topic(string_topic(t)).unwrap())
        .collect();
    let mut written = Vec::new();
    for (file, order) in [[2, 0, 1], [1, 2, 0], [0, 2, 1]].into_iter().enumerate() {
        if file > 0 {
            w.split_now().unwrap();
        }
        for i in order {
            let topic = ["/a", "/b", "/c"][i];
            let data = cdr_string(&format!("{topic} in file {file}"));
            w.write_id(ids[i], 7, 7, &data).unwrap();
            written.push((topic.to_string(), 7, data));
        }
    }
    w.finish().unwrap();
    assert_eq!(BagReader::open(&same_time).unwrap().file_paths().len(), 3);
    assert_eq!(common::all_messages(&same_time, ReadOptions::default()), written);
}

/// An MCAP file written with the `mcap` crate directly: three channels, messages in `writes` order
/// with sequence numbers that count down (so sequence order is the reverse of write order).
fn raw_mcap(path: &Path, opts: mcap::WriteOptions, writes: &[Msg]) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = opts.profile("ros2").create(file).unwrap();
    let schema = w
        .add_schema("std_msgs/msg/String", "ros2msg", b"string data\n")
        .unwrap();
    let channels: BTreeMap<&str, u16> = ["/a", "/b", "/c"]
        .into_iter()
        .map(|t| (t, w.add_channel(schema, t, "cdr", &BTreeMap::new()).unwrap()))
        .collect();
    for (i, (topic, t, data)) in writes.iter().enumerate() {
        let header = mcap::records::MessageHeader {
            channel_id: channels[topic.as_str()],
            sequence: (writes.len() - i) as u32,
            log_time: *t,
            publish_time: *t,
        };
        w.write_to_known_channel(&header, data).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn indexed_and_linear_mcap_reads_agree_on_write_order() {
    let tmp = tempfile::tempdir().unwrap();
    let mut writes = Vec::new();
    for t in 1..=6u64 {
        let order = if t % 2 == 1 {
            ["/c", "/a", "/b"]
        } else {
            ["/b", "/c", "/a"]
        };
        for topic in order {
            writes.push((topic.to_string(), t, cdr_string(&format!("{topic} {t}"))));
        }
    }
    let unindexed = || {
        mcap::WriteOptions::new()
            .emit_chunk_indexes(false)
            .emit_message_indexes(false)
    };
    let cases = [
        ("indexed_one_chunk.mcap", mcap::WriteOptions::new(), true),
        (
            "indexed_small_chunks.mcap",
            mcap::WriteOptions::new().chunk_size(Some(60)),
            true,
        ),
        ("linear_one_chunk.mcap", unindexed(), false),
        (
            "linear_small_chunks.mcap",
            unindexed().chunk_size(Some(60)),
            false,
        ),
        (
            "linear_no_chunks.mcap",
            mcap::WriteOptions::new().use_chunks(false),
            false,
        ),
    ];
    for (name, opts, indexed) in cases {
        let path = tmp.path().join(name);
        raw_mcap(&path, opts, &writes);
        let reader = BagReader::open(&path).unwrap();
        assert_eq!(reader.message_count(), writes.len() as u64, "{name}");
        let got: Vec<_> = reader
            .messages()
            .map(|m| m.unwrap())
            .map(|m| (m.topic.to_string(), m.log_time_ns, m.data))
            .collect();
        assert_eq!(got, writes, "{name} (indexed: {indexed})");
        assert_reads_in_order(&path, &writes);
    }
}

/// A .db3 file in rosbag2 Jazzy's schema holding `rows` (topic, time, data) in insertion order.
fn rosbag2_db3(path: &Path, rows: &[Msg]) {
    let mut conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE schema(schema_version INTEGER PRIMARY KEY, ros_distro TEXT NOT NULL);
         INSERT INTO schema VALUES (4, 'jazzy');
         CREATE TABLE metadata(id INTEGER PRIMARY KEY, metadata_version INTEGER NOT NULL, metadata TEXT NOT NULL);
         CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
             serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL,
             type_description_hash TEXT NOT NULL);
         CREATE TABLE message_definitions(id INTEGER PRIMARY KEY, topic_type TEXT NOT NULL,
             encoding TEXT NOT NULL, encoded_message_definition TEXT NOT NULL,
             type_description_hash TEXT NOT NULL);
         CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL,
             timestamp INTEGER NOT NULL, data BLOB NOT NULL);
         CREATE INDEX timestamp_idx ON messages (timestamp ASC);
         INSERT INTO message_definitions VALUES (1, 'std_msgs/msg/String', 'ros2msg', 'string data', '');
         INSERT INTO topics VALUES (1, '/a', 'std_msgs/msg/String', 'cdr', '', ''),
             (2, '/b', 'std_msgs/msg/String', 'cdr', '', ''),
             (3, '/c', 'std_msgs/msg/String', 'cdr', '', '');",
    )
    .unwrap();
    let tx = conn.transaction().unwrap();
    for (topic, t, data) in rows {
        let topic_id = match topic.as_str() {
            "/a" => 1,
            "/b" => 2,
            _ => 3,
        };
        tx.execute(
            "INSERT INTO messages(topic_id, timestamp, data) VALUES (?1, ?2, ?3)",
            rusqlite::params![topic_id, *t as i64, data],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn sqlite3_equal_timestamps_come_in_insertion_order_across_pages_and_files() {
    let tmp = tempfile::tempdir().unwrap();
    // More rows per timestamp than one read page (4096 rows), inserted out of time order, so that
    // pages end in the middle of a run of equal timestamps; two split files.
    let topic = |i: u64| ["/c", "/a", "/b", "/b", "/c", "/a", "/a"][(i % 7) as usize];
    let file0: Vec<Msg> = (0..9000u64)
        .map(|i| {
            let t = [20, 10, 30][(i / 3000) as usize];
            (topic(i).to_string(), t, cdr_string(&format!("f0 {i}")))
        })
        .collect();
    let file1: Vec<Msg> = (0..100u64)
        .map(|i| {
            (
                topic(i + 3).to_string(),
                30 + i % 2 * 10,
                cdr_string(&format!("f1 {i}")),
            )
        })
        .collect();
    let dir = tmp.path().join("db3");
    std::fs::create_dir_all(&dir).unwrap();
    rosbag2_db3(&dir.join("db3_0.db3"), &file0);
    rosbag2_db3(&dir.join("db3_1.db3"), &file1);
    // Time, then file, then insertion order (a stable sort of file 0's rows then file 1's).
    let mut expected: Vec<Msg> = file0.iter().chain(&file1).cloned().collect();
    expected.sort_by_key(|m| m.1);
    assert_reads_in_order(&dir, &expected);

    // A lone file, read page by page.
    let mut expected0 = file0.clone();
    expected0.sort_by_key(|m| m.1);
    assert_reads_in_order(&dir.join("db3_0.db3"), &expected0);
}
