//! The simulated actuators' behaviour, free of ROS: what `lockstep_actuator` does with a goal. The binary
//! only maps goals, topics and the clock to these calls.
//!
//! - [`kind`]: which actuator a process is, and its action server's name.
//! - [`busy`]: occupied or holding a goal, and the busy time left.
//! - [`timed`]: the timed kinds' goal clock, feedback and outcome.
//! - [`prompt`]: the HMI prompt's wait, timeout and answer.
//! - [`follower`]: the navigation route follower's commands; [`navigation`]: a goal's progress around it.
//! - [`pacer`]: when periodic feedback is due.

pub mod busy;
pub mod follower;
pub mod kind;
pub mod navigation;
pub mod pacer;
pub mod prompt;
pub mod timed;

use std::time::{Duration, Instant};

/// The message of every goal ended by parameter `fail`.
pub const SIMULATED_FAILURE: &str = "simulated failure (parameter fail)";

/// The message of every cancelled goal.
pub const CANCELLED: &str = "cancelled";

/// `secs` after `t`, if the clock can count that far: `None` for NaN, a negative number, or a span beyond
/// what `Duration` or `Instant` hold (about 1.8e19 and 9.2e18 s), where `t + Duration::from_secs_f64(secs)`
/// would panic.
pub fn secs_after(t: Instant, secs: f64) -> Option<Instant> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .and_then(|d| t.checked_add(d))
}
