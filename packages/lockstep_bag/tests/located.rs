//! Reading by location: `located_messages` yields what `messages_with` yields, in the same order, with
//! a location from which `read_at` reads each message again, on every storage path (indexed MCAP
//! chunks of every compression, MCAP read linearly, messages outside chunks, split files, sqlite3
//! pages, rosbag2's file and message compression), with a bounded chunk cache. A location that names
//! no message is an error, never a panic.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bytes, data_dir, rosbag2_bags};
use lockstep_bag::{
    BagMessage, BagReader, BagWriter, ChunkCompression, Error, Location, MessageDefinition, Payload,
    ReadOptions, TopicSpec, WriterOptions,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

fn spec(name: &str) -> TopicSpec {
    TopicSpec::new(name, "std_msgs/msg/String").with_definition(MessageDefinition {
        encoding: "ros2msg".into(),
        text: "string data\n".into(),
    })
}

/// One message to write: topic index (into /a, /b, /c), log time, payload length.
type Plan = (usize, u64, usize);

const TOPICS: [&str; 3] = ["/a", "/b", "/c"];

/// Writes `plan` into a new bag at `dir` and returns the messages written as (topic, time, data).
fn write_bag(
    dir: &Path,
    opts: WriterOptions,
    plan: &[Plan],
    split_every: Option<usize>,
) -> Vec<(String, u64, Vec<u8>)> {
    let mut w = BagWriter::create(dir, opts).unwrap();
    for t in TOPICS {
        w.add_topic(spec(t)).unwrap();
    }
    let mut written = Vec::new();
    for (i, &(topic, t, len)) in plan.iter().enumerate() {
        if split_every.is_some_and(|n| i > 0 && i % n == 0) {
            w.split_now().unwrap();
        }
        let data = bytes(i as u64, len);
        w.write(TOPICS[topic % 3], t, &data).unwrap();
        written.push((TOPICS[topic % 3].to_string(), t, data));
    }
    w.finish().unwrap();
    written
}

/// Every way of reading by location agrees with `messages_with` on `bag`, for `opts`: the same
/// messages in the same order (with `Payload::Read` and `Payload::Skip`), and `read_at` /
/// `read_message_at` of each location, in reverse order, give the message back, with the default
/// cache and with none. Returns the number of messages.
fn assert_located_agrees(bag: &Path, opts: &ReadOptions) -> usize {
    let reader = BagReader::open(bag).unwrap();
    let expected: Vec<BagMessage> = reader.messages_with(opts.clone()).map(|m| m.unwrap()).collect();
    let read: Vec<_> = reader
        .located_messages(opts.clone(), Payload::Read)
        .map(|m| m.unwrap())
        .collect();
    let skipped: Vec<_> = reader
        .located_messages(opts.clone(), Payload::Skip)
        .map(|m| m.unwrap())
        .collect();
    assert_eq!(read.len(), expected.len(), "{}: message count", bag.display());
    assert_eq!(skipped.len(), expected.len(), "{}: message count", bag.display());
    for ((e, r), s) in expected.iter().zip(&read).zip(&skipped) {
        let what = format!("{}: {} at {}", bag.display(), e.topic, e.log_time_ns);
        assert_eq!(
            (
                &r.topic,
                r.log_time_ns,
                r.publish_time_ns,
                r.sequence,
                r.channel_id
            ),
            (
                &e.topic,
                e.log_time_ns,
                e.publish_time_ns,
                e.sequence,
                e.channel_id
            ),
            "{what}"
        );
        assert_eq!(r.location.file_index(), e.file_index, "{what}");
        assert_eq!(r.data.as_ref(), Some(&e.data), "{what}");
        assert_eq!(s.location, r.location, "{what}");
        assert_eq!(s.data, None, "{what}");
    }
    for budget in [lockstep_bag::DEFAULT_CHUNK_CACHE_BYTES, 0] {
        let reader = BagReader::open(bag).unwrap();
        reader.set_chunk_cache_bytes(budget);
        for (e, r) in expected.iter().zip(&read).rev() {
            assert_eq!(&reader.read_message_at(&r.location).unwrap(), e, "{}", r.location);
            assert_eq!(reader.read_at(&r.location).unwrap(), e.data);
        }
        assert!(reader.chunk_cache_bytes() <= budget);
    }
    expected.len()
}

/// All messages, one topic, a time window.
fn option_sets() -> Vec<ReadOptions> {
    vec![
        ReadOptions::default(),
        ReadOptions::topics(["/b"]),
        ReadOptions {
            topics: Some(["/a".to_string(), "/c".to_string()].into_iter().collect()),
            start_ns: Some(1_010),
            end_ns: Some(1_040),
        },
    ]
}

fn interleaved_plan(n: u64, len: usize) -> Vec<Plan> {
    (0..n)
        .map(|i| ((i * 7 % 3) as usize, 1_000 + i / 2, len + (i as usize % 5)))
        .collect()
}

#[test]
fn split_bags_of_every_chunk_compression_read_back_by_location() {
    for compression in [ChunkCompression::None, ChunkCompression::Zstd] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("bag");
        let opts = WriterOptions {
            chunk_size_bytes: 500,
            compression,
            chunk_crcs: true,
            ..WriterOptions::default()
        };
        let written = write_bag(&dir, opts, &interleaved_plan(120, 40), Some(45));
        assert_eq!(BagReader::open(&dir).unwrap().file_paths().len(), 3);
        assert_eq!(
            assert_located_agrees(&dir, &ReadOptions::default()),
            written.len()
        );
        for opts in option_sets() {
            assert_located_agrees(&dir, &opts);
        }
    }
}

#[test]
fn a_location_reads_the_message_it_was_given_for() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    let written = write_bag(
        &dir,
        WriterOptions::default(),
        &interleaved_plan(30, 10),
        Some(10),
    );
    let reader = BagReader::open(&dir).unwrap();
    let located: Vec<_> = reader
        .located_messages(ReadOptions::default(), Payload::Skip)
        .map(|m| m.unwrap())
        .collect();
    // Written in time order, so read order is write order.
    for ((topic, t, data), m) in written.iter().zip(&located) {
        assert_eq!((&*m.topic, m.log_time_ns), (topic.as_str(), *t));
        assert_eq!(&reader.read_at(&m.location).unwrap(), data);
    }
    // Files 0, 1, 2 of 10 messages each.
    let files: Vec<usize> = located.iter().map(|m| m.location.file_index()).collect();
    assert_eq!(files, (0..30).map(|i| i / 10).collect::<Vec<_>>());
    assert!(located.iter().all(|m| m.location.index_in_chunk().is_some()));
    let loc = located[7].location;
    let copy = Location::from_parts(loc.file_index(), loc.position(), loc.index_in_chunk());
    assert_eq!(copy, loc);
    assert_eq!(reader.read_at(&copy).unwrap(), written[7].2);
}

/// Large payloads (one chunk each) through a small cache: the cache never holds more than its
/// budget, however many chunks are read.
#[test]
fn the_chunk_cache_stays_within_its_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    let plan: Vec<Plan> = (0..40).map(|i| (i % 3, 1_000 + i as u64, 100_000)).collect();
    let opts = WriterOptions {
        chunk_size_bytes: 50_000,
        compression: ChunkCompression::None,
        ..WriterOptions::default()
    };
    let written = write_bag(&dir, opts, &plan, None);
    let reader = BagReader::open(&dir).unwrap();
    let budget = 350_000;
    reader.set_chunk_cache_bytes(budget);
    let mut peak = 0;
    for m in reader.located_messages(ReadOptions::default(), Payload::Read) {
        let m = m.unwrap();
        peak = peak.max(reader.chunk_cache_bytes());
        assert_eq!(reader.read_at(&m.location).unwrap().len(), 100_000);
    }
    assert!(peak > 0, "chunks are kept");
    assert!(peak <= budget, "cache held {peak} bytes, budget {budget}");
    // Random access, newest first.
    let locations: Vec<_> = reader
        .located_messages(ReadOptions::default(), Payload::Skip)
        .map(|m| m.unwrap().location)
        .collect();
    for (loc, w) in locations.iter().zip(&written).rev() {
        assert_eq!(reader.read_at(loc).unwrap(), w.2);
        assert!(reader.chunk_cache_bytes() <= budget);
    }
    reader.set_chunk_cache_bytes(0);
    assert_eq!(reader.chunk_cache_bytes(), 0);
}

/// An MCAP file written with the `mcap` crate: three channels, the messages of `plan` in order.
fn raw_mcap(path: &Path, opts: mcap::WriteOptions, plan: &[Plan]) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = opts.profile("ros2").create(file).unwrap();
    let schema = w
        .add_schema("std_msgs/msg/String", "ros2msg", b"string data\n")
        .unwrap();
    let channels: Vec<u16> = TOPICS
        .iter()
        .map(|t| w.add_channel(schema, t, "cdr", &BTreeMap::new()).unwrap())
        .collect();
    for (i, &(topic, t, len)) in plan.iter().enumerate() {
        let header = mcap::records::MessageHeader {
            channel_id: channels[topic % 3],
            sequence: i as u32,
            log_time: t,
            publish_time: t + 1,
        };
        w.write_to_known_channel(&header, &bytes(i as u64, len)).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn unindexed_and_unchunked_mcap_files_read_back_by_location() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = interleaved_plan(60, 30);
    let unindexed = || {
        mcap::WriteOptions::new()
            .emit_chunk_indexes(false)
            .emit_message_indexes(false)
    };
    let cases = [
        ("linear_small_chunks.mcap", unindexed().chunk_size(Some(200))),
        ("no_chunks.mcap", mcap::WriteOptions::new().use_chunks(false)),
        (
            "lz4_chunks.mcap",
            mcap::WriteOptions::new()
                .chunk_size(Some(300))
                .compression(Some(mcap::Compression::Lz4)),
        ),
    ];
    for (name, opts) in cases {
        let path = tmp.path().join(name);
        raw_mcap(&path, opts, &plan);
        assert_eq!(
            assert_located_agrees(&path, &ReadOptions::default()),
            plan.len(),
            "{name}"
        );
        for opts in option_sets() {
            assert_located_agrees(&path, &opts);
        }
        let reader = BagReader::open(&path).unwrap();
        let first = reader
            .located_messages(ReadOptions::default(), Payload::Skip)
            .next()
            .unwrap()
            .unwrap();
        let chunked = name != "no_chunks.mcap";
        assert_eq!(first.location.index_in_chunk().is_some(), chunked, "{name}");
    }
}

/// A bag whose writer was killed (no summary): the intact messages read back by location, then
/// the damage is reported, as `messages()` does.
#[test]
fn a_truncated_file_reads_back_what_is_intact() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    let opts = WriterOptions {
        chunk_size_bytes: 300,
        ..WriterOptions::default()
    };
    write_bag(&dir, opts, &interleaved_plan(80, 20), None);
    let file = dir.join("bag_0.mcap");
    let bytes = std::fs::read(&file).unwrap();
    let cut = tmp.path().join("cut.mcap");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let reader = BagReader::open(&cut).unwrap();
    let plain: Vec<_> = reader.messages().collect();
    let located: Vec<_> = reader
        .located_messages(ReadOptions::default(), Payload::Read)
        .collect();
    assert_eq!(plain.len(), located.len());
    assert!(plain.last().unwrap().is_err() && located.last().unwrap().is_err());
    for (p, l) in plain.iter().zip(&located).take(plain.len() - 1) {
        let (p, l) = (p.as_ref().unwrap(), l.as_ref().unwrap());
        assert_eq!(l.data.as_ref(), Some(&p.data));
        assert_eq!(reader.read_at(&l.location).unwrap(), p.data);
    }
}

/// rosbag2's own bags (MCAP and sqlite3) and its compressed bags (file and message compression).
#[test]
fn rosbag2_bags_read_back_by_location() {
    let bags = [
        rosbag2_bags().join("mcap/talker"),
        rosbag2_bags().join("mcap/cdr_test"),
        rosbag2_bags().join("mcap/test_bag_for_seek"),
        rosbag2_bags().join("mcap/bag_with_topics_and_service_events"),
        rosbag2_bags().join("sqlite3/talker"),
        data_dir().join("compressed/mcap_file"),
        data_dir().join("compressed/mcap_message"),
        data_dir().join("compressed/sqlite3_file"),
        data_dir().join("compressed/sqlite3_message"),
    ];
    for bag in bags {
        let n = assert_located_agrees(&bag, &ReadOptions::default());
        assert!(n > 0, "{} holds messages", bag.display());
    }
}

/// A .db3 file in rosbag2 Jazzy's schema holding the messages of `plan`, inserted in order.
fn db3(path: &Path, plan: &[Plan], salt: u64) {
    let mut conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
             serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL,
             type_description_hash TEXT NOT NULL);
         CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL,
             timestamp INTEGER NOT NULL, data BLOB NOT NULL);
         INSERT INTO topics VALUES (1, '/a', 'std_msgs/msg/String', 'cdr', '', ''),
             (2, '/b', 'std_msgs/msg/String', 'cdr', '', ''),
             (3, '/c', 'std_msgs/msg/String', 'cdr', '', '');",
    )
    .unwrap();
    let tx = conn.transaction().unwrap();
    for (i, &(topic, t, len)) in plan.iter().enumerate() {
        tx.execute(
            "INSERT INTO messages(topic_id, timestamp, data) VALUES (?1, ?2, ?3)",
            rusqlite::params![(topic % 3) as i64 + 1, t as i64, bytes(salt + i as u64, len)],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn split_sqlite3_bags_read_back_by_location_across_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db3");
    std::fs::create_dir(&dir).unwrap();
    // More rows than a page (4096), out of time order; a second file overlapping in time.
    let first: Vec<Plan> = (0..5000u64)
        .map(|i| ((i % 3) as usize, 1_000 + (i * 37) % 60, 8))
        .collect();
    let second: Vec<Plan> = (0..300u64)
        .map(|i| ((i % 2) as usize, 1_020 + i % 40, 12))
        .collect();
    db3(&dir.join("db3_0.db3"), &first, 0);
    db3(&dir.join("db3_1.db3"), &second, 1 << 32);
    for opts in option_sets() {
        assert_located_agrees(&dir, &opts);
    }
    let reader = BagReader::open(&dir).unwrap();
    let m = reader
        .located_messages(ReadOptions::default(), Payload::Skip)
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(m.location.index_in_chunk(), None);
    let missing = Location::from_parts(0, 999_999, None);
    assert!(matches!(reader.read_at(&missing), Err(Error::BadLocation { .. })));
    let chunk_in_sqlite = Location::from_parts(0, 1, Some(0));
    assert!(matches!(
        reader.read_at(&chunk_in_sqlite),
        Err(Error::BadLocation { .. })
    ));
}

#[test]
fn a_location_naming_no_message_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    write_bag(
        &dir,
        WriterOptions::default(),
        &interleaved_plan(20, 10),
        Some(10),
    );
    let reader = BagReader::open(&dir).unwrap();
    let good = reader
        .located_messages(ReadOptions::default(), Payload::Skip)
        .next()
        .unwrap()
        .unwrap()
        .location;
    let chunk = good.position();
    let size = std::fs::metadata(dir.join("bag_0.mcap")).unwrap().len();
    let cases = [
        (Location::from_parts(2, chunk, Some(0)), "storage files"),
        (Location::from_parts(usize::MAX, chunk, Some(0)), "storage files"),
        (
            Location::from_parts(0, chunk, Some(10_000)),
            "no message record there",
        ),
        (Location::from_parts(0, chunk, None), "not a message"),
        (Location::from_parts(0, 0, Some(0)), "malformed"),
        (Location::from_parts(0, size - 3, Some(0)), "past the end"),
        (Location::from_parts(0, u64::MAX, None), "past the end"),
        (Location::from_parts(0, chunk + 1, Some(0)), "malformed"),
    ];
    for (loc, says) in cases {
        let err = reader.read_at(&loc).unwrap_err();
        let text = lockstep_bag::error_chain(&err);
        assert!(text.contains(says), "{loc}: {text}");
    }
    // The good location still reads.
    assert_eq!(reader.read_at(&good).unwrap().len(), 10);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any bag the writer makes (sizes, times out of order, chunking, compression, splits) reads
    /// back by location exactly as `messages()` reads it.
    #[test]
    fn any_written_bag_reads_back_by_location(
        plan in proptest::collection::vec((0usize..3, 1_000u64..1_060, 0usize..3_000), 1..80),
        chunk in prop_oneof![Just(64u64), Just(1_000), Just(20_000), Just(1 << 20)],
        compression in prop_oneof![Just(ChunkCompression::None), Just(ChunkCompression::Zstd)],
        split_every in proptest::option::of(1usize..40),
    ) {
        let plan: &Vec<Plan> = &plan;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("bag");
        let opts = WriterOptions { chunk_size_bytes: chunk, compression, ..WriterOptions::default() };
        let written = write_bag(&dir, opts, plan, split_every);
        for opts in option_sets() {
            assert_located_agrees(&dir, &opts);
        }
        let reader = BagReader::open(&dir).unwrap();
        let mut data: Vec<Vec<u8>> = reader
            .located_messages(ReadOptions::default(), Payload::Skip)
            .map(|m| reader.read_at(&m.unwrap().location).unwrap())
            .collect();
        let mut want: Vec<Vec<u8>> = written.into_iter().map(|w| w.2).collect();
        data.sort();
        want.sort();
        prop_assert_eq!(data, want);
    }

    /// Any location, made up, on a valid bag: an answer, never a panic.
    #[test]
    fn made_up_locations_never_panic(
        file in 0usize..4,
        position in prop_oneof![0u64..20_000, any::<u64>()],
        index in proptest::option::of(prop_oneof![0u32..50, any::<u32>()]),
    ) {
        let bag = made_up_target();
        let reader = BagReader::open(&bag).unwrap();
        let _ = reader.read_message_at(&Location::from_parts(file, position, index));
    }
}

/// A small split bag for `made_up_locations_never_panic`, written once.
fn made_up_target() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let opts = WriterOptions {
            chunk_size_bytes: 400,
            ..WriterOptions::default()
        };
        write_bag(&tmp.path().join("bag"), opts, &interleaved_plan(60, 25), Some(25));
        tmp
    })
    .path()
    .join("bag")
}
