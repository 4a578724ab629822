//! `reindex` never loses what is readable: a damaged chunk in the middle is skipped and every intact
//! chunk after it kept; a cut file keeps every chunk before the cut; a file that is not MCAP is refused
//! and left as it is; the input is only replaced in place when asked.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::cdr_string;
use lockstep_bag::{
    default_output, reindex_with, BagReader, BagWriter, MessageDefinition, ReadOptions, ReindexTarget,
    TopicSpec, WriterOptions,
};
use std::path::{Path, PathBuf};

/// A finished bag of `n` messages in chunks of ~600 bytes with CRCs; returns its MCAP file.
fn make_bag(dir: &Path, n: u64) -> PathBuf {
    let opts = WriterOptions {
        chunk_size_bytes: 600,
        chunk_crcs: true,
        ..WriterOptions::default()
    };
    let mut w = BagWriter::create(dir, opts).unwrap();
    let def = MessageDefinition {
        encoding: "ros2msg".into(),
        text: "string data\n".into(),
    };
    for t in ["/a", "/b"] {
        w.add_topic(TopicSpec::new(t, "std_msgs/msg/String").with_definition(def.clone()))
            .unwrap();
    }
    for i in 0..n {
        let topic = if i % 3 == 0 { "/b" } else { "/a" };
        w.write(topic, 1000 + i, &cdr_string(&format!("message number {i}")))
            .unwrap();
    }
    w.finish().unwrap();
    let name = format!("{}_0.mcap", dir.file_name().unwrap().to_string_lossy());
    dir.join(name)
}

/// Each chunk of an MCAP file: (start offset, length, log times of its messages).
fn chunks(bytes: &[u8]) -> Vec<(usize, usize, Vec<u64>)> {
    let summary = mcap::Summary::read(bytes).unwrap().unwrap();
    summary
        .chunk_indexes
        .iter()
        .map(|ci| {
            let (start, len) = (ci.chunk_start_offset as usize, ci.chunk_length as usize);
            let record = mcap::parse_record(bytes[start], &bytes[start + 9..start + len]).unwrap();
            let mcap::records::Record::Chunk { header, data } = record else {
                panic!("not a chunk at {start}")
            };
            let times = mcap::read::ChunkReader::new(header, &data)
                .unwrap()
                .filter_map(|r| match r.unwrap() {
                    mcap::records::Record::Message { header, .. } => Some(header.log_time),
                    _ => None,
                })
                .collect();
            (start, len, times)
        })
        .collect()
}

fn log_times(path: &Path) -> Vec<u64> {
    common::all_messages(path, ReadOptions::default())
        .into_iter()
        .map(|m| m.1)
        .collect()
}

/// A bag directory `name` under `root` holding `bytes` as its one MCAP file.
fn bag_with(root: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}_0.mcap")), bytes).unwrap();
    dir
}

#[test]
fn a_bad_chunk_in_the_middle_loses_only_its_own_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let file = make_bag(&tmp.path().join("src"), 400);
    let bytes = std::fs::read(&file).unwrap();
    let chunks = chunks(&bytes);
    assert!(chunks.len() >= 10, "{}", chunks.len());
    let (start, len, lost) = chunks[chunks.len() / 2].clone();
    let all: Vec<u64> = (1000..1400).collect();
    let expected: Vec<u64> = all.iter().copied().filter(|t| !lost.contains(t)).collect();

    // A flipped byte in the chunk's data (its CRC no longer matches), then a damaged length field.
    let mut bad_crc = bytes.clone();
    bad_crc[start + len - 5] ^= 0xff;
    let mut bad_length = bytes.clone();
    bad_length[start + 1..start + 9].copy_from_slice(&0xffff_ffff_ffff_fff0u64.to_le_bytes());
    let mut short_length = bytes.clone();
    short_length[start + 1..start + 9].copy_from_slice(&((len as u64) / 2).to_le_bytes());
    for (name, damaged) in [("crc", bad_crc), ("length", bad_length), ("short", short_length)] {
        let dir = bag_with(tmp.path(), name, &damaged);
        let out = tmp.path().join(format!("{name}_out"));
        let report = reindex_with(&dir, &ReindexTarget::NewOutput(out.clone())).unwrap();
        assert_eq!(log_times(&out), expected, "{name}");
        let f = &report.files[0];
        assert_eq!(f.messages, expected.len() as u64, "{name}");
        assert_eq!(f.skipped.len(), 1, "{name}: {:?}", f.skipped);
        assert_eq!(f.skipped[0].offset, start as u64, "{name}");
        assert_eq!(report.metadata.message_count, expected.len() as u64);
        assert_eq!(
            BagReader::open(&out).unwrap().message_count(),
            expected.len() as u64
        );
    }
}

#[test]
fn a_cut_keeps_every_chunk_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let file = make_bag(&tmp.path().join("src"), 300);
    let bytes = std::fs::read(&file).unwrap();
    let chunks = chunks(&bytes);
    for tenth in 1..10 {
        let cut = bytes.len() * tenth / 10;
        let before: Vec<u64> = chunks
            .iter()
            .filter(|(start, len, _)| start + len <= cut)
            .flat_map(|(_, _, times)| times.clone())
            .collect();
        let dir = bag_with(tmp.path(), &format!("cut{tenth}"), &bytes[..cut]);
        let out = tmp.path().join(format!("cut{tenth}_out"));
        let report = reindex_with(&dir, &ReindexTarget::NewOutput(out.clone())).unwrap();
        assert_eq!(log_times(&out), before, "cut at {tenth}0 % (byte {cut})");
        assert_eq!(report.files[0].messages, before.len() as u64);
        assert!(report.files[0].stop_reason.is_some(), "cut at byte {cut}");
    }
}

#[test]
fn random_bytes_are_refused_and_left_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    for (k, bytes) in [
        common::bytes(7, 4096),
        b"not an mcap file at all".to_vec(),
        b"\x89MCAP1\r\n and the rest".to_vec(),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = bag_with(tmp.path(), &format!("junk{k}"), &bytes);
        let file = dir.join(format!("junk{k}_0.mcap"));
        for target in [
            ReindexTarget::InPlace,
            ReindexTarget::NewOutput(tmp.path().join("out")),
        ] {
            let err = reindex_with(&dir, &target).unwrap_err().to_string();
            assert!(err.contains("not an MCAP file"), "{err}");
            let err = reindex_with(&file, &target).unwrap_err().to_string();
            assert!(err.contains("not an MCAP file"), "{err}");
        }
        assert_eq!(std::fs::read(&file).unwrap(), bytes);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "nothing added to the bag"
        );
        assert!(!tmp.path().join("out").exists());
    }
    // A file cut inside its magic (the writer died before anything reached the disk) holds nothing.
    let dir = bag_with(tmp.path(), "early", b"\x89MC");
    let report = reindex_with(&dir, &ReindexTarget::NewOutput(tmp.path().join("early_out"))).unwrap();
    assert_eq!(report.metadata.message_count, 0);
}

#[test]
fn the_input_is_kept_unless_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let file = make_bag(&tmp.path().join("src"), 200);
    let bytes = std::fs::read(&file).unwrap();
    let cut = &bytes[..bytes.len() * 2 / 3];
    let dir = bag_with(tmp.path(), "run", cut);
    let mcap = dir.join("run_0.mcap");

    // Default: a new bag beside the input; the input stays byte for byte.
    let out = default_output(&dir);
    assert_eq!(out, tmp.path().join("run.reindexed"));
    let report = reindex_with(&dir, &ReindexTarget::NewOutput(out.clone())).unwrap();
    let salvaged = report.files[0].messages;
    assert!(salvaged > 50, "{salvaged}");
    assert_eq!(std::fs::read(&mcap).unwrap(), cut);
    assert!(!dir.join("metadata.yaml").exists());
    assert_eq!(log_times(&out).len() as u64, salvaged);
    // An existing output is never overwritten.
    let err = reindex_with(&dir, &ReindexTarget::NewOutput(out.clone()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(log_times(&out).len() as u64, salvaged);

    // A single file goes to `<name>.reindexed.mcap`.
    let single = default_output(&mcap);
    assert_eq!(single, dir.join("run_0.reindexed.mcap"));
    reindex_with(&mcap, &ReindexTarget::NewOutput(single.clone())).unwrap();
    assert_eq!(log_times(&single).len() as u64, salvaged);
    std::fs::remove_file(&single).unwrap();

    // In place: the damaged file is replaced by its repaired copy, nothing else is left behind.
    let report = reindex_with(&dir, &ReindexTarget::InPlace).unwrap();
    assert_eq!(report.files[0].messages, salvaged);
    assert_eq!(log_times(&dir).len() as u64, salvaged);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["metadata.yaml", "run_0.mcap"]);
    // A repaired bag is complete: in place again changes nothing.
    let repaired = std::fs::read(&mcap).unwrap();
    let again = reindex_with(&dir, &ReindexTarget::InPlace).unwrap();
    assert!(again.files[0].was_complete);
    assert_eq!(std::fs::read(&mcap).unwrap(), repaired);
}
