//! `lockstep bag play <bag> [options]`: the player node, run in this process, with `ros2 bag play`'s flags
//! and a progress line on a terminal (played / total, bag time, rate).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use lockstep_bag_player::progress_message;

use crate::config::PlayerParams;
use crate::player::Started;

/// Play a bag: publish its messages with their recorded timing and QoS, like `ros2 bag play`.
#[derive(Args, Debug, Clone)]
pub struct PlayArgs {
    /// Bag directory, or a single MCAP or sqlite3 file.
    pub bag: PathBuf,
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
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
}

impl PlayArgs {
    /// The node's parameters from the flags (the CLI exits at the end, like `ros2 bag play`).
    pub fn params(&self) -> PlayerParams {
        PlayerParams {
            bag: self.bag.display().to_string(),
            rate: self.rate,
            start_paused: self.start_paused,
            start_offset: self.start_offset,
            playback_duration: self.playback_duration,
            playback_until_timestamp: self.playback_until_timestamp,
            topics: self.topics.join(","),
            regex: self.regex.clone(),
            exclude_regex: self.exclude_regex.clone(),
            remap: self.remap.join(","),
            clock: self.clock,
            delay: self.delay,
            read_ahead_queue_size: self.read_ahead_queue_size,
            qos_profile_overrides_path: self
                .qos_profile_overrides_path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            wait_for_all_acked: self.wait_for_all_acked,
            wait_for_subscribers: self.wait_for_subscribers,
            exit_at_end: true,
        }
    }
}

/// Run `lockstep bag play`.
pub fn run(args: PlayArgs) -> anyhow::Result<()> {
    let done = Arc::new(AtomicBool::new(false));
    let show = !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let progress_done = done.clone();
    let on_start: Box<dyn FnOnce(&Started) + Send> = Box::new(move |started: &Started| {
        if show {
            let control = started.control.clone();
            let total = started.total;
            std::thread::spawn(move || progress(&control, total, &progress_done));
        }
    });
    let outcome = crate::player::run(args.params(), args.r#loop, Some(on_start));
    done.store(true, Ordering::SeqCst);
    outcome
}

fn progress(control: &crate::control::Control, total: u64, done: &AtomicBool) {
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} messages  {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    while !done.load(Ordering::SeqCst) {
        let (played, _) = control.progress();
        let bag_ns = control.bag_now();
        bar.set_position(played);
        bar.set_message(progress_message(bag_ns, control.rate(), control.is_paused()));
        std::thread::sleep(Duration::from_millis(100));
    }
    bar.finish();
}
