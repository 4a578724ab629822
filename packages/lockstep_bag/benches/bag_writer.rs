//! Writer throughput: messages/s and MB/s for small (256 B), medium (64 KiB) and large (1 MiB) messages, uncompressed
//! and zstd, each with two clocks: stopped when the bag is closed (data handed to the OS), and
//! stopped after every file of the bag has been fsync'd to disk.
//!
//! `cargo bench -p lockstep_bag --bench bag_writer [-- --json] [--dir DIR] [--small N] [--medium N] [--large N]
//!  [--runs N] [--compression none|zstd|both] [--zstd-threads N] [--pool FILE]`
//!
//! Settings, the same for every writer `scripts/bench/bag_writer.sh` compares this with (the Python
//! `mcap` and `rosbags` writers): chunk CRCs off (rosbags cannot compute them; rosbag2's MCAP plugin
//! default too), 1 MiB chunks (rosbags' fixed size), chunk compression none or zstd at zstd's default
//! level 3, compressed on the writing thread (`--zstd-threads 0`, the default here; the writer's own
//! default is one zstd worker thread beside the writing thread, which the Python writers cannot do). Message `i` of size `s` is the slice of the payload pool at
//! `(i * s) % (pool_len - s + 1)`; the pool (`--pool`, else 4 MiB generated here) holds bytes of 4 bits
//! of entropy each, so zstd has real work and nothing repeats within a chunk. Each case writes a
//! fresh bag and includes `finish()` (summary, footer, metadata.yaml); the best of `--runs` runs
//! (default 3) is reported for each clock.
//!
//! `--limits` measures instead what the machine can do with the same bytes, the writer's ceilings: copying
//! them (`memcpy` into a chunk-sized buffer), writing them to a file in 1 MiB writes (closed: written;
//! synced: fsync'd), and zstd level 3 alone on 1 MiB chunks of them, on one thread and on every core.

use lockstep_bag::{BagWriter, ChunkCompression, MessageDefinition, TopicSpec, WriterOptions};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Chunk size of every compared writer: rosbags closes a chunk past 1 MiB and cannot be told otherwise.
const CHUNK_SIZE_BYTES: u64 = 1 << 20;

struct Case {
    name: &'static str,
    size: usize,
    count: usize,
}

struct Timing {
    closed_secs: f64,
    synced_secs: f64,
    bytes: u64,
}

fn arg_value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> lockstep_bag::Error + '_ {
    move |source| lockstep_bag::Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// 4 MiB of bytes with 4 bits of entropy each (xorshift, low nibble): compressible about 2:1.
fn default_pool() -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..4 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8 & 0x0F
        })
        .collect()
}

/// fsyncs every file of `dir` and the directory itself; returns the bytes of the files.
fn sync_dir(dir: &Path) -> Result<u64, lockstep_bag::Error> {
    let mut bytes = 0;
    for entry in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let path = entry.map_err(io_err(dir))?.path();
        let file = File::open(&path).map_err(io_err(&path))?;
        file.sync_all().map_err(io_err(&path))?;
        bytes += file.metadata().map_err(io_err(&path))?.len();
    }
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_err(dir))?;
    Ok(bytes)
}

fn run(
    dir: &Path,
    case: &Case,
    pool: &[u8],
    compression: ChunkCompression,
    compression_threads: u32,
) -> Result<Timing, lockstep_bag::Error> {
    let bag = dir.join(format!("lockstep_{}", case.name));
    if bag.exists() {
        std::fs::remove_dir_all(&bag).map_err(io_err(&bag))?;
    }
    let opts = WriterOptions {
        compression,
        compression_level: 0,
        compression_threads,
        chunk_size_bytes: CHUNK_SIZE_BYTES,
        chunk_crcs: false,
        ..WriterOptions::default()
    };
    let span = pool.len() - case.size + 1;
    let started = Instant::now();
    let mut writer = BagWriter::create(&bag, opts)?;
    let topic = writer.add_topic(
        TopicSpec::new("/bench", "std_msgs/msg/UInt8MultiArray").with_definition(MessageDefinition {
            encoding: "ros2msg".into(),
            text: "uint8[] data\n".into(),
        }),
    )?;
    for i in 0..case.count {
        let t = 1_000_000_000 + i as u64 * 1_000;
        let offset = (i * case.size) % span;
        writer.write_id(topic, t, t, &pool[offset..offset + case.size])?;
    }
    writer.finish()?;
    let closed_secs = started.elapsed().as_secs_f64();
    let bytes = sync_dir(&bag)?;
    let synced_secs = started.elapsed().as_secs_f64();
    std::fs::remove_dir_all(&bag).map_err(io_err(&bag))?;
    Ok(Timing {
        closed_secs,
        synced_secs,
        bytes,
    })
}

/// Best of `runs` timings of `f` (seconds).
fn best_of(runs: usize, mut f: impl FnMut() -> f64) -> f64 {
    (0..runs.max(1)).map(|_| f()).fold(f64::INFINITY, f64::min)
}

/// The slices the writer benchmark writes for a case, in order.
fn slices<'a>(pool: &'a [u8], case: &Case) -> impl Iterator<Item = &'a [u8]> + 'a {
    let (size, span) = (case.size, pool.len() - case.size + 1);
    (0..case.count).map(move |i| &pool[(i * size) % span..(i * size) % span + size])
}

/// The case's bytes cut into 1 MiB chunks, as the writers' chunks hold them.
fn chunks(pool: &[u8], case: &Case) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::with_capacity(CHUNK_SIZE_BYTES as usize)];
    for m in slices(pool, case) {
        if out
            .last()
            .is_some_and(|c| c.len() + m.len() > CHUNK_SIZE_BYTES as usize && !c.is_empty())
        {
            out.push(Vec::with_capacity(CHUNK_SIZE_BYTES as usize));
        }
        if let Some(c) = out.last_mut() {
            c.extend_from_slice(m);
        }
    }
    out
}

fn zstd_secs(chunks: &[Vec<u8>], threads: usize) -> f64 {
    let started = Instant::now();
    std::thread::scope(|scope| {
        for part in chunks.chunks(chunks.len().div_ceil(threads.max(1)).max(1)) {
            scope.spawn(move || {
                let mut compressor = zstd::bulk::Compressor::new(3).ok();
                for c in part {
                    if let Some(z) = compressor.as_mut() {
                        std::hint::black_box(z.compress(c).ok());
                    }
                }
            });
        }
    });
    started.elapsed().as_secs_f64()
}

/// The machine's ceilings for one case, as JSON lines like the writers' (closed = synced where no disk is
/// involved).
fn limits(dir: &Path, case: &Case, pool: &[u8], runs: usize) -> Result<(), lockstep_bag::Error> {
    let line = |what: &str, compression: &str, closed: f64, synced: f64, bytes: usize| {
        println!(
            "{{\"impl\":\"limit: {what}\",\"compression\":\"{compression}\",\"case\":\"{}\",\"size\":{},\"count\":{},\"closed_s\":{closed:.6},\"synced_s\":{synced:.6},\"bytes\":{bytes}}}",
            case.name, case.size, case.count
        );
    };
    let total = case.count * case.size;
    let mut buffer = vec![0u8; CHUNK_SIZE_BYTES as usize + case.size];
    let copy = best_of(runs, || {
        let started = Instant::now();
        let mut at = 0;
        for m in slices(pool, case) {
            if at + m.len() > buffer.len() {
                at = 0;
            }
            buffer[at..at + m.len()].copy_from_slice(m);
            at += m.len();
        }
        std::hint::black_box(&buffer);
        started.elapsed().as_secs_f64()
    });
    line("memcpy", "none", copy, copy, total);
    let chunks = chunks(pool, case);
    let path = dir.join("limit_write.bin");
    let (mut closed, mut synced) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..runs.max(1) {
        use std::io::Write as _;
        let started = Instant::now();
        let mut file = File::create(&path).map_err(io_err(&path))?;
        for c in &chunks {
            file.write_all(c).map_err(io_err(&path))?;
        }
        closed = closed.min(started.elapsed().as_secs_f64());
        file.sync_all().map_err(io_err(&path))?;
        synced = synced.min(started.elapsed().as_secs_f64());
        std::fs::remove_file(&path).map_err(io_err(&path))?;
    }
    line("file write", "none", closed, synced, total);
    let one = best_of(runs, || zstd_secs(&chunks, 1));
    line("zstd alone, 1 thread", "zstd", one, one, total);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let all = best_of(runs, || zstd_secs(&chunks, cores));
    line(&format!("zstd alone, {cores} threads"), "zstd", all, all, total);
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    let dir = arg_value(&args, "--dir")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let number = |flag: &str, default: usize| {
        arg_value(&args, flag)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (small, medium, large, runs) = (
        number("--small", 200_000),
        number("--medium", 4_000),
        number("--large", 500),
        number("--runs", 3),
    );
    let threads = number("--zstd-threads", 0) as u32;
    let name = if threads == 0 {
        "lockstep_bag".to_string()
    } else {
        format!(
            "lockstep_bag ({threads} zstd worker{})",
            if threads > 1 { "s" } else { "" }
        )
    };
    let compressions: Vec<(&str, ChunkCompression)> = match arg_value(&args, "--compression").as_deref() {
        Some("none") => vec![("none", ChunkCompression::None)],
        Some("zstd") => vec![("zstd", ChunkCompression::Zstd)],
        _ => vec![("none", ChunkCompression::None), ("zstd", ChunkCompression::Zstd)],
    };
    let pool = match arg_value(&args, "--pool") {
        Some(path) => std::fs::read(&path).unwrap_or_else(|e| {
            eprintln!("cannot read the payload pool {path}: {e}");
            std::process::exit(2)
        }),
        None => default_pool(),
    };
    let cases = [
        Case {
            name: "256B",
            size: 256,
            count: small,
        },
        Case {
            name: "64KiB",
            size: 64 << 10,
            count: medium,
        },
        Case {
            name: "1MiB",
            size: 1 << 20,
            count: large,
        },
    ];
    if cases.iter().any(|c| c.size > pool.len()) {
        eprintln!(
            "the payload pool ({} bytes) is smaller than a message",
            pool.len()
        );
        std::process::exit(2);
    }
    if args.iter().any(|a| a == "--limits") {
        for case in &cases {
            if let Err(e) = limits(&dir, case, &pool, runs) {
                eprintln!("limits of case {} failed: {e}", case.name);
                std::process::exit(1);
            }
        }
        return;
    }
    if !json {
        println!(
            "{:<5} {:<6} {:>8} {:>12} {:>9} {:>12} {:>9} {:>12}",
            "zstd", "size", "count", "closed msg/s", "MB/s", "synced msg/s", "MB/s", "file bytes"
        );
    }
    for (compression_name, compression) in &compressions {
        for case in &cases {
            let mut best = Timing {
                closed_secs: f64::INFINITY,
                synced_secs: f64::INFINITY,
                bytes: 0,
            };
            for _ in 0..runs.max(1) {
                match run(&dir, case, &pool, *compression, threads) {
                    Ok(t) => {
                        best.closed_secs = best.closed_secs.min(t.closed_secs);
                        best.synced_secs = best.synced_secs.min(t.synced_secs);
                        best.bytes = t.bytes;
                    }
                    Err(e) => {
                        eprintln!("bench case {} failed: {e}", case.name);
                        std::process::exit(1);
                    }
                }
            }
            let mb = (case.count * case.size) as f64 / 1e6;
            let rates = |secs: f64| (case.count as f64 / secs, mb / secs);
            let (closed_msgs, closed_mbs) = rates(best.closed_secs);
            let (synced_msgs, synced_mbs) = rates(best.synced_secs);
            if json {
                println!(
                    "{{\"impl\":\"{name}\",\"compression\":\"{compression_name}\",\"case\":\"{}\",\"size\":{},\"count\":{},\"closed_s\":{:.6},\"synced_s\":{:.6},\"bytes\":{}}}",
                    case.name, case.size, case.count, best.closed_secs, best.synced_secs, best.bytes
                );
            } else {
                println!(
                    "{compression_name:<5} {:<6} {:>8} {closed_msgs:>12.0} {closed_mbs:>9.1} {synced_msgs:>12.0} {synced_mbs:>9.1} {:>12}",
                    case.name, case.count, best.bytes
                );
            }
        }
    }
}
