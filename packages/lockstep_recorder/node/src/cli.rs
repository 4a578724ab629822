//! `lockstep bag record`: the recorder node in this process, with `ros2 bag record`'s flag names, a live
//! status line on the terminal and a one-line summary when Ctrl-C ends the bag.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use r2r::lockstep_interfaces::msg::RecorderStatus;

use lockstep_ranges::{int_arg, real_arg, real_arg_or_zero, Int, Real};

use crate::RecorderParams;

/// A file of the bag: 0 (never split), or up to 1 PiB.
const SPLIT_SIZE_BYTES: Int = Int::closed(0, 1 << 50, "bytes (0: never split)");
/// A file's span of messages: 1 ms to about 115 days.
const SPLIT_DURATION_S: Real = Real::closed(0.001, 1e7, "s");
/// Received messages waiting for the disk: up to 1 TiB.
const CACHE_BYTES: Int = Int::closed(1, 1 << 40, "bytes");
/// Looks at the graph: at most 100 a second, at least one a minute.
const POLLING_S: Real = Real::closed(0.01, 60.0, "s");

/// Record topics into a bag, like `ros2 bag record`: every message type installed on the machine, with the
/// dependency headers of traced nodes and the module topology. Ctrl-C finishes the bag. The recorder node
/// runs in this process, with its services (pause, resume, split_bagfile, is_paused, get_topology) and its
/// ~/status topic.
#[derive(clap::Args, Debug, Clone)]
#[command(group(
    clap::ArgGroup::new("what").required(true).multiple(true).args(["topics", "all", "regex"])
))]
pub struct RecordArgs {
    /// Topics to record (absolute or relative names).
    pub topics: Vec<String>,
    /// Record every topic (minus --exclude-regex).
    #[arg(short = 'a', long = "all", visible_alias = "all-topics")]
    pub all: bool,
    /// Also record the topics whose name matches this regular expression.
    #[arg(short = 'e', long, value_name = "REGEX")]
    pub regex: Option<String>,
    /// Do not record the topics matching this regular expression (topics named on the command line are
    /// still recorded).
    #[arg(short = 'x', long, value_name = "REGEX")]
    pub exclude_regex: Option<String>,
    /// Bag directory to create; it must not exist yet. Default: rosbag2_<UTC date-time>.
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Start a new file in the bag when the current one would exceed this many bytes (0: never).
    #[arg(short = 'b', long, value_name = "BYTES", default_value_t = 0,
          value_parser = int_arg::<u64>(SPLIT_SIZE_BYTES))]
    pub max_bag_size: u64,
    /// Start a new file in the bag after this many seconds of messages (0: never).
    #[arg(short = 'd', long, value_name = "SECONDS", default_value_t = 0.0,
          value_parser = real_arg_or_zero(SPLIT_DURATION_S))]
    pub max_bag_duration: f64,
    /// Compress the bag's MCAP chunks (readable by rosbag2, `mcap` and `rosbags` as they are).
    #[arg(long, value_name = "FORMAT", value_parser = ["zstd"])]
    pub compression_format: Option<String>,
    /// Bytes of received messages that may wait for the disk; beyond it messages are dropped and counted.
    #[arg(long, value_name = "BYTES", default_value_t = 100 * 1024 * 1024,
          value_parser = int_arg::<u64>(CACHE_BYTES))]
    pub max_cache_size: u64,
    /// Start paused: nothing is written until the node's ~/resume service is called.
    #[arg(long)]
    pub start_paused: bool,
    /// Name of the recorder node (its services and ~/status live under it).
    #[arg(long, default_value = "lockstep_recorder")]
    pub node_name: String,
    /// Seconds between two looks at the ROS graph for new topics.
    #[arg(
        short = 'p',
        long = "polling-interval",
        value_name = "SECONDS",
        default_value_t = 0.1,
        value_parser = real_arg(POLLING_S)
    )]
    pub polling_interval: f64,
    /// No status line; only the summary at the end.
    #[arg(short, long)]
    pub quiet: bool,
}

/// The recorder's parameters for `args`, or what is wrong with them.
pub fn params(args: &RecordArgs, now_unix_secs: u64) -> anyhow::Result<RecorderParams> {
    let output = match &args.output {
        Some(dir) => dir.to_string_lossy().into_owned(),
        None => format!(
            "rosbag2_{}",
            lockstep_bag::utc::UtcTime::from_unix_secs(now_unix_secs).bag_name_stamp()
        ),
    };
    anyhow::ensure!(
        !std::path::Path::new(&output).exists(),
        "{output} exists already: the recorder writes a new bag directory (choose another with -o)"
    );
    let to_i64 = |v: u64, flag: &str| {
        i64::try_from(v).with_context(|| format!("{flag} {v} is larger than the recorder accepts"))
    };
    Ok(RecorderParams {
        output,
        all_topics: args.all,
        topics: args.topics.join(","),
        include_regex: args.regex.clone().unwrap_or_default(),
        exclude_regex: args.exclude_regex.clone().unwrap_or_default(),
        discovery_period_secs: args.polling_interval,
        compression: args.compression_format.clone().unwrap_or_else(|| "none".into()),
        max_bag_size_bytes: to_i64(args.max_bag_size, "--max-bag-size")?,
        max_bag_duration_secs: args.max_bag_duration,
        start_paused: args.start_paused,
        status_period_secs: 0.5,
        max_queue_bytes: to_i64(args.max_cache_size, "--max-cache-size")?,
        ..RecorderParams::default()
    })
}

/// `12 topics, 3400 messages, 1.2 MB, 0 dropped` (and `paused`, `error: ...` when so).
pub fn status_line(status: &RecorderStatus) -> String {
    let dropped: u64 = status
        .topics
        .iter()
        .map(|t| t.dropped_queue_full + t.dropped_after_error)
        .sum();
    let mut line = format!(
        "{} topics, {} messages, {:.1} MB, {} dropped",
        status.topics.len(),
        status.total_messages,
        status.total_bytes as f64 / 1e6,
        dropped
    );
    if status.paused {
        line.push_str(", paused");
    }
    if !status.skipped.is_empty() {
        line.push_str(&format!(
            ", {} skipped (type not installed)",
            status.skipped.len()
        ));
    }
    if !status.error.is_empty() {
        line.push_str(&format!(", error: {}", status.error));
    }
    line
}

/// Runs `lockstep bag record` until Ctrl-C (SIGINT) or SIGTERM, then finishes the bag and prints what it
/// holds. Fails when the recorder could not start or a write failed.
pub fn run(args: RecordArgs) -> anyhow::Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let params = params(&args, now)?;
    let output = params.output.clone();
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new_spinner()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} recording {prefix} {elapsed}  {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.set_prefix(output.clone());
    bar.enable_steady_tick(Duration::from_millis(200));
    let observer = {
        let bar = bar.clone();
        Box::new(move |status: &RecorderStatus| bar.set_message(status_line(status)))
    };
    let status = crate::run(&args.node_name, params, Some(observer));
    bar.finish_and_clear();
    let status = status.with_context(|| format!("recording into {output}"))?;
    println!("{output}: {}", status_line(&status));
    // The status's error is one line already: what failed, and what the bag holds.
    anyhow::ensure!(status.error.is_empty(), "{output}: {}", status.error);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: RecordArgs,
    }

    fn parse(line: &[&str]) -> Result<RecordArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("record").chain(line.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn rosbag2_flags_become_the_recorders_parameters() {
        let args = parse(&[
            "/odom",
            "cmd_vel",
            "-e",
            "^/scan",
            "-x",
            "_debug$",
            "-o",
            "/nonexistent/run1",
            "-b",
            "1000",
            "-d",
            "30",
            "--compression-format",
            "zstd",
            "--start-paused",
        ])
        .unwrap();
        let p = params(&args, 0).unwrap();
        assert_eq!(p.output, "/nonexistent/run1");
        assert!(!p.all_topics);
        assert_eq!(p.topics, "/odom,cmd_vel");
        assert_eq!(p.include_regex, "^/scan");
        assert_eq!(p.exclude_regex, "_debug$");
        assert_eq!(p.max_bag_size_bytes, 1000);
        assert_eq!(p.max_bag_duration_secs, 30.0);
        assert_eq!(p.compression, "zstd");
        assert!(p.start_paused);
    }

    #[test]
    fn the_default_bag_is_named_like_rosbag2s() {
        let args = parse(&["-a"]).unwrap();
        let p = params(&args, 1_795_600_000).unwrap();
        assert!(p.all_topics);
        assert_eq!(p.output, "rosbag2_2026_11_25-09_46_40");
        assert_eq!(p.compression, "none");
    }

    #[test]
    fn nothing_to_record_or_a_bad_value_is_refused() {
        let err = parse(&[]).unwrap_err();
        assert_eq!(
            err.kind(),
            clap::error::ErrorKind::MissingRequiredArgument,
            "{err}"
        );
        assert!(parse(&["-a", "--compression-format", "lz4"]).is_err());
        for (option, value) in [
            ("--max-bag-duration", "-1"),
            ("--max-bag-duration", "1e-300"),
            ("--polling-interval", "NaN"),
            ("--max-cache-size", "0"),
            ("--max-bag-size", "-5"),
        ] {
            let err = parse(&["-a", &format!("{option}={value}")])
                .unwrap_err()
                .to_string();
            assert!(err.contains(option), "{err}");
        }
        let here = std::env::temp_dir();
        let args = parse(&["-a", "-o", here.to_str().unwrap()]).unwrap();
        let err = params(&args, 0).unwrap_err().to_string();
        assert!(err.contains("exists already"), "{err}");
    }
}
