//! The player's decisions that need no ROS: what the services answer (each refusal says why), the checks
//! of their request fields, when the next message is due, and the line logged at the end of each play. The
//! node only moves requests to the play thread and publishes.

use crate::{LatenessSummary, PlaybackClock, Window};

/// The answer of a request whose play thread has gone.
pub const PLAYER_STOPPED: &str = "the player stopped";
/// The refusal of `~/play_next`, `~/burst` and `~/seek` after a play ended.
pub const NO_PLAY_RUNNING: &str = "no play is running (call ~/play)";
/// The refusal of `~/play` while a play runs.
pub const PLAY_RUNNING: &str = "a play is running; ~/play starts one after the end";

/// A window for `~/play` (zeros: the node's configured window).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PlayRequest {
    pub start_offset_secs: f64,
    pub playback_duration_secs: f64,
    pub playback_until_ns: u64,
}

impl PlayRequest {
    /// From `~/play`'s fields: the start offset (ns, signed), the duration (seconds and nanoseconds) and the
    /// end stamp (ns since 1970; a time before 1970 means none).
    pub fn from_fields(
        start_offset_ns: i64,
        duration_sec: i32,
        duration_nanosec: u32,
        until_ns: i64,
    ) -> Self {
        Self {
            start_offset_secs: start_offset_ns as f64 / 1e9,
            playback_duration_secs: f64::from(duration_sec) + f64::from(duration_nanosec) / 1e9,
            playback_until_ns: u64::try_from(until_ns).unwrap_or(0),
        }
    }

    /// The part of the bag (`bag_start_ns` to `bag_end_ns`) this request plays: `configured` when every field
    /// is zero; an impossible window is refused saying why.
    pub fn window(&self, configured: Window, bag_start_ns: u64, bag_end_ns: u64) -> Result<Window, String> {
        if self.start_offset_secs == 0.0 && self.playback_duration_secs == 0.0 && self.playback_until_ns == 0
        {
            return Ok(configured);
        }
        Window::new(
            bag_start_ns,
            bag_end_ns,
            self.start_offset_secs,
            self.playback_duration_secs,
            self.playback_until_ns,
        )
        .map_err(|e| e.to_string())
    }
}

/// The refusal of `~/set_rate` for a rate the clock does not take.
pub fn rate_refusal(rate: f64) -> String {
    format!("rate {rate} refused: the rate must be a number > 0")
}

/// `~/seek`'s time as bag time (ns since 1970); a time before 1970 is refused.
pub fn seek_time(time_ns: i64) -> Result<u64, String> {
    u64::try_from(time_ns).map_err(|_| "a time before 1970 is outside any bag".to_owned())
}

/// Whether `~/seek` may go to `t_ns`: only inside the bag's messages.
pub fn check_seek(t_ns: u64, bag_start_ns: u64, bag_end_ns: u64) -> Result<(), String> {
    if (bag_start_ns..=bag_end_ns).contains(&t_ns) {
        Ok(())
    } else {
        Err(format!(
            "time {} is outside the bag (its messages span {} to {})",
            secs(t_ns),
            secs(bag_start_ns),
            secs(bag_end_ns)
        ))
    }
}

/// `~/play_next`: only while paused; `play_one` publishes the next message, `false` when none is left.
pub fn play_next(paused: bool, play_one: impl FnOnce() -> bool) -> Result<(), String> {
    if !paused {
        Err("play_next works only while paused (call ~/pause first)".to_owned())
    } else if play_one() {
        Ok(())
    } else {
        Err("no message left to play".to_owned())
    }
}

/// `~/burst` of `n` messages (0: all that are left): only while paused; `publish(n)` publishes and says how
/// many it could. The answer: how many, and a note when the bag ended first or why nothing was published.
pub fn burst(paused: bool, n: u64, publish: impl FnOnce(u64) -> u64) -> (u64, String) {
    if !paused {
        return (0, "burst works only while paused (call ~/pause first)".to_owned());
    }
    let count = publish(n);
    let note = if n != 0 && count < n {
        format!("the bag ended after {count} of {n} messages")
    } else {
        String::new()
    };
    (count, note)
}

/// When the message at bag time `log_time_ns` is due, at wall time `now_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Never while the clock stands (paused): wait for a change.
    Paused,
    /// In this many ns.
    In(u64),
    /// Now: it was due at this wall time.
    Now(u64),
}

/// When the message at `log_time_ns` is due on `clock`, at wall time `now_ns`.
pub fn due(clock: &PlaybackClock, log_time_ns: u64, now_ns: u64) -> Due {
    match clock.wall_at(log_time_ns) {
        None => Due::Paused,
        Some(due) if due > now_ns => Due::In(due - now_ns),
        Some(due) => Due::Now(due),
    }
}

/// The line logged at the end of a play: messages, wall time from first to last publish (`span`, wall ns),
/// rate, and the lateness of each publish against its schedule.
pub fn play_summary(played: u64, span: Option<(u64, u64)>, lateness: Option<LatenessSummary>) -> String {
    let span_secs = span.map_or(0.0, |(a, b)| (b - a) as f64 / 1e9);
    let rate = if span_secs > 0.0 {
        played as f64 / span_secs
    } else {
        0.0
    };
    let lateness = lateness.map_or(String::new(), |l| {
        format!(
            "; publish time - scheduled time over {} messages: p50 {:.1} us, p99 {:.1} us, max {:.1} us",
            l.count,
            l.p50_ns as f64 / 1e3,
            l.p99_ns as f64 / 1e3,
            l.max_ns as f64 / 1e3
        )
    });
    format!("playback ended: {played} messages in {span_secs:.3} s ({rate:.0} msg/s){lateness}")
}

/// `<seconds>.<nanoseconds> s`, exact.
fn secs(ns: u64) -> String {
    format!("{}.{:09} s", ns / 1_000_000_000, ns % 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn play_request_fields_convert_and_zeros_mean_the_configured_window() {
        let r = PlayRequest::from_fields(1_500_000_000, 2, 250_000_000, -5);
        assert_eq!(r.start_offset_secs, 1.5);
        assert_eq!(r.playback_duration_secs, 2.25);
        assert_eq!(r.playback_until_ns, 0);
        let configured = Window::new(0, 10_000_000_000, 1.0, 0.0, 0).unwrap();
        let zeros = PlayRequest::default();
        assert_eq!(zeros.window(configured, 0, 10_000_000_000), Ok(configured));
        let w = r.window(configured, 0, 10_000_000_000).unwrap();
        assert_eq!((w.start_ns, w.end_ns), (1_500_000_000, 3_750_000_000));
        let outside = PlayRequest::from_fields(20_000_000_000, 0, 0, 0);
        assert!(outside.window(configured, 0, 10_000_000_000).is_err());
    }

    #[test]
    fn seek_is_refused_outside_the_bag_and_before_1970() {
        assert_eq!(seek_time(5), Ok(5));
        assert!(seek_time(-1).is_err());
        assert_eq!(check_seek(2, 1, 3), Ok(()));
        assert_eq!(
            check_seek(4_000_000_001, 1, 3),
            Err(
                "time 4.000000001 s is outside the bag (its messages span 0.000000001 s to 0.000000003 s)"
                    .into()
            )
        );
    }

    #[test]
    fn play_next_and_burst_work_only_while_paused() {
        assert!(play_next(false, || unreachable!()).is_err());
        assert_eq!(play_next(true, || true), Ok(()));
        assert_eq!(play_next(true, || false), Err("no message left to play".into()));
        assert_eq!(burst(false, 3, |_| unreachable!()).0, 0);
        assert_eq!(burst(true, 3, |n| n), (3, String::new()));
        assert_eq!(burst(true, 0, |_| 7), (7, String::new()));
        assert_eq!(
            burst(true, 5, |_| 2),
            (2, "the bag ended after 2 of 5 messages".into())
        );
    }

    #[test]
    fn a_message_is_due_by_the_clock_and_never_while_paused() {
        let clock = PlaybackClock::new(100, 1_000, 1.0, false);
        assert_eq!(due(&clock, 150, 1_000), Due::In(50));
        assert_eq!(due(&clock, 150, 1_080), Due::Now(1_050));
        let paused = PlaybackClock::new(100, 1_000, 1.0, true);
        assert_eq!(due(&paused, 150, 1_000), Due::Paused);
    }

    #[test]
    fn the_play_summary_names_messages_time_rate_and_lateness() {
        assert_eq!(
            play_summary(0, None, None),
            "playback ended: 0 messages in 0.000 s (0 msg/s)"
        );
        let l = LatenessSummary {
            count: 4,
            p50_ns: 1_500,
            p99_ns: 20_000,
            max_ns: 30_000,
        };
        assert_eq!(
            play_summary(4, Some((0, 2_000_000_000)), Some(l)),
            "playback ended: 4 messages in 2.000 s (2 msg/s); publish time - scheduled time over 4 messages: \
             p50 1.5 us, p99 20.0 us, max 30.0 us"
        );
    }
}
