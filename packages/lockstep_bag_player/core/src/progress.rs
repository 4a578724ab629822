//! The text of `lockstep bag play`'s progress line beside its bar (played / total is the bar's own).

/// The bag time in seconds with milliseconds, the rate, and `PAUSED` while paused.
pub fn progress_message(bag_ns: u64, rate: f64, paused: bool) -> String {
    format!(
        "bag time {}.{:03} s  rate {rate}{}",
        bag_ns / 1_000_000_000,
        (bag_ns / 1_000_000) % 1000,
        if paused { "  PAUSED" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bag_time_shows_milliseconds_padded_and_pause_is_marked() {
        assert_eq!(
            progress_message(12_034_999_999, 2.0, false),
            "bag time 12.034 s  rate 2"
        );
        assert_eq!(
            progress_message(5_000_000, 0.5, true),
            "bag time 0.005 s  rate 0.5  PAUSED"
        );
    }
}
