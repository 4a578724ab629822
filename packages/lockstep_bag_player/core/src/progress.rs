//! `lockstep bag play`'s progress line on a terminal: where the play is (bag time, percent of the window),
//! its rate and whether it is paused; and how often it is redrawn (rosbag2's `--progress-bar-update-rate`).

use std::time::Duration;

/// What the progress line shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressState {
    /// Bag time now, and the window being played (ns since 1970).
    pub bag_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub rate: f64,
    pub paused: bool,
    /// Messages published in this play, and how many the played topics hold.
    pub played: u64,
    pub total: u64,
}

/// When the line is redrawn, from `--progress-bar-update-rate` as rosbag2 reads it: `hz` > 0 times a second,
/// 0 never (no line), < 0 on every change (each message published, a pause, a rate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Redraw {
    Never,
    OnChange,
    Every(Duration),
}

impl Redraw {
    pub fn from_rate(hz: i64) -> Self {
        match hz {
            0 => Self::Never,
            h if h < 0 => Self::OnChange,
            h => Self::Every(Duration::from_secs_f64(1.0 / h as f64)),
        }
    }
}

/// How far bag time `bag_ns` is through the window, in percent (0 to 100).
pub fn percent(bag_ns: u64, start_ns: u64, end_ns: u64) -> f64 {
    if end_ns <= start_ns {
        return if bag_ns >= end_ns { 100.0 } else { 0.0 };
    }
    let done = bag_ns.saturating_sub(start_ns) as f64 / (end_ns - start_ns) as f64;
    (done * 100.0).clamp(0.0, 100.0)
}

/// A rate with at most six decimals and no trailing zeros (`1.1`, `1.331`, `2`, `0.0022`).
pub fn rate_text(rate: f64) -> String {
    let text = format!("{rate:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The line: a ten-cell bar, the percent, the bag time in seconds with milliseconds, the rate, `paused`
/// while paused, and the messages played. Short enough for an 80-column terminal.
pub fn progress_line(s: &ProgressState) -> String {
    let pct = percent(s.bag_ns, s.start_ns, s.end_ns);
    let filled = ((pct / 10.0).floor() as usize).min(10);
    format!(
        "[{}{}] {pct:5.1} %  bag time {}.{:03} s  rate {}{}  {}/{} msgs",
        "#".repeat(filled),
        "-".repeat(10 - filled),
        s.bag_ns / 1_000_000_000,
        (s.bag_ns / 1_000_000) % 1000,
        rate_text(s.rate),
        if s.paused { "  paused" } else { "" },
        s.played,
        s.total,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(bag_ns: u64, rate: f64, paused: bool) -> ProgressState {
        ProgressState {
            bag_ns,
            start_ns: 10_000_000_000,
            end_ns: 20_000_000_000,
            rate,
            paused,
            played: 3,
            total: 40,
        }
    }

    #[test]
    fn the_line_shows_bag_time_percent_rate_and_pause() {
        assert_eq!(
            progress_line(&state(12_034_999_999, 2.0, false)),
            "[##--------]  20.3 %  bag time 12.034 s  rate 2  3/40 msgs"
        );
        assert_eq!(
            progress_line(&state(25_000_000_000, 1.1 * 1.1, true)),
            "[##########] 100.0 %  bag time 25.000 s  rate 1.21  paused  3/40 msgs"
        );
        assert_eq!(rate_text(0.002 * 1.1), "0.0022");
        assert_eq!(percent(5, 7, 7), 0.0);
        assert_eq!(percent(7, 7, 7), 100.0);
    }

    #[test]
    fn the_update_rate_reads_as_rosbag2_reads_it() {
        assert_eq!(Redraw::from_rate(0), Redraw::Never);
        assert_eq!(Redraw::from_rate(-1), Redraw::OnChange);
        assert_eq!(Redraw::from_rate(4), Redraw::Every(Duration::from_millis(250)));
    }
}
