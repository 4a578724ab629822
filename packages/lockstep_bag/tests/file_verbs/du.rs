//! `lockstep bag du`: every topic's bytes and every chunk, from the summary or from a file cut short.

use super::*;

#[test]
fn du_counts_every_topic_and_every_chunk() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    recording(&input);
    let text = bag(&["du", s(&input)]).unwrap();
    let mut sizes: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for m in read(&input) {
        let e = sizes.entry(m.0).or_default();
        e.0 += 1;
        e.1 += m.3.len() as u64;
    }
    let total: u64 = sizes.values().map(|v| v.1).sum();
    let mut order: Vec<_> = sizes.iter().collect();
    order.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(b.0)));
    let lines: Vec<&str> = text.lines().collect();
    for (row, (topic, (n, bytes))) in order.iter().enumerate() {
        let cells: Vec<&str> = lines[3 + row].split_whitespace().collect();
        let share = format!("{:.1}", *bytes as f64 * 100.0 / total as f64);
        assert_eq!(
            (cells[0], cells[2], cells[3], cells[4]),
            (topic.as_str(), &*n.to_string(), &*bytes.to_string(), &*share),
            "{text}"
        );
    }
    assert!(lines[3 + order.len()].starts_with("/empty "), "{text}");
    // The chunk table against the file's own chunk indexes.
    let file = std::fs::read(input.join("in_0.mcap")).unwrap();
    let summary = mcap::Summary::read(&file).unwrap().unwrap();
    let (compressed, uncompressed) = summary.chunk_indexes.iter().fold((0, 0), |acc, c| {
        (acc.0 + c.compressed_size, acc.1 + c.uncompressed_size)
    });
    let row = format!(
        "in_0.mcap mcap none {} {compressed} {uncompressed} 1.00",
        summary.chunk_indexes.len()
    );
    assert!(text.lines().any(|l| words(l) == row), "{row}\n{text}");
    let json = bag(&["du", s(&input), "--json"]).unwrap();
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["payload_bytes"], total, "{json}");
    let chunks = &report["chunks"][0];
    assert_eq!(
        (&chunks["compressed_bytes"], &chunks["uncompressed_bytes"]),
        (&compressed.into(), &uncompressed.into()),
        "{json}"
    );

    // zstd chunks, and a file cut short (no summary): its complete chunks are counted from their headers.
    let zstd = tmp.path().join("zstd");
    recording_with(&zstd, ChunkCompression::Zstd);
    let file = std::fs::read(zstd.join("zstd_0.mcap")).unwrap();
    let summary = mcap::Summary::read(&file).unwrap().unwrap();
    let cut_at = file.len() as u64 * 3 / 4;
    let complete: Vec<_> = (summary.chunk_indexes.iter())
        .filter(|c| c.chunk_start_offset + c.chunk_length <= cut_at)
        .collect();
    assert!(complete.len() > 1 && complete.len() < summary.chunk_indexes.len());
    let cut = tmp.path().join("cut.mcap");
    std::fs::write(&cut, &file[..cut_at as usize]).unwrap();
    for (path, chunks) in [(&zstd, summary.chunk_indexes.iter().collect()), (&cut, complete)] {
        let compressed: u64 = chunks.iter().map(|c| c.compressed_size).sum();
        let uncompressed: u64 = chunks.iter().map(|c| c.uncompressed_size).sum();
        assert!(compressed < uncompressed);
        let row = format!("mcap zstd {} {compressed} {uncompressed}", chunks.len());
        // A damaged file fails, after printing what it counted.
        let mut out = Vec::new();
        let result = lockstep_bag::cli::du(path, false, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(words(&text).contains(&row), "{row}\n{text}");
        if path == &cut {
            let err = format!("{:#}", result.unwrap_err());
            assert!(err.contains("cut.mcap"), "{err}");
            assert!(
                text.contains("no usable summary, chunks counted up to byte"),
                "{text}"
            );
        }
    }
}

/// `text` with every run of whitespace made one space.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
