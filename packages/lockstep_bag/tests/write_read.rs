//! Writer -> reader round trips: content, order, split, zstd, extra data, metadata.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bytes, cdr_string};
use lockstep_bag::{
    BagMetadata, BagReader, BagWriter, ChunkCompression, MessageDefinition, QosProfile, ReadOptions,
    TopicSpec, WriterOptions,
};
use std::collections::BTreeMap;
use std::path::Path;

fn string_topic(name: &str) -> TopicSpec {
    TopicSpec::new(name, "std_msgs/msg/String")
        .with_qos(vec![QosProfile::default()])
        .with_type_hash("RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18")
        .with_definition(MessageDefinition {
            encoding: "ros2msg".into(),
            text: "string data\n".into(),
        })
}

/// Writes `n` messages alternating over two topics, with some equal timestamps.
fn write_bag(dir: &Path, opts: WriterOptions, n: u64, size: usize) -> Vec<(String, u64, Vec<u8>)> {
    let mut w = BagWriter::create(dir, opts).unwrap();
    let a = w.add_topic(string_topic("/a")).unwrap();
    let b = w
        .add_topic(TopicSpec::new("/b", "sensor_msgs/msg/JointState"))
        .unwrap();
    let mut written = Vec::new();
    for i in 0..n {
        let t = 1_000_000_000 + (i / 2) * 1_000_000; // pairs share a timestamp
        let (id, topic) = if i % 2 == 0 { (a, "/a") } else { (b, "/b") };
        let data = if size == 0 {
            cdr_string(&format!("msg {i}"))
        } else {
            bytes(i, size)
        };
        w.write_id(id, t, t + 5, &data).unwrap();
        written.push((topic.to_string(), t, data));
    }
    w.finish().unwrap();
    written
}

#[test]
fn round_trip_keeps_every_message_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bag");
    let written = write_bag(&dir, WriterOptions::default(), 1000, 0);
    let read = common::all_messages(&dir, ReadOptions::default());
    assert_eq!(read, written);

    let reader = BagReader::open(&dir).unwrap();
    let md = reader.metadata();
    assert_eq!(md.version, 9);
    assert_eq!(md.message_count, 1000);
    assert_eq!(md.relative_file_paths, vec!["bag_0.mcap".to_string()]);
    assert_eq!(md.starting_time_ns, 1_000_000_000);
    assert_eq!(md.duration_ns, 499 * 1_000_000);
    let counts: Vec<(String, u64)> = reader
        .topics()
        .iter()
        .map(|t| (t.metadata.name.clone(), t.message_count))
        .collect();
    assert_eq!(counts, vec![("/a".to_string(), 500), ("/b".to_string(), 500)]);
    assert_eq!(
        reader.topics()[0].metadata.offered_qos_profiles,
        vec![QosProfile::default()]
    );
    assert!(reader.topics()[0]
        .metadata
        .type_description_hash
        .starts_with("RIHS01_"));
    assert_eq!(
        reader.topics()[0].definition.as_ref().unwrap().text,
        "string data\n"
    );

    // Publish times survive; topic filtering works.
    let only_b: Vec<_> = reader
        .messages_with(ReadOptions::topics(["/b"]))
        .map(|m| m.unwrap())
        .collect();
    assert_eq!(only_b.len(), 500);
    assert!(only_b
        .iter()
        .all(|m| &*m.topic == "/b" && m.publish_time_ns == m.log_time_ns + 5));

    // The embedded rosbag2 record holds the same metadata.
    let records = reader.metadata_records().unwrap();
    let embedded = records.iter().find(|r| r.name == "rosbag2").unwrap();
    assert_eq!(embedded.entries["ROS_DISTRO"], "jazzy");
    let parsed = BagMetadata::parse(&embedded.entries["serialized_metadata"], Path::new("embedded")).unwrap();
    assert_eq!(parsed.message_count, 1000);
}

#[test]
fn equal_timestamps_follow_write_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ties");
    let mut w = common::chunked_writer(&dir, 64);
    let a = w.add_topic(string_topic("/a")).unwrap();
    let b = w.add_topic(string_topic("/b")).unwrap();
    // Written b, a, b, a at the same time: reading gives them in that order (not by channel id),
    // each topic's messages in sequence.
    for (i, id) in [b, a, b, a].into_iter().enumerate() {
        w.write_id(id, 7, 7, &cdr_string(&i.to_string())).unwrap();
    }
    w.finish().unwrap();
    let r = BagReader::open(&dir).unwrap();
    let got: Vec<(String, u32)> = r
        .messages()
        .map(|m| m.unwrap())
        .map(|m| (m.topic.to_string(), m.sequence))
        .collect();
    assert_eq!(
        got,
        vec![
            ("/b".into(), 0),
            ("/a".into(), 0),
            ("/b".into(), 1),
            ("/a".into(), 1)
        ]
    );
}

#[test]
fn out_of_order_writes_are_read_sorted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ooo");
    let mut w = common::chunked_writer(&dir, 200);
    let a = w.add_topic(string_topic("/a")).unwrap();
    let times: Vec<u64> = (0..300u64).map(|i| (i * 7919) % 1000).collect();
    for &t in &times {
        w.write_id(a, t, t, &cdr_string("x")).unwrap();
    }
    w.finish().unwrap();
    let mut sorted = times.clone();
    sorted.sort_unstable();
    let got: Vec<u64> = BagReader::open(&dir)
        .unwrap()
        .messages()
        .map(|m| m.unwrap().log_time_ns)
        .collect();
    assert_eq!(got, sorted);
}

#[test]
fn split_by_size_and_duration() {
    let tmp = tempfile::tempdir().unwrap();
    let by_size = tmp.path().join("by_size");
    let opts = WriterOptions {
        max_bag_size_bytes: Some(64 * 1024),
        chunk_size_bytes: 16 * 1024,
        ..WriterOptions::default()
    };
    let written = write_bag(&by_size, opts, 400, 1000);
    let reader = BagReader::open(&by_size).unwrap();
    let md = reader.metadata().clone();
    assert!(md.relative_file_paths.len() >= 5, "{:?}", md.relative_file_paths);
    for (i, p) in md.relative_file_paths.iter().enumerate() {
        assert_eq!(p, &format!("by_size_{i}.mcap"));
        let size = std::fs::metadata(by_size.join(p)).unwrap().len();
        assert!(size < 64 * 1024 + 20 * 1024, "{p} is {size} bytes");
    }
    assert_eq!(md.files.iter().map(|f| f.message_count).sum::<u64>(), 400);
    assert_eq!(common::all_messages(&by_size, ReadOptions::default()), written);

    let by_time = tmp.path().join("by_time");
    let opts = WriterOptions {
        max_bag_duration_ns: Some(50_000_000),
        ..WriterOptions::default()
    };
    let written = write_bag(&by_time, opts, 400, 0);
    let md = BagReader::open(&by_time).unwrap().metadata().clone();
    // 200 ms of data in files of at most 50 ms.
    assert_eq!(md.files.len(), 4, "{:?}", md.files);
    assert!(md.files.iter().all(|f| f.duration_ns <= 50_000_000));
    assert_eq!(common::all_messages(&by_time, ReadOptions::default()), written);
    // Seeking into the third file.
    let later = common::all_messages(
        &by_time,
        ReadOptions {
            start_ns: Some(1_150_000_000),
            ..ReadOptions::default()
        },
    );
    assert_eq!(
        later.len(),
        written.iter().filter(|m| m.1 >= 1_150_000_000).count()
    );
}

#[test]
fn zstd_chunks_round_trip_and_shrink() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    let packed = tmp.path().join("packed");
    let w1 = write_bag(&plain, WriterOptions::default(), 2000, 0);
    let w2 = write_bag(
        &packed,
        WriterOptions {
            compression: ChunkCompression::Zstd,
            ..WriterOptions::default()
        },
        2000,
        0,
    );
    assert_eq!(w1, w2);
    assert_eq!(common::all_messages(&packed, ReadOptions::default()), w2);
    let size = |d: &Path| BagReader::open(d).unwrap().size_bytes();
    assert!(
        size(&packed) * 2 < size(&plain),
        "{} vs {}",
        size(&packed),
        size(&plain)
    );
    // Compressing on the writing thread instead of a zstd worker gives the same messages.
    let inline = tmp.path().join("inline");
    let opts = WriterOptions {
        compression: ChunkCompression::Zstd,
        compression_threads: 0,
        ..WriterOptions::default()
    };
    assert_eq!(write_bag(&inline, opts, 2000, 0), w1);
    assert_eq!(common::all_messages(&inline, ReadOptions::default()), w1);
}

#[test]
fn attachments_and_metadata_records_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("extra");
    let mut w = BagWriter::create(
        &dir,
        WriterOptions {
            max_bag_duration_ns: Some(10),
            ..WriterOptions::default()
        },
    )
    .unwrap();
    let a = w.add_topic(string_topic("/a")).unwrap();
    w.write_id(a, 1, 1, &cdr_string("one")).unwrap();
    w.attach("lockstep/topology", "application/json", 1, 2, b"{\"modules\":[]}")
        .unwrap();
    let entries: BTreeMap<String, String> = [("format".to_string(), "1".to_string())].into_iter().collect();
    w.write_metadata_record("lockstep", &entries).unwrap();
    assert!(
        w.write_metadata_record("rosbag2", &entries).is_err(),
        "reserved name"
    );
    w.write_id(a, 100, 100, &cdr_string("two")).unwrap(); // new file (duration split)
    w.attach("second", "text/plain", 100, 100, b"2").unwrap();
    w.finish().unwrap();

    let r = BagReader::open(&dir).unwrap();
    assert_eq!(r.file_paths().len(), 2);
    let att = r.attachments().unwrap();
    assert_eq!(att.len(), 2);
    assert_eq!(
        (att[0].name.as_str(), att[0].file_index, att[0].data.as_slice()),
        ("lockstep/topology", 0, &b"{\"modules\":[]}"[..])
    );
    assert_eq!(
        (
            att[0].log_time_ns,
            att[0].create_time_ns,
            att[0].media_type.as_str()
        ),
        (1, 2, "application/json")
    );
    assert_eq!((att[1].name.as_str(), att[1].file_index), ("second", 1));
    let recs = r.metadata_records().unwrap();
    let ours: Vec<_> = recs.iter().filter(|r| r.name == "lockstep").collect();
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].entries, entries);
    assert_eq!(
        recs.iter().filter(|r| r.name == "rosbag2").count(),
        2,
        "one per file"
    );
    assert_eq!(r.message_count(), 2);
}

#[test]
fn writer_rejects_bad_input_and_keeps_going() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bad");
    let mut w = BagWriter::create(&dir, WriterOptions::default()).unwrap();
    assert!(matches!(
        w.write("/nope", 1, b"x"),
        Err(lockstep_bag::Error::UnknownTopic { .. })
    ));
    let id = w.add_topic(string_topic("/a")).unwrap();
    assert_eq!(
        w.add_topic(string_topic("/a")).unwrap(),
        id,
        "same spec is idempotent"
    );
    let err = w
        .add_topic(TopicSpec::new("/a", "std_msgs/msg/Int32"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/a") && err.contains("Int32"), "{err}");
    assert!(TopicSpec::new("/q", "x/msg/Y")
        .with_qos_yaml("- history: maybe")
        .is_err());
    w.write("/a", 5, &cdr_string("ok")).unwrap();
    w.finish().unwrap();
    assert_eq!(BagReader::open(&dir).unwrap().message_count(), 1);
    // The directory is now taken.
    assert!(matches!(
        BagWriter::create(&dir, WriterOptions::default()),
        Err(lockstep_bag::Error::OutputExists { .. })
    ));
}

#[test]
fn metadata_yaml_exists_while_recording() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("live");
    let mut w = BagWriter::create(&dir, WriterOptions::default()).unwrap();
    w.add_topic(string_topic("/a")).unwrap();
    let md = BagMetadata::read(&dir.join("metadata.yaml")).unwrap();
    assert_eq!(md.topics_with_message_count.len(), 1);
    assert_eq!(md.relative_file_paths, vec!["live_0.mcap".to_string()]);
    w.write("/a", 5, &cdr_string("ok")).unwrap();
    w.flush().unwrap();
    assert_eq!(
        BagMetadata::read(&dir.join("metadata.yaml"))
            .unwrap()
            .message_count,
        1
    );
    drop(w); // dropping finishes the bag
    assert_eq!(BagReader::open(&dir).unwrap().message_count(), 1);
}

#[test]
fn identical_input_gives_identical_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, compression| {
        let dir = tmp.path().join(name);
        write_bag(
            &dir,
            WriterOptions {
                compression,
                file_stem: Some("x".into()),
                ..WriterOptions::default()
            },
            3000,
            0,
        );
        (
            std::fs::read(dir.join("x_0.mcap")).unwrap(),
            std::fs::read_to_string(dir.join("metadata.yaml")).unwrap(),
        )
    };
    assert_eq!(run("a", ChunkCompression::None), run("b", ChunkCompression::None));
    assert_eq!(run("c", ChunkCompression::Zstd), run("d", ChunkCompression::Zstd));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Whatever the write order and chunking, reading yields every message sorted by time, then
        /// by write order.
        #[test]
        fn reads_are_sorted_with_stable_ties(
            writes in proptest::collection::vec((0usize..3, 0u64..50, 0usize..40), 1..200),
            chunk in 32u64..2048,
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("p");
            let mut w = common::chunked_writer(&dir, chunk);
            let ids: Vec<_> = ["/x", "/y", "/z"].iter().map(|t| w.add_topic(string_topic(t)).unwrap()).collect();
            let mut seq = [0u32; 3];
            let mut expected = Vec::new();
            for (k, &(topic, t, len)) in writes.iter().enumerate() {
                let data = bytes(k as u64, len);
                w.write_id(ids[topic], t, t, &data).unwrap();
                expected.push((t, topic as u32 + 1, seq[topic], data));
                seq[topic] += 1;
            }
            w.finish().unwrap();
            // Stable: equal times keep write order.
            expected.sort_by_key(|m| m.0);
            let got: Vec<_> = BagReader::open(&dir)
                .unwrap()
                .messages()
                .map(|m| m.unwrap())
                .map(|m| (m.log_time_ns, m.channel_id, m.sequence, m.data))
                .collect();
            prop_assert_eq!(got, expected);
        }
    }
}
