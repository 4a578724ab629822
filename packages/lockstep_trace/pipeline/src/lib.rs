//! The example module pipeline of seed 000, figure 3a, as real traced nodes:
//!
//! | patent | binary               | node (module)       | reads                                   | writes            |
//! |--------|----------------------|---------------------|-----------------------------------------|-------------------|
//! | m1     | `lockstep_module_m1` | `obstacle_fusion`   | c1 `scan_front`, c2 `scan_rear` (Range) | c3 `obstacles` (PoseArray) |
//! | m3     | `lockstep_module_m3` | `mission_planner`   | nothing (own timer)                     | c6 `mission` (PoseStamped) |
//! | m2     | `lockstep_module_m2` | `motion_controller` | c3, c6, c4 `odom` (Odometry)            | c5 `cmd_vel` (Twist) |
//!
//! The computations here are pure functions of their inputs (no clock, no randomness), so lock-step replay
//! feeding the recorded inputs gets the recorded outputs back, bit for bit.

pub mod control;
pub mod fusion;
pub mod mission;

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

/// Simulated computation time: a module sleeps this long between starting and publishing an output, so the
/// headers' `process_time_ns` and the timing between modules look like a real pipeline's. Negative values
/// count as zero.
pub async fn simulate_processing(delay_ms: i64) {
    if delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(delay_ms.unsigned_abs())).await;
    }
}

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
}
