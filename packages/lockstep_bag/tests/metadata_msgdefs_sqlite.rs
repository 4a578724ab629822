//! metadata.yaml versions 4 to 9, message definition resolution, and handmade sqlite3 bags.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{cdr_string, data_dir};
use lockstep_bag::qos::{Durability, History};
use lockstep_bag::{BagMetadata, BagReader, Error, MessageDefinitions, ReadOptions, StorageKind};
use std::path::Path;

#[test]
fn metadata_versions_4_to_9_parse() {
    for v in 4..=9u32 {
        let path = data_dir().join(format!("metadata/v{v}.yaml"));
        let md = BagMetadata::read(&path).unwrap_or_else(|e| panic!("v{v}: {e}"));
        assert_eq!(md.version, v);
        assert_eq!(
            (md.starting_time_ns, md.duration_ns, md.message_count),
            (1000, 1500, 3)
        );
        let topic = &md.topics_with_message_count[0];
        assert_eq!(topic.topic_metadata.name, "/chatter");
        assert_eq!(topic.message_count, 3);
        let qos = &topic.topic_metadata.offered_qos_profiles;
        assert_eq!(qos.len(), 1, "v{v}");
        assert_eq!(
            (qos[0].history, qos[0].depth, qos[0].durability),
            (History::KeepLast, 10, Durability::Volatile)
        );
        assert_eq!(
            topic.topic_metadata.type_description_hash,
            if v >= 7 { "RIHS01_abc" } else { "" }
        );
        assert_eq!(md.files.len(), if v >= 5 { 1 } else { 0 });
        assert_eq!(
            md.custom_data.get("owner").map(String::as_str),
            if v >= 6 { Some("lockstep") } else { None }
        );
        assert_eq!(
            md.ros_distro,
            match v {
                8 => "humble",
                9 => "jazzy",
                _ => "",
            }
        );
        // Written back as version 9 and read again: same content.
        let again = BagMetadata::parse(&md.to_yaml(), Path::new("again")).unwrap();
        assert_eq!(again, BagMetadata { version: 9, ..md });
    }
}

#[test]
fn version_9_metadata_is_written_back_byte_for_byte() {
    // v9.yaml is in rosbag2 Jazzy's (yaml-cpp's) layout; the YAML parser is serde_norway, the writer
    // this crate's own emitter: parsing and writing back must not change a byte.
    let text = std::fs::read_to_string(data_dir().join("metadata/v9.yaml")).unwrap();
    let md = BagMetadata::parse(&text, Path::new("v9.yaml")).unwrap();
    assert_eq!(md.to_yaml(), text);
}

#[test]
fn bad_metadata_names_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(data_dir().join("metadata/v9.yaml")).unwrap();
    let broken = text.replace("depth: 10", "depth: lots");
    let dir = tmp.path().join("bag");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("metadata.yaml"), broken).unwrap();
    let err = BagReader::open(&dir).unwrap_err().to_string();
    assert!(
        err.contains("metadata.yaml") && err.contains("offered_qos_profiles") && err.contains("depth"),
        "{err}"
    );
    std::fs::write(
        dir.join("metadata.yaml"),
        text.replace("version: 9", "version: 12"),
    )
    .unwrap();
    assert!(matches!(
        BagReader::open(&dir),
        Err(Error::UnsupportedVersion { version: 12, .. })
    ));
    std::fs::write(dir.join("metadata.yaml"), text).unwrap();
    let err = BagReader::open(&dir).unwrap_err().to_string();
    assert!(err.contains("bag_v9_0.mcap"), "missing file named: {err}");
}

fn prefixes() -> MessageDefinitions {
    MessageDefinitions::new([data_dir().join("prefix_a"), data_dir().join("prefix_b")])
}

#[test]
fn resolves_dependencies_like_rosbag2() {
    let mut defs = prefixes();
    let def = defs.resolve("geometry_msgs/msg/PoseStamped").unwrap();
    assert_eq!(def.encoding, "ros2msg");
    let bar = "=".repeat(80);
    let expected = format!(
        "std_msgs/Header header\nPose pose\n\n{bar}\nMSG: geometry_msgs/Pose\n# A pose.\nPoint position\nQuaternion orientation\n\n{bar}\nMSG: geometry_msgs/Point\nfloat64 x\nfloat64 y\nfloat64 z\n\n{bar}\nMSG: geometry_msgs/Quaternion\nfloat64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n\n{bar}\nMSG: std_msgs/Header\n# Standard metadata for higher-level stamped data types.\nbuiltin_interfaces/Time stamp\n\n# Transform frame with which this data is associated.\nstring frame_id\n\n{bar}\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n"
    );
    assert_eq!(def.text, expected);
    // First prefix wins.
    assert_eq!(
        defs.resolve("std_msgs/String").unwrap().text,
        "# A string.\nstring data\n"
    );
}

#[test]
fn unresolvable_types_are_clear_errors_with_opt_in_fallback() {
    let mut defs = prefixes();
    let err = defs.resolve("nav_msgs/msg/Odometry").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("nav_msgs/msg/Odometry") && text.contains("prefix_a") && text.contains("prefix_b"),
        "{text}"
    );
    let err = defs.resolve("geometry_msgs/msg/Broken").unwrap_err().to_string();
    assert!(
        err.contains("geometry_msgs/Missing") && err.contains("needed by `geometry_msgs/msg/Broken`"),
        "{err}"
    );
    let (def, why) = defs.resolve_or_empty("nav_msgs/msg/Odometry");
    assert_eq!(def, lockstep_bag::MessageDefinition::empty());
    assert!(why.is_some());
    assert!(matches!(
        defs.resolve("not a type"),
        Err(Error::BadTypeName { .. })
    ));
    let empty = MessageDefinitions::from_prefix_path("");
    assert!(empty
        .clone()
        .resolve("std_msgs/msg/String")
        .unwrap_err()
        .to_string()
        .contains("AMENT_PREFIX_PATH"));
}

/// A sqlite3 bag in the oldest schema (no QoS, no hash, no definitions), as early rosbag2 wrote it.
fn old_sqlite_bag(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut conn = rusqlite::Connection::open(dir.join("old_0.db3")).unwrap();
    conn.execute_batch(
        "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, serialization_format TEXT NOT NULL);
         CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL, timestamp INTEGER NOT NULL, data BLOB NOT NULL);
         INSERT INTO topics VALUES (1, '/chatter', 'std_msgs/msg/String', 'cdr'), (2, '/other', 'std_msgs/msg/String', 'cdr');",
    )
    .unwrap();
    // Inserted out of time order, with a tie; more rows than one read page.
    let tx = conn.transaction().unwrap();
    for i in 0..5000i64 {
        let t = 10_000 - (i % 2500) * 3;
        let topic = 1 + i % 2;
        tx.execute(
            "INSERT INTO messages(topic_id, timestamp, data) VALUES (?1, ?2, ?3)",
            rusqlite::params![topic, t, cdr_string(&i.to_string())],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn sqlite3_bags_without_metadata_yaml() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("old");
    old_sqlite_bag(&dir);
    let reader = BagReader::open(&dir).unwrap();
    assert_eq!(reader.storage(), StorageKind::Sqlite3);
    assert_eq!(reader.message_count(), 5000);
    assert_eq!(reader.metadata().storage_identifier, "sqlite3");
    assert_eq!(reader.topics().len(), 2);
    let msgs: Vec<_> = reader.messages().map(|m| m.unwrap()).collect();
    assert_eq!(msgs.len(), 5000);
    assert!(msgs
        .windows(2)
        .all(|w| (w[0].log_time_ns, w[0].channel_id) <= (w[1].log_time_ns, w[1].channel_id)));
    let chatter = reader.messages_with(ReadOptions::topics(["/chatter"])).count();
    assert_eq!(chatter, 2500);
    let late = reader
        .messages_with(ReadOptions {
            start_ns: Some(9_000),
            ..ReadOptions::default()
        })
        .count();
    assert_eq!(late, msgs.iter().filter(|m| m.log_time_ns >= 9_000).count());

    // convert it to MCAP and compare.
    let out = tmp.path().join("converted");
    let mut sink = Vec::new();
    let n = lockstep_bag_cli_convert(&dir, &out, &mut sink);
    assert_eq!(n, 5000);
    let a: Vec<_> = common::all_messages(&dir, ReadOptions::default());
    let b: Vec<_> = common::all_messages(&out, ReadOptions::default());
    assert_eq!(a, b);
}

#[cfg(feature = "cli")]
fn lockstep_bag_cli_convert(input: &Path, output: &Path, sink: &mut Vec<u8>) -> u64 {
    let mut defs = MessageDefinitions::new([data_dir().join("prefix_a")]);
    let n = lockstep_bag::cli::convert(
        input,
        output,
        lockstep_bag::WriterOptions::default(),
        &mut defs,
        sink,
    )
    .unwrap();
    // Definitions missing from the sqlite3 bag were filled from the prefixes.
    let r = BagReader::open(output).unwrap();
    assert_eq!(
        r.topics()[0].definition.as_ref().unwrap().text,
        "# A string.\nstring data\n"
    );
    let mut info = Vec::new();
    lockstep_bag::cli::info(output, &mut info).unwrap();
    let info = String::from_utf8(info).unwrap();
    assert!(
        info.contains("Topic: /chatter | Type: std_msgs/msg/String | Count: 2500"),
        "{info}"
    );
    n
}

#[cfg(not(feature = "cli"))]
fn lockstep_bag_cli_convert(input: &Path, output: &Path, _sink: &mut Vec<u8>) -> u64 {
    // Without the CLI feature, copy with the library API.
    let r = BagReader::open(input).unwrap();
    let mut w = lockstep_bag::BagWriter::create(output, lockstep_bag::WriterOptions::default()).unwrap();
    for t in r.topics() {
        w.add_topic(lockstep_bag::TopicSpec::new(
            &t.metadata.name,
            &t.metadata.type_name,
        ))
        .unwrap();
    }
    let mut n = 0;
    for m in r.messages() {
        let m = m.unwrap();
        w.write(&m.topic, m.log_time_ns, &m.data).unwrap();
        n += 1;
    }
    w.finish().unwrap();
    n
}
