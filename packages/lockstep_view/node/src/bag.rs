//! `lockstep view --bag`: a bag instead of the live graph. `lockstep bag play` runs as a child process beside
//! the view with `/clock`, so the bag player's controls are the player's own services
//! (`/lockstep_bag_player/resume`, `pause`, `set_rate`, `seek`, `play_next`, ...), which the view offers to
//! Foxglove's Service Call panel like any service; the view offers only the bag's topics and `/clock`, and
//! stamps messages with `/clock` (the bag's time). The play starts paused unless asked to play at once, so a
//! user can connect and subscribe first.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::Context as _;
use lockstep_bag::BagReader;
pub use lockstep_view::BagOptions;

/// The player child process, stopped when dropped.
pub struct BagPlayer {
    child: Child,
}

impl Drop for BagPlayer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The bag's topics (to offer, with `/clock`), checked before anything starts.
pub fn topics(bag: &Path) -> anyhow::Result<Vec<String>> {
    let reader = BagReader::open(bag).with_context(|| format!("cannot open bag {}", bag.display()))?;
    let mut topics: Vec<String> = (reader.metadata().topics_with_message_count.iter())
        .map(|t| t.topic_metadata.name.clone())
        .collect();
    topics.push("/clock".into());
    topics.sort();
    topics.dedup();
    Ok(topics)
}

/// Starts `lockstep bag play` (this executable) on the bag.
pub fn start(options: &BagOptions) -> anyhow::Result<BagPlayer> {
    let args = options.play_args().map_err(anyhow::Error::msg)?;
    let exe = std::env::current_exe().context("cannot find the lockstep executable")?;
    let child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .spawn()
        .context("cannot start `lockstep bag play`")?;
    Ok(BagPlayer { child })
}
