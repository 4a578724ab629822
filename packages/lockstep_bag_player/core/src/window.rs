//! Which part of the bag plays: `--start-offset`, `--playback-duration`, `--playback-until-timestamp`.

use crate::error::{option, Result};

/// Bag times (ns) from `start_ns` to `end_ns`, both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Window {
    /// The window of a bag whose messages span `bag_start_ns..=bag_end_ns`:
    /// - starts `start_offset_secs` (>= 0) after the bag's first message;
    /// - ends at the bag's last message, or earlier: `playback_duration_secs` after the start (<= 0: no
    ///   limit, as in rosbag2 where -1 means unlimited), and at `playback_until_ns` (0: no limit).
    pub fn new(
        bag_start_ns: u64,
        bag_end_ns: u64,
        start_offset_secs: f64,
        playback_duration_secs: f64,
        playback_until_ns: u64,
    ) -> Result<Self> {
        if !(start_offset_secs.is_finite() && start_offset_secs >= 0.0) {
            return Err(option(
                "start-offset",
                format!("{start_offset_secs} is not a non-negative number of seconds"),
            ));
        }
        if playback_duration_secs.is_nan() {
            return Err(option("playback-duration", "NaN is not a number of seconds"));
        }
        let start_ns = bag_start_ns.saturating_add(secs_to_ns(start_offset_secs));
        if start_ns > bag_end_ns {
            return Err(option(
                "start-offset",
                format!(
                    "{start_offset_secs} s is past the bag's last message ({:.3} s after its first)",
                    (bag_end_ns - bag_start_ns) as f64 / 1e9
                ),
            ));
        }
        let mut end_ns = bag_end_ns;
        if playback_duration_secs > 0.0 && playback_duration_secs.is_finite() {
            end_ns = end_ns.min(start_ns.saturating_add(secs_to_ns(playback_duration_secs)));
        }
        if playback_until_ns > 0 {
            if playback_until_ns < start_ns {
                return Err(option(
                    "playback-until-timestamp",
                    format!(
                        "{:.9} is before the start of playback ({:.9}): nothing would play",
                        playback_until_ns as f64 / 1e9,
                        start_ns as f64 / 1e9
                    ),
                ));
            }
            end_ns = end_ns.min(playback_until_ns);
        }
        Ok(Self { start_ns, end_ns })
    }

    pub fn contains(&self, t_ns: u64) -> bool {
        (self.start_ns..=self.end_ns).contains(&t_ns)
    }
}

fn secs_to_ns(secs: f64) -> u64 {
    (secs * 1e9).round().min(u64::MAX as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn the_whole_bag_by_default() {
        let w = Window::new(10 * S, 20 * S, 0.0, -1.0, 0).unwrap();
        assert_eq!((w.start_ns, w.end_ns), (10 * S, 20 * S));
        assert!(w.contains(10 * S) && w.contains(20 * S) && !w.contains(20 * S + 1));
    }

    #[test]
    fn offset_duration_and_until_narrow_it() {
        let w = Window::new(10 * S, 20 * S, 2.5, 3.0, 0).unwrap();
        assert_eq!((w.start_ns, w.end_ns), (12 * S + S / 2, 15 * S + S / 2));
        let w = Window::new(10 * S, 20 * S, 1.0, 100.0, 14 * S).unwrap();
        assert_eq!((w.start_ns, w.end_ns), (11 * S, 14 * S));
    }

    #[test]
    fn impossible_windows_are_refused_with_the_option_named() {
        let past = Window::new(10 * S, 20 * S, 11.0, -1.0, 0)
            .unwrap_err()
            .to_string();
        assert!(past.starts_with("option `start-offset`: 11 s is past"), "{past}");
        let negative = Window::new(10 * S, 20 * S, -1.0, -1.0, 0)
            .unwrap_err()
            .to_string();
        assert!(negative.contains("start-offset"), "{negative}");
        let until = Window::new(10 * S, 20 * S, 5.0, -1.0, 12 * S)
            .unwrap_err()
            .to_string();
        assert!(
            until.contains("playback-until-timestamp") && until.contains("nothing would play"),
            "{until}"
        );
    }
}
