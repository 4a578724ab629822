//! Reads every real rosbag2 bag in test/data/rosbag2 (rosbag2's own test bags, not written by us).
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{count_by_topic, rosbag2_bags};
use lockstep_bag::{BagMetadata, BagReader, ReadOptions, StorageKind};
use std::collections::BTreeMap;

fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs
        .iter()
        .filter(|p| p.1 > 0)
        .map(|(t, n)| (t.to_string(), *n))
        .collect()
}

#[test]
fn mcap_talker_yields_all_messages_despite_qos_mismatch() {
    let bag = rosbag2_bags().join("mcap/talker");
    let reader = BagReader::open(&bag).unwrap();
    assert_eq!(reader.storage(), StorageKind::Mcap);
    assert_eq!(reader.metadata().version, 4);
    assert_eq!(count_by_topic(&bag), counts(&[("/topic", 10), ("/rosout", 10)]));
    let topic = reader
        .topics()
        .iter()
        .find(|t| t.metadata.name == "/topic")
        .unwrap();
    assert_eq!(topic.metadata.type_name, "std_msgs/msg/String");
    assert_eq!(topic.message_count, 10);
    assert!(topic.definition.as_ref().unwrap().text.contains("string data"));
    let pe = reader
        .topics()
        .iter()
        .find(|t| t.metadata.name == "/parameter_events")
        .unwrap();
    assert_eq!(pe.message_count, 0);
    // Timestamps never go backwards.
    let times: Vec<u64> = reader.messages().map(|m| m.unwrap().log_time_ns).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(times.len(), 20);
}

#[test]
fn sqlite3_talker_matches_mcap_talker() {
    let sq = rosbag2_bags().join("sqlite3/talker");
    let reader = BagReader::open(&sq).unwrap();
    assert_eq!(reader.storage(), StorageKind::Sqlite3);
    assert_eq!(count_by_topic(&sq), counts(&[("/topic", 10), ("/rosout", 10)]));
    let a = common::all_messages(&sq, ReadOptions::topics(["/topic"]));
    let b = common::all_messages(
        &rosbag2_bags().join("mcap/talker"),
        ReadOptions::topics(["/topic"]),
    );
    assert_eq!(a, b);
    // A lone .db3 file opens too.
    let single = BagReader::open(sq.join("talker.db3")).unwrap();
    assert_eq!(single.message_count(), 20);
}

#[test]
fn cdr_test_bag() {
    let bag = rosbag2_bags().join("mcap/cdr_test");
    let reader = BagReader::open(&bag).unwrap();
    assert_eq!(reader.metadata().version, 7);
    assert_eq!(
        count_by_topic(&bag),
        counts(&[("/array_topic", 4), ("/test_topic", 3)])
    );
    let arrays = reader
        .topics()
        .iter()
        .find(|t| t.metadata.type_name == "test_msgs/msg/Arrays")
        .unwrap();
    assert!(arrays
        .definition
        .as_ref()
        .unwrap()
        .text
        .contains("MSG: test_msgs/BasicTypes"));
}

#[test]
fn service_events_bag() {
    let bag = rosbag2_bags().join("mcap/bag_with_topics_and_service_events");
    let reader = BagReader::open(&bag).unwrap();
    assert_eq!(reader.metadata().version, 8);
    assert_eq!(
        count_by_topic(&bag),
        counts(&[
            ("/test_service1/_service_event", 4),
            ("/test_service2/_service_event", 4),
            ("/test_topic1", 1),
            ("/test_topic2", 1),
        ])
    );
    assert_eq!(reader.topics().len(), 5);
    let t = reader
        .topics()
        .iter()
        .find(|t| t.metadata.name == "/test_topic1")
        .unwrap();
    assert!(t.metadata.type_description_hash.starts_with("RIHS01_"));
    // rosbag2's own metadata records are visible as extra data.
    let records = reader.metadata_records().unwrap();
    assert!(records
        .iter()
        .any(|r| r.name == "rosbag2" && r.entries.contains_key("serialized_metadata")));
}

#[test]
fn seek_bag_and_time_filters() {
    let bag = rosbag2_bags().join("mcap/test_bag_for_seek");
    let reader = BagReader::open(&bag).unwrap();
    assert_eq!(reader.metadata().version, 6);
    assert_eq!(count_by_topic(&bag), counts(&[("topic1", 5)]));
    let from = |t: u64| {
        reader
            .messages_with(ReadOptions {
                start_ns: Some(t),
                ..ReadOptions::default()
            })
            .map(|m| m.unwrap().log_time_ns)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        from(1_200_000_000),
        vec![1_200_000_000, 1_300_000_000, 1_400_000_000]
    );
    assert_eq!(from(1_250_000_000), vec![1_300_000_000, 1_400_000_000]);
    let mut it = reader.messages();
    assert_eq!(it.next().unwrap().unwrap().log_time_ns, 1_000_000_000);
    it.seek(1_400_000_000);
    assert_eq!(
        it.map(|m| m.unwrap().log_time_ns).collect::<Vec<_>>(),
        vec![1_400_000_000]
    );
}

#[test]
fn every_rosbag2_metadata_file_parses() {
    for (dir, version) in [
        ("mcap/talker", 4),
        ("sqlite3/talker", 4),
        ("mcap/test_bag_for_seek", 6),
        ("mcap/cdr_test", 7),
        ("mcap/bag_with_topics_and_service_events", 8),
    ] {
        let md = BagMetadata::read(&rosbag2_bags().join(dir).join("metadata.yaml")).unwrap();
        assert_eq!(md.version, version, "{dir}");
        let reparsed = BagMetadata::parse(&md.to_yaml(), std::path::Path::new(dir)).unwrap();
        assert_eq!(
            reparsed.topics_with_message_count, md.topics_with_message_count,
            "{dir}"
        );
        assert_eq!(reparsed.version, 9);
    }
}

#[test]
fn single_mcap_file_opens_without_metadata() {
    let file = rosbag2_bags().join("mcap/cdr_test/cdr_test_0.mcap");
    let reader = BagReader::open(&file).unwrap();
    assert_eq!(reader.message_count(), 7);
    assert_eq!(reader.metadata().storage_identifier, "mcap");
    assert_eq!(reader.metadata().message_count, 7);
}
