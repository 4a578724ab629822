//! The example three-module pipeline's computations (m1, m2, m3), as pure functions:
//!
//! | id     | binary               | node (module)       | reads                                   | writes            |
//! |--------|----------------------|---------------------|-----------------------------------------|-------------------|
//! | m1     | `lockstep_module_m1` | `obstacle_fusion`   | c1 `scan_front`, c2 `scan_rear` (Range) | c3 `obstacles` (PoseArray) |
//! | m3     | `lockstep_module_m3` | `mission_planner`   | nothing (own timer)                     | c6 `mission` (PoseStamped) |
//! | m2     | `lockstep_module_m2` | `motion_controller` | c3, c6, c4 `odom` (Odometry)            | c5 `cmd_vel` (Twist) |
//!
//! `lockstep_module_split` (node `range_splitter`, [`split`]) is a fourth example beside the pipeline: one
//! computation per `scan_front` reading that publishes on two channels.
//!
//! The computations here are pure functions of their inputs (no clock, no randomness), so lock-step replay
//! feeding the recorded inputs gets the recorded outputs back, bit for bit. The nodes that run them are the
//! crate `lockstep_examples_node`; `lockstep replay --in-process` runs them without a node.
//!
//! Every module drops inputs with numbers it cannot use and never publishes a non-finite number
//! ([`validate`]).

pub mod control;
pub mod fusion;
pub mod mission;
pub mod split;
pub mod types;
pub mod validate;

use std::time::Duration;

/// Topic names (relative, so a namespace or remapping moves them).
pub mod topics {
    /// c1: front range sensor (sensor_msgs/Range).
    pub const SCAN_FRONT: &str = "scan_front";
    /// c2: rear range sensor (sensor_msgs/Range).
    pub const SCAN_REAR: &str = "scan_rear";
    /// c3: obstacles fused by m1 (geometry_msgs/PoseArray, base frame).
    pub const OBSTACLES: &str = "obstacles";
    /// c6: current mission goal from m3 (geometry_msgs/PoseStamped).
    pub const MISSION: &str = "mission";
    /// c4: odometry from outside (nav_msgs/Odometry).
    pub const ODOM: &str = "odom";
    /// c5: velocity command from m2 (geometry_msgs/Twist).
    pub const CMD_VEL: &str = "cmd_vel";
}

/// Depth of every data topic's reliable QoS: a module must not lose an input it might have to name.
pub const DATA_QOS_DEPTH: usize = 50;

/// A period in seconds from a rate in Hz; `None` for a rate that is not a positive finite number.
pub fn period_from_rate(rate_hz: f64) -> Option<Duration> {
    if rate_hz.is_finite() && rate_hz > 0.0 {
        Duration::try_from_secs_f64(1.0 / rate_hz)
            .ok()
            .filter(|d| !d.is_zero())
    } else {
        None
    }
}

/// A duration from a millisecond count read from a parameter; negative counts are zero.
pub fn millis_or_zero(ms: i64) -> Duration {
    Duration::from_millis(ms.max(0).unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_convert_and_bad_rates_are_refused() {
        assert_eq!(period_from_rate(10.0), Some(Duration::from_millis(100)));
        assert_eq!(period_from_rate(0.0), None);
        assert_eq!(period_from_rate(-1.0), None);
        assert_eq!(period_from_rate(f64::NAN), None);
        assert_eq!(period_from_rate(f64::INFINITY), None);
    }

    #[test]
    fn negative_millisecond_counts_are_zero() {
        assert_eq!(millis_or_zero(-5), Duration::ZERO);
        assert_eq!(millis_or_zero(250), Duration::from_millis(250));
    }
}
