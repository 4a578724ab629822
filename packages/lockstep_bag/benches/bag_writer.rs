//! Writer throughput: messages/s and MB/s for small (256 B) and large (1 MiB) messages.
//!
//! `cargo bench -p lockstep_bag --bench bag_writer [-- --json] [--dir DIR] [--small N] [--large N]`
//! Each case writes a fresh bag (uncompressed MCAP, rosbag2 defaults) and includes `finish()`, i.e.
//! the summary, footer and metadata.yaml. Best of three runs is reported.
//! `scripts/bench/bag_writer.sh` runs this beside the Python `mcap` and `rosbags` writers.

use lockstep_bag::{BagWriter, MessageDefinition, TopicSpec, WriterOptions};
use std::path::PathBuf;
use std::time::Instant;

struct Case {
    name: &'static str,
    size: usize,
    count: usize,
}

fn arg_value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn run(dir: &std::path::Path, case: &Case, payload: &[u8]) -> Result<f64, lockstep_bag::Error> {
    let bag = dir.join(format!("lockstep_{}", case.name));
    if bag.exists() {
        std::fs::remove_dir_all(&bag).map_err(|e| lockstep_bag::Error::Io {
            path: bag.clone(),
            source: e,
        })?;
    }
    let started = Instant::now();
    let mut writer = BagWriter::create(&bag, WriterOptions::default())?;
    let topic = writer.add_topic(
        TopicSpec::new("/bench", "std_msgs/msg/UInt8MultiArray").with_definition(MessageDefinition {
            encoding: "ros2msg".into(),
            text: "uint8[] data\n".into(),
        }),
    )?;
    for i in 0..case.count {
        let t = 1_000_000_000 + i as u64 * 1_000;
        writer.write_id(topic, t, t, payload)?;
    }
    writer.finish()?;
    let secs = started.elapsed().as_secs_f64();
    std::fs::remove_dir_all(&bag).map_err(|e| lockstep_bag::Error::Io {
        path: bag.clone(),
        source: e,
    })?;
    Ok(secs)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    let dir = arg_value(&args, "--dir")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let small = arg_value(&args, "--small")
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let large = arg_value(&args, "--large")
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let cases = [
        Case {
            name: "256B",
            size: 256,
            count: small,
        },
        Case {
            name: "1MiB",
            size: 1 << 20,
            count: large,
        },
    ];
    if !json {
        println!(
            "{:<6} {:>8} {:>10} {:>14} {:>10}",
            "size", "count", "seconds", "msgs/s", "MB/s"
        );
    }
    for case in &cases {
        // Varied bytes so nothing gets a free ride from repeated content.
        let payload: Vec<u8> = (0..case.size)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
            .collect();
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            match run(&dir, case, &payload) {
                Ok(secs) => best = best.min(secs),
                Err(e) => {
                    eprintln!("bench case {} failed: {e}", case.name);
                    std::process::exit(1);
                }
            }
        }
        let msgs = case.count as f64 / best;
        let mbs = (case.count * case.size) as f64 / best / 1e6;
        if json {
            println!(
                "{{\"impl\":\"lockstep_bag\",\"case\":\"{}\",\"size\":{},\"count\":{},\"seconds\":{best:.6},\"msgs_per_s\":{msgs:.1},\"mb_per_s\":{mbs:.1}}}",
                case.name, case.size, case.count
            );
        } else {
            println!(
                "{:<6} {:>8} {:>10.4} {:>14.0} {:>10.1}",
                case.name, case.count, best, msgs, mbs
            );
        }
    }
}
