//! `lockstep bag record`'s flags (those of `ros2 bag record`) and the recorder settings they make. The node
//! crate runs the recorder with them.

use std::path::PathBuf;

use lockstep_ranges::{int_arg, real_arg, real_arg_or_zero, Int, Real};

use crate::config::Settings;
use crate::error::{Error, Result};

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

/// The recorder's settings for `args`, or what is wrong with them.
pub fn settings(args: &RecordArgs, now_unix_secs: u64) -> Result<Settings> {
    let output = match &args.output {
        Some(dir) => dir.to_string_lossy().into_owned(),
        None => format!(
            "rosbag2_{}",
            lockstep_bag::utc::UtcTime::from_unix_secs(now_unix_secs).bag_name_stamp()
        ),
    };
    if std::path::Path::new(&output).exists() {
        return Err(Error::OutputExists { output });
    }
    let to_i64 =
        |value: u64, flag: &'static str| i64::try_from(value).map_err(|_| Error::TooLarge { flag, value });
    Ok(Settings {
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
        ..Settings::default()
    })
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

    fn parse(line: &[&str]) -> std::result::Result<RecordArgs, clap::Error> {
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
        let p = settings(&args, 0).unwrap();
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
        let p = settings(&args, 1_795_600_000).unwrap();
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
        let err = settings(&args, 0).unwrap_err().to_string();
        assert!(err.contains("exists already"), "{err}");
    }
}
