//! The command-line arguments of `lockstep bag play` (feature `cli`), with `ros2 bag play`'s names, apart from
//! what they do (the node crate runs the player with them): here so that `lockstep bag play --help` works in a
//! shell without ROS.

use std::path::PathBuf;

use clap::Args;

/// The storage ids `-i URI STORAGE_ID` may name.
const STORAGE_IDS: &[&str] = &["mcap", "sqlite3"];

/// Play bags: publish their messages with their recorded timing and QoS, like `ros2 bag play`.
#[derive(Args, Debug, Clone)]
pub struct PlayArgs {
    /// Bag directory, or a single MCAP or sqlite3 file (more bags: -i).
    pub bag: Option<PathBuf>,
    /// A bag to play, with an optional storage id (`mcap`, `sqlite3`), as rosbag2's `-i uri [storage_id]`;
    /// give it once per bag. The bags play as one stream merged by time stamp, equal stamps in the order
    /// given (BAG first).
    #[arg(short = 'i', long = "input", num_args = 1..=2, value_names = ["URI", "STORAGE_ID"])]
    pub input: Vec<String>,
    /// Playback rate (2.0: twice as fast as recorded).
    #[arg(short, long, default_value_t = 1.0)]
    pub rate: f64,
    /// Start paused (call ~/resume, ~/play_next or ~/burst on /lockstep_bag_player).
    #[arg(long)]
    pub start_paused: bool,
    /// Seconds after the bag's first message to start from.
    #[arg(long, default_value_t = 0.0)]
    pub start_offset: f64,
    /// Seconds of bag time to play (negative: to the end).
    #[arg(long, default_value_t = -1.0, allow_negative_numbers = true)]
    pub playback_duration: f64,
    /// Stop after this bag time (seconds since the epoch).
    #[arg(long, default_value_t = 0.0)]
    pub playback_until_timestamp: f64,
    /// Play again from the start at the end, until interrupted.
    #[arg(short, long)]
    pub r#loop: bool,
    /// Topics to play (default: all).
    #[arg(long, num_args = 1..)]
    pub topics: Vec<String>,
    /// Also play topics matching this regular expression.
    #[arg(short = 'e', long, default_value = "")]
    pub regex: String,
    /// Do not play topics matching this regular expression.
    #[arg(short = 'x', long, default_value = "")]
    pub exclude_regex: String,
    /// Remapping rules `from:=to`.
    #[arg(short = 'm', long, num_args = 1..)]
    pub remap: Vec<String>,
    /// Publish /clock at this frequency (Hz).
    #[arg(long, default_value_t = 0.0)]
    pub clock: f64,
    /// Publish /clock with the time stamp of each message of these topics (bag names) just before it is
    /// played, instead of at a frequency.
    #[arg(long, num_args = 1.., conflicts_with_all = ["clock", "clock_topics_all"])]
    pub clock_topics: Vec<String>,
    /// Publish /clock with each message's time stamp just before it is played.
    #[arg(long, conflicts_with = "clock")]
    pub clock_topics_all: bool,
    /// The time stamp that orders and times the messages: `received` (log time) or `sent` (publish time
    /// where the bag stores one, else log time).
    #[arg(long, default_value = "received", value_parser = ["received", "sent"])]
    pub message_order: String,
    /// Seconds to wait before the first message.
    #[arg(short, long, default_value_t = 0.0)]
    pub delay: f64,
    /// Messages read ahead of playback.
    #[arg(long, default_value_t = 1000)]
    pub read_ahead_queue_size: i64,
    /// A rosbag2 QoS override file (YAML).
    #[arg(long)]
    pub qos_profile_overrides_path: Option<PathBuf>,
    /// At the end, wait at most this many ms for every reliable subscriber to acknowledge every message
    /// (0: do not wait).
    #[arg(long, default_value_t = 1000)]
    pub wait_for_all_acked: i64,
    /// Before the first message, wait until every played topic has this many matched subscriptions.
    #[arg(long, default_value_t = 0)]
    pub wait_for_subscribers: i64,
    /// No progress line, no keyboard help.
    #[arg(long)]
    pub quiet: bool,
    /// No keyboard controls (otherwise, when stdin is a terminal: space pauses and resumes, the right arrow
    /// plays the next message while paused, the up and down arrows change the rate by 10 %).
    #[arg(long)]
    pub disable_keyboard_controls: bool,
    /// Redraw the progress line (on a terminal) this many times a second; 0: no progress line; negative: on
    /// every change (each message, pause, rate).
    #[arg(long, default_value_t = 3, allow_negative_numbers = true,
          value_parser = lockstep_ranges::int_arg::<i64>(lockstep_ranges::Int::closed(-1_000_000, 1000, "Hz")))]
    pub progress_bar_update_rate: i64,
    /// Send the requests recorded in services' introspection events (`<service>/_service_event`) to the live
    /// servers instead of publishing the events.
    #[arg(long)]
    pub publish_service_requests: bool,
    /// Whose recorded events hold the requests to send: the servers' (`service_introspection`) or the
    /// clients' (`client_introspection`).
    #[arg(long, default_value = "service_introspection",
          value_parser = ["service_introspection", "client_introspection"])]
    pub service_requests_source: String,
    /// Send the recorded goal, cancel and result requests of actions (their services' introspection events,
    /// as rosbag2 Kilted records them) to the live action servers instead of publishing the events.
    #[arg(long)]
    pub send_actions_as_client: bool,
}

impl PlayArgs {
    /// The bags: BAG, then each `-i` in order. A value of `-i` that is a storage id (`mcap`, `sqlite3`) and
    /// no file is the storage id of the bag before it, as in rosbag2's `-i uri [storage_id]` (the storage is
    /// found from the bag either way). With several bags, no path may hold a comma (the parameter `bag`
    /// separates them with commas).
    pub fn bags(&self) -> Result<Vec<String>, String> {
        let mut bags: Vec<String> = self.bag.iter().map(|b| b.display().to_string()).collect();
        let inputs = bags.len();
        for value in &self.input {
            let storage_id = STORAGE_IDS.contains(&value.as_str()) && !std::path::Path::new(value).exists();
            if !(storage_id && bags.len() > inputs) {
                bags.push(value.clone());
            }
        }
        if bags.is_empty() {
            return Err("no bag given: `lockstep bag play BAG`, or `-i BAG` once per bag".into());
        }
        if bags.len() > 1 {
            if let Some(odd) = bags.iter().find(|b| b.contains(',')) {
                return Err(format!(
                    "bag `{odd}`: a path with a comma can only be played alone"
                ));
            }
        }
        Ok(bags)
    }
}
