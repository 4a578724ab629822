//! Indexes a bag by location and reads every payload back on demand, to measure the memory that takes
//! (run it under `/usr/bin/time -v` for the peak RSS):
//!
//! `cargo run --release -p lockstep_bag --example located_read -- BAG [CACHE_MB]`
//!
//! Pass 1 reads every message with its data (as an indexer hashing each payload does) and keeps only its
//! location; pass 2 reads each payload again with `read_at`, in order; pass 3 in a scattered order. Prints
//! the messages, bytes and seconds of each pass, and the chunk cache's size at the end.

use lockstep_bag::{BagReader, Location, Payload, ReadOptions};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let bag = args.next().ok_or("usage: located_read BAG [CACHE_MB]")?;
    let reader = BagReader::open(&bag)?;
    if let Some(mb) = args.next() {
        reader.set_chunk_cache_bytes(mb.parse::<usize>()? * 1024 * 1024);
    }
    let start = Instant::now();
    let mut locations: Vec<Location> = Vec::new();
    let mut bytes = 0u64;
    let mut checksum = 0u64;
    for message in reader.located_messages(ReadOptions::default(), Payload::Read) {
        let message = message?;
        let data = message.data.unwrap_or_default();
        bytes += data.len() as u64;
        checksum = checksum.wrapping_add(data.iter().step_by(4096).map(|&b| u64::from(b)).sum::<u64>());
        locations.push(message.location);
    }
    println!(
        "pass 1 (index, data read): {} messages, {:.3} GB, {:.1} s",
        locations.len(),
        bytes as f64 / 1e9,
        start.elapsed().as_secs_f64()
    );
    for (name, order) in [("in order", 1usize), ("scattered", 7919)] {
        let start = Instant::now();
        let mut again = 0u64;
        let n = locations.len();
        for i in 0..n {
            let at = if order == 1 { i } else { (i * order) % n };
            again += reader.read_at(&locations[at])?.len() as u64;
        }
        println!(
            "pass {name} (read_at): {:.3} GB, {:.1} s",
            again as f64 / 1e9,
            start.elapsed().as_secs_f64()
        );
    }
    println!(
        "chunk cache: {:.1} MB held; checksum {checksum}",
        reader.chunk_cache_bytes() as f64 / 1e6
    );
    Ok(())
}
