//! Reading never writes: a read-only copy of a bag opens and reads completely, and reading leaves the
//! bag directory's file list and file contents as they were (sqlite3 and MCAP).
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{cdr_string, rosbag2_bags};
use lockstep_bag::{BagReader, ReadOptions};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Every file of `dir` (recursively) with its content.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(snapshot(&path));
        } else {
            out.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
    }
}

/// `chmod -R a-w` on a flat directory; undone on drop so the temporary directory can be removed.
struct ReadOnly(PathBuf);

impl ReadOnly {
    fn new(dir: &Path) -> Self {
        set_writable(dir, false);
        ReadOnly(dir.to_path_buf())
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        set_writable(&self.0, true);
    }
}

fn set_writable(dir: &Path, writable: bool) {
    let mode = |path: &Path, dir_bits: u32| {
        let mut perms = std::fs::metadata(path).unwrap().permissions();
        let m = perms.mode();
        perms.set_mode(if writable {
            m | 0o200 | dir_bits
        } else {
            m & !0o222
        });
        std::fs::set_permissions(path, perms).unwrap();
    };
    if writable {
        mode(dir, 0o100);
    }
    for entry in std::fs::read_dir(dir).unwrap() {
        mode(&entry.unwrap().path(), 0);
    }
    if !writable {
        mode(dir, 0);
    }
}

/// Opens `bag` and reads everything a reader can give (messages, filtered messages, a seek,
/// attachments, metadata records); returns the number of messages.
fn read_everything(bag: &Path) -> usize {
    let reader = BagReader::open(bag).unwrap_or_else(|e| panic!("{}: {e}", bag.display()));
    let all: Vec<_> = reader.messages().map(|m| m.unwrap()).collect();
    assert_eq!(all.len() as u64, reader.message_count(), "{}", bag.display());
    let first_topic = reader.topics()[0].metadata.name.clone();
    let filtered = reader
        .messages_with(ReadOptions::topics([first_topic.clone()]))
        .count();
    assert_eq!(filtered, all.iter().filter(|m| *m.topic == *first_topic).count());
    if let Some(middle) = all.get(all.len() / 2) {
        let mut it = reader.messages();
        it.seek(middle.log_time_ns);
        assert!(it.count() >= all.len() - all.len() / 2);
    }
    reader.attachments().unwrap();
    reader.metadata_records().unwrap();
    all.len()
}

#[test]
fn reading_a_read_only_copy_changes_nothing() {
    for (bag, messages) in [
        ("sqlite3/talker", 20),
        ("mcap/talker", 20),
        ("mcap/cdr_test", 7),
        ("mcap/bag_with_topics_and_service_events", 10),
        ("mcap/test_bag_for_seek", 5),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let copy = tmp.path().join("bag");
        copy_dir(&rosbag2_bags().join(bag), &copy);
        let before = snapshot(&copy);
        {
            // Tests may run as root, where permission bits stop no write: the snapshot comparison
            // below is what catches one.
            let _read_only = ReadOnly::new(&copy);
            assert_eq!(read_everything(&copy), messages, "{bag}");
            // A lone storage file inside the read-only directory opens too.
            let storage = BagReader::open(&copy).unwrap().file_paths()[0].clone();
            assert_eq!(read_everything(&storage), messages, "{bag} (lone file)");
        }
        assert_eq!(
            snapshot(&copy).keys().collect::<Vec<_>>(),
            before.keys().collect::<Vec<_>>(),
            "{bag}: reading changed the file list"
        );
        assert!(
            snapshot(&copy) == before,
            "{bag}: reading changed a file's content"
        );
    }
}

/// A sqlite3 bag in WAL mode whose last messages are still only in its `-wal` file, as a rosbag2
/// recorder killed before its checkpoint leaves it: the reader must see them, so it must not open
/// such a file as immutable.
#[test]
fn sqlite3_messages_still_in_the_wal_file_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let live = tmp.path().join("live");
    std::fs::create_dir(&live).unwrap();
    let conn = rusqlite::Connection::open(live.join("wal_0.db3")).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode=WAL;
         CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
                             serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL);
         CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL,
                               timestamp INTEGER NOT NULL, data BLOB NOT NULL);
         INSERT INTO topics VALUES (1, '/chatter', 'std_msgs/msg/String', 'cdr', '');
         INSERT INTO messages(topic_id, timestamp, data) VALUES (1, 5, x'00010000');
         PRAGMA wal_checkpoint(TRUNCATE);
         PRAGMA wal_autocheckpoint=0;",
    )
    .unwrap();
    for i in 1..=30i64 {
        conn.execute(
            "INSERT INTO messages(topic_id, timestamp, data) VALUES (1, ?1, ?2)",
            rusqlite::params![10 + i, cdr_string(&i.to_string())],
        )
        .unwrap();
    }
    // The "crash": copy the files while the writer still holds them, then let it go.
    let bag = tmp.path().join("bag");
    std::fs::create_dir(&bag).unwrap();
    for name in ["wal_0.db3", "wal_0.db3-wal"] {
        std::fs::copy(live.join(name), bag.join(name)).unwrap();
    }
    drop(conn);
    let reader = BagReader::open(&bag).unwrap();
    assert_eq!(reader.message_count(), 31);
    let times: Vec<u64> = reader.messages().map(|m| m.unwrap().log_time_ns).collect();
    assert_eq!(times.len(), 31);
    assert_eq!((times[0], times[30]), (5, 40));
}
