//! The two-output example module `range_splitter` (binary `lockstep_module_split`): from each front range
//! reading it computes, in one computation, the reading clamped into its sensor's limits (`range_clamped`,
//! sensor_msgs/Range) and the distance left before a stop distance (`range_margin`, std_msgs/Float64). Both
//! outputs' headers name the same input and start time: lock-step replay steps them as one computation.

use crate::types::RangeReading;

/// Output: the reading clamped into `[min_range, max_range]`.
pub const RANGE_CLAMPED: &str = "range_clamped";
/// Output: the distance left before the stop distance, metres (negative: closer than it).
pub const RANGE_MARGIN: &str = "range_margin";

/// The reading's range clamped into the sensor's limits (limits given in either order; a non-finite range
/// or limit leaves the range as it is).
pub fn clamped(reading: &RangeReading) -> f32 {
    let (lo, hi) = if reading.min_range <= reading.max_range {
        (reading.min_range, reading.max_range)
    } else {
        (reading.max_range, reading.min_range)
    };
    if reading.range.is_finite() && lo.is_finite() && hi.is_finite() {
        reading.range.clamp(lo, hi)
    } else {
        reading.range
    }
}

/// The distance from the clamped reading to `stop_distance_m` (0 when either is not finite).
pub fn margin(reading: &RangeReading, stop_distance_m: f64) -> f64 {
    let data = f64::from(clamped(reading)) - stop_distance_m;
    if data.is_finite() {
        data
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(range: f32) -> RangeReading {
        RangeReading {
            min_range: 0.1,
            max_range: 5.0,
            range,
            ..RangeReading::default()
        }
    }

    #[test]
    fn readings_are_clamped_into_the_sensor_limits() {
        assert_eq!(clamped(&reading(7.0)), 5.0);
        assert_eq!(clamped(&reading(0.0)), 0.1);
        assert_eq!(clamped(&reading(2.5)), 2.5);
        assert!(clamped(&reading(f32::NAN)).is_nan());
    }

    #[test]
    fn the_margin_is_what_is_left_before_the_stop_distance() {
        assert_eq!(margin(&reading(2.5), 0.5), 2.0);
        assert_eq!(margin(&reading(0.0), 0.5), f64::from(0.1f32) - 0.5);
        assert_eq!(margin(&reading(f32::NAN), 0.5), 0.0);
    }
}
