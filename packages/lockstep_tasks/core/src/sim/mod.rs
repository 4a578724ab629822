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

/// The message of every goal ended by parameter `fail`.
pub const SIMULATED_FAILURE: &str = "simulated failure (parameter fail)";

/// The message of every cancelled goal.
pub const CANCELLED: &str = "cancelled";
