//! Conversions between ROS `builtin_interfaces/Time` and plain numbers, written once for every node.
//!
//! A ROS `Time` is `sec: i32` plus `nanosec: u32` in `[0, 1e9)`, so a negative instant has a negative `sec`
//! and a positive `nanosec` (-1 ns is `{sec: -1, nanosec: 999_999_999}`). Values outside the range of the
//! message (before 1901-12-13 or after 2038-01-19, about ±68 years around the epoch) saturate at its first or
//! last representable instant rather than wrap.

use r2r::builtin_interfaces::msg::Time;

/// Nanoseconds per second.
pub const NS_PER_SEC: i64 = 1_000_000_000;

/// The earliest instant a `Time` can hold.
const MIN_TIME: Time = Time {
    sec: i32::MIN,
    nanosec: 0,
};

/// The latest instant a `Time` can hold.
const MAX_TIME: Time = Time {
    sec: i32::MAX,
    nanosec: 999_999_999,
};

/// Nanoseconds since the epoch as a ROS `Time`, saturating outside the message's range.
pub fn ns_to_time(ns: i64) -> Time {
    // Euclidean division keeps `nanosec` in [0, 1e9) for negative instants too.
    let sec = ns.div_euclid(NS_PER_SEC);
    let nanosec = ns.rem_euclid(NS_PER_SEC);
    match (i32::try_from(sec), u32::try_from(nanosec)) {
        (Ok(sec), Ok(nanosec)) => Time { sec, nanosec },
        _ if sec < 0 => MIN_TIME,
        _ => MAX_TIME,
    }
}

/// A ROS `Time` as nanoseconds since the epoch. Exact for every `Time` (even one whose `nanosec` is not
/// normalised below 1e9): `i32` seconds in nanoseconds plus a `u32` fit an `i64` with room to spare.
pub fn time_to_ns(time: &Time) -> i64 {
    i64::from(time.sec) * NS_PER_SEC + i64::from(time.nanosec)
}

/// A non-negative number of seconds as a ROS `Duration` (rounded to the nanosecond; negative or NaN
/// gives 0, a span beyond the message's range its largest value).
pub fn secs_to_duration(secs: f64) -> r2r::builtin_interfaces::msg::Duration {
    let nanos = if secs.is_nan() || secs <= 0.0 {
        0
    } else {
        (secs * 1e9).round().min(i64::MAX as f64) as i64
    };
    let time = ns_to_time(nanos);
    r2r::builtin_interfaces::msg::Duration {
        sec: time.sec,
        nanosec: time.nanosec,
    }
}

/// A ROS `Duration` in seconds.
pub fn duration_to_secs(d: &r2r::builtin_interfaces::msg::Duration) -> f64 {
    f64::from(d.sec) + f64::from(d.nanosec) * 1e-9
}

/// Seconds since the epoch (simulated or wall-clock) as a ROS `Time`, rounded to the nearest nanosecond and
/// saturating outside the message's range; NaN gives the epoch (`{0, 0}`), since a stamp must be something.
pub fn secs_to_time(secs: f64) -> Time {
    if secs.is_nan() {
        return Time { sec: 0, nanosec: 0 };
    }
    // Whole seconds and the fraction separately: `secs * 1e9` in one go would round to the ~256 ns grid of a
    // double near 1.7e18 and shift today's stamps by up to 128 ns. `secs - floor(secs)` is exact.
    let whole = secs.floor();
    if whole >= f64::from(i32::MAX) + 1.0 {
        return MAX_TIME;
    }
    if whole < f64::from(i32::MIN) {
        return MIN_TIME;
    }
    // In [0, 1e9]: a fraction rounding up to a whole second carries through ns_to_time.
    let fraction_ns = ((secs - whole) * 1e9).round() as i64;
    ns_to_time(whole as i64 * NS_PER_SEC + fraction_ns)
}

/// The time on a node's clock (ROS time: simulated under `use_sim_time`), if it can be read.
pub fn clock_now(clock: &std::sync::Mutex<r2r::Clock>) -> Option<std::time::Duration> {
    clock.lock().ok().and_then(|mut c| c.get_now().ok())
}

/// [`clock_now`] as a message stamp; zero if the clock cannot be read.
pub fn clock_stamp(clock: &std::sync::Mutex<r2r::Clock>) -> Time {
    clock_now(clock)
        .map(|d| r2r::Clock::to_builtin_time(&d))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(sec: i32, nanosec: u32) -> Time {
        Time { sec, nanosec }
    }

    #[test]
    fn ns_round_trip_exactly_including_negative() {
        for ns in [
            0,
            1,
            999_999_999,
            1_000_000_000,
            1_700_000_000_123_456_789,
            -1,
            -999_999_999,
            -1_000_000_000,
            -1_500_000_000,
            i64::from(i32::MAX) * NS_PER_SEC + 999_999_999,
            i64::from(i32::MIN) * NS_PER_SEC,
        ] {
            assert_eq!(time_to_ns(&ns_to_time(ns)), ns, "{ns}");
        }
    }

    #[test]
    fn negative_instants_keep_nanosec_positive() {
        assert_eq!(ns_to_time(-1), t(-1, 999_999_999));
        assert_eq!(ns_to_time(-1_500_000_000), t(-2, 500_000_000));
        assert_eq!(ns_to_time(-1_000_000_000), t(-1, 0));
        assert_eq!(ns_to_time(1_700_000_001_000_000_006), t(1_700_000_001, 6));
    }

    #[test]
    fn out_of_range_saturates_instead_of_wrapping() {
        assert_eq!(ns_to_time(i64::MAX), MAX_TIME);
        assert_eq!(ns_to_time(i64::MIN), MIN_TIME);
        // One nanosecond past the last representable instant.
        assert_eq!(
            ns_to_time(i64::from(i32::MAX) * NS_PER_SEC + NS_PER_SEC),
            MAX_TIME
        );
        assert_eq!(ns_to_time(i64::from(i32::MIN) * NS_PER_SEC - 1), MIN_TIME);
    }

    #[test]
    fn time_to_ns_of_an_unnormalised_time_is_still_exact() {
        assert_eq!(time_to_ns(&t(1, 1_500_000_000)), 2_500_000_000);
        assert_eq!(time_to_ns(&t(i32::MIN, 0)), -2_147_483_648_000_000_000);
        assert_eq!(
            time_to_ns(&t(i32::MAX, u32::MAX)),
            2_147_483_647_000_000_000 + 4_294_967_295
        );
    }

    #[test]
    fn secs_round_to_the_nearest_nanosecond() {
        assert_eq!(secs_to_time(0.0), t(0, 0));
        assert_eq!(secs_to_time(12.5), t(12, 500_000_000));
        assert_eq!(secs_to_time(1.25e-9), t(0, 1));
        assert_eq!(secs_to_time(1.75e-9), t(0, 2));
        // Rounding up carries into the seconds.
        assert_eq!(secs_to_time(1.999_999_999_9), t(2, 0));
        // A sub-nanosecond negative value rounds to the epoch, not to {-1, 999_999_999}.
        assert_eq!(secs_to_time(-1e-10), t(0, 0));
        assert_eq!(secs_to_time(-0.0), t(0, 0));
    }

    #[test]
    fn negative_secs_floor_the_seconds() {
        assert_eq!(secs_to_time(-0.5), t(-1, 500_000_000));
        assert_eq!(secs_to_time(-2.25), t(-3, 750_000_000));
        assert_eq!(secs_to_time(-1e-9), t(-1, 999_999_999));
    }

    #[test]
    fn non_finite_and_huge_secs_saturate_or_give_the_epoch() {
        assert_eq!(secs_to_time(f64::NAN), t(0, 0));
        assert_eq!(secs_to_time(f64::INFINITY), MAX_TIME);
        assert_eq!(secs_to_time(f64::NEG_INFINITY), MIN_TIME);
        assert_eq!(secs_to_time(1e300), MAX_TIME);
        assert_eq!(secs_to_time(-1e300), MIN_TIME);
        assert_eq!(secs_to_time(3e9), MAX_TIME); // past 2038
    }

    #[test]
    fn secs_agree_with_ns_at_today_s_epoch() {
        // A double holds ~238 ns of resolution at 1.7e9 s: the conversion must not add an error of its own.
        let secs = 1_700_000_000.25;
        assert_eq!(secs_to_time(secs), t(1_700_000_000, 250_000_000));
        assert_eq!(time_to_ns(&secs_to_time(secs)), 1_700_000_000_250_000_000);
    }
}
