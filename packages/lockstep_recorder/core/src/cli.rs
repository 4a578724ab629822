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
    clap::ArgGroup::new("what").required(true).multiple(true).args([
        "topics", "topic_list", "all", "all_topics", "all_services", "all_actions", "services", "actions",
        "regex", "topic_types"
    ])
))]
pub struct RecordArgs {
    /// Topics to record (absolute or relative names).
    pub topics: Vec<String>,
    /// Topics to record, as a flag (the same as naming them before the flags).
    #[arg(long = "topics", value_name = "TOPIC", num_args = 1..)]
    pub topic_list: Vec<String>,
    /// Record every topic, service and action (minus the exclusions).
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Record every topic, not the services' and actions' topics (minus the exclusions).
    #[arg(long)]
    pub all_topics: bool,
    /// Record the introspection events of every service (`<service>/_service_event`: each request and response
    /// of the servers and clients that have service introspection on).
    #[arg(long)]
    pub all_services: bool,
    /// Record every action: its feedback and status topics, and its goal, result and cancel service events
    /// where its server or client publishes them (action introspection).
    #[arg(long)]
    pub all_actions: bool,
    /// Services whose introspection events to record.
    #[arg(long, value_name = "SERVICE", num_args = 1..)]
    pub services: Vec<String>,
    /// Actions to record.
    #[arg(long, value_name = "ACTION", num_args = 1..)]
    pub actions: Vec<String>,
    /// Also record the topics, services and actions whose name matches this regular expression.
    #[arg(short = 'e', long, value_name = "REGEX")]
    pub regex: Option<String>,
    /// Record the topics of these message types (`pkg/msg/Type`).
    #[arg(long, value_name = "TYPE", num_args = 1..)]
    pub topic_types: Vec<String>,
    /// Do not record the topics, services and actions whose name matches this regular expression (those named
    /// on the command line are still recorded).
    #[arg(short = 'x', long, value_name = "REGEX")]
    pub exclude_regex: Option<String>,
    /// Do not record these topics.
    #[arg(long, value_name = "TOPIC", num_args = 1..)]
    pub exclude_topics: Vec<String>,
    /// Do not record the topics of these message types (topics named on the command line are still recorded).
    #[arg(long, value_name = "TYPE", num_args = 1..)]
    pub exclude_topic_types: Vec<String>,
    /// Do not record these services' events.
    #[arg(long, value_name = "SERVICE", num_args = 1..)]
    pub exclude_services: Vec<String>,
    /// Do not record these actions.
    #[arg(long, value_name = "ACTION", num_args = 1..)]
    pub exclude_actions: Vec<String>,
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
    /// Bytes of received messages that may wait for the disk; beyond it messages are dropped and counted. In
    /// snapshot mode: the bytes of the last messages kept in memory for the next snapshot.
    #[arg(long, value_name = "BYTES", default_value_t = 100 * 1024 * 1024,
          value_parser = int_arg::<u64>(CACHE_BYTES))]
    pub max_cache_size: u64,
    /// Start paused: nothing is written until the node's ~/resume service is called.
    #[arg(long)]
    pub start_paused: bool,
    /// Stamp messages with the ROS clock (`/clock`) rather than the system time, as the node does with
    /// `use_sim_time:=true`: for recording a simulation or a bag played with --clock.
    #[arg(long)]
    pub use_sim_time: bool,
    /// Keep only the last --max-cache-size bytes of messages in memory, oldest whole messages leaving first,
    /// and write them when the recorder's ~/snapshot service (std_srvs/srv/Trigger) is called: the first
    /// snapshot into the bag's first file, each later one into a new file.
    #[arg(long)]
    pub snapshot_mode: bool,
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
        all_topics: args.all || args.all_topics,
        all_services: args.all || args.all_services,
        all_actions: args.all || args.all_actions,
        topics: args
            .topics
            .iter()
            .chain(&args.topic_list)
            .cloned()
            .collect::<Vec<_>>()
            .join(","),
        services: args.services.join(","),
        actions: args.actions.join(","),
        exclude_topics: args.exclude_topics.join(","),
        exclude_services: args.exclude_services.join(","),
        exclude_actions: args.exclude_actions.join(","),
        topic_types: args.topic_types.join(","),
        exclude_topic_types: args.exclude_topic_types.join(","),
        include_regex: args.regex.clone().unwrap_or_default(),
        exclude_regex: args.exclude_regex.clone().unwrap_or_default(),
        discovery_period_secs: args.polling_interval,
        compression: args.compression_format.clone().unwrap_or_else(|| "none".into()),
        max_bag_size_bytes: to_i64(args.max_bag_size, "--max-bag-size")?,
        max_bag_duration_secs: args.max_bag_duration,
        start_paused: args.start_paused,
        snapshot_mode: args.snapshot_mode,
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
        assert!(!p.all_topics && !p.all_services && !p.all_actions);
        assert_eq!(p.topics, "/odom,cmd_vel");
        assert_eq!(p.include_regex, "^/scan");
        assert_eq!(p.exclude_regex, "_debug$");
        assert_eq!(p.max_bag_size_bytes, 1000);
        assert_eq!(p.max_bag_duration_secs, 30.0);
        assert_eq!(p.compression, "zstd");
        assert!(p.start_paused);
    }

    #[test]
    fn services_actions_and_types_are_chosen_as_rosbag2_names_them() {
        let args = parse(&[
            "--all-services",
            "--topics",
            "/a",
            "b",
            "--actions",
            "/move",
            "--topic-types",
            "sensor_msgs/msg/Image",
            "--exclude-topics",
            "/c",
            "--exclude-services",
            "/d",
            "--exclude-actions",
            "/e",
            "--exclude-topic-types",
            "x/msg/Y",
        ])
        .unwrap();
        let p = settings(&args, 0).unwrap();
        assert!(!p.all_topics && p.all_services && !p.all_actions);
        assert_eq!(
            [&p.topics, &p.actions, &p.topic_types, &p.exclude_topics],
            ["/a,b", "/move", "sensor_msgs/msg/Image", "/c"]
        );
        assert_eq!(
            [&p.exclude_services, &p.exclude_actions, &p.exclude_topic_types],
            ["/d", "/e", "x/msg/Y"]
        );
        let topics_only = settings(&parse(&["--all-topics"]).unwrap(), 0).unwrap();
        assert!(topics_only.all_topics && !topics_only.all_services && !topics_only.all_actions);
    }

    #[test]
    fn the_default_bag_is_named_like_rosbag2s() {
        let args = parse(&["-a"]).unwrap();
        let p = settings(&args, 1_795_600_000).unwrap();
        assert!(p.all_topics && p.all_services && p.all_actions);
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
