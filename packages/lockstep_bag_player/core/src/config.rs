//! A play's options: as given (node parameters or `lockstep bag play` flags, [`PlayOptions`]) and checked
//! and converted to the units the player uses ([`PlayConfig`]). The numeric ranges are checked by the node's
//! parameter rules; here the checks those rules cannot say: a bag is given, and `/clock` is off or fast
//! enough for a timer.

use std::path::PathBuf;

/// The highest `/clock` frequency (Hz).
pub const MAX_CLOCK_HZ: f64 = 10_000.0;
/// The slowest `/clock` (one a quarter of an hour): below it the period does not fit a timer.
pub const MIN_CLOCK_HZ: f64 = 0.001;

/// The options as the node's parameters hold them (see the node's `PlayerParams` for each one's meaning).
#[derive(Debug, Clone, PartialEq)]
pub struct PlayOptions {
    pub bag: String,
    pub rate: f64,
    pub start_paused: bool,
    pub start_offset: f64,
    pub playback_duration: f64,
    pub playback_until_timestamp: f64,
    pub topics: String,
    pub regex: String,
    pub exclude_regex: String,
    pub remap: String,
    pub clock: f64,
    pub delay: f64,
    pub read_ahead_queue_size: i64,
    pub qos_profile_overrides_path: String,
    pub wait_for_all_acked: i64,
    pub wait_for_subscribers: i64,
    pub exit_at_end: bool,
}

/// A play's options, checked.
#[derive(Debug, Clone)]
pub struct PlayConfig {
    pub bag: PathBuf,
    pub rate: f64,
    pub start_paused: bool,
    pub start_offset_secs: f64,
    pub playback_duration_secs: f64,
    pub playback_until_ns: u64,
    pub looped: bool,
    pub topics: Vec<String>,
    pub regex: String,
    pub exclude_regex: String,
    pub remaps: Vec<String>,
    pub clock_hz: f64,
    pub delay_secs: f64,
    pub read_ahead_queue_size: usize,
    pub qos_overrides_path: Option<PathBuf>,
    pub wait_for_all_acked_ms: u64,
    pub wait_for_subscribers: usize,
    pub exit_at_end: bool,
}

impl PlayOptions {
    /// A bag must be given; the message says how.
    pub fn check_bag(&self) -> Result<(), String> {
        if self.bag.is_empty() {
            Err("parameter `bag`: no bag given (-p bag:=<directory or file>)".to_owned())
        } else {
            Ok(())
        }
    }

    /// Check what the parameter ranges cannot and convert; `looped` is the parameter `loop`. Errors name the
    /// parameter.
    pub fn config(&self, looped: bool) -> Result<PlayConfig, String> {
        self.check_bag()?;
        if !(self.clock == 0.0 || self.clock >= MIN_CLOCK_HZ) {
            return Err(format!(
                "parameter 'clock' = {}: must be 0 (no /clock) or in [{MIN_CLOCK_HZ}, {MAX_CLOCK_HZ}] Hz",
                lockstep_ranges::number(self.clock)
            ));
        }
        Ok(PlayConfig {
            bag: PathBuf::from(&self.bag),
            rate: self.rate,
            start_paused: self.start_paused,
            start_offset_secs: self.start_offset,
            playback_duration_secs: self.playback_duration,
            playback_until_ns: (self.playback_until_timestamp * 1e9).round() as u64,
            looped,
            topics: list(&self.topics),
            regex: self.regex.clone(),
            exclude_regex: self.exclude_regex.clone(),
            remaps: list(&self.remap),
            clock_hz: self.clock,
            delay_secs: self.delay,
            read_ahead_queue_size: usize::try_from(self.read_ahead_queue_size).unwrap_or(1),
            qos_overrides_path: (!self.qos_profile_overrides_path.is_empty())
                .then(|| PathBuf::from(&self.qos_profile_overrides_path)),
            wait_for_all_acked_ms: u64::try_from(self.wait_for_all_acked).unwrap_or(0),
            wait_for_subscribers: usize::try_from(self.wait_for_subscribers).unwrap_or(0),
            exit_at_end: self.exit_at_end,
        })
    }
}

/// A list parameter: items separated by commas or whitespace.
pub fn list(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> PlayOptions {
        PlayOptions {
            bag: "some.mcap".into(),
            rate: 1.0,
            start_paused: false,
            start_offset: 0.0,
            playback_duration: -1.0,
            playback_until_timestamp: 1.5,
            topics: "/a, /b /c".into(),
            regex: String::new(),
            exclude_regex: String::new(),
            remap: "/a:=/x".into(),
            clock: 0.0,
            delay: 0.0,
            read_ahead_queue_size: 1000,
            qos_profile_overrides_path: String::new(),
            wait_for_all_acked: 1000,
            wait_for_subscribers: 0,
            exit_at_end: false,
        }
    }

    #[test]
    fn lists_split_on_commas_and_spaces_and_times_become_ns() {
        let config = options().config(true).unwrap();
        assert_eq!(config.topics, ["/a", "/b", "/c"]);
        assert_eq!(config.remaps, ["/a:=/x"]);
        assert_eq!(config.playback_until_ns, 1_500_000_000);
        assert!(config.looped && config.qos_overrides_path.is_none());
    }

    #[test]
    fn no_bag_and_a_clock_too_slow_for_a_timer_are_refused() {
        let mut o = options();
        assert!(o.config(false).is_ok());
        o.clock = 100.0;
        assert!(o.config(false).is_ok());
        for hz in [1e-300, 5e-324] {
            o.clock = hz;
            let e = o.config(false).err().unwrap_or_default();
            assert!(e.contains("must be 0 (no /clock) or in [0.001, 10000] Hz"), "{e}");
        }
        o.bag.clear();
        assert!(o.config(false).err().is_some_and(|e| e.contains("no bag given")));
    }
}
