//! What the task manager and the simulated actuators share: the action server they serve their actions with.

/// The action server, kept where every node crate can use it.
pub use lockstep_ros::action_server;

/// `name` resolved against a namespace, as ROS resolves a relative name (no remapping).
pub use lockstep_tasks::robots::qualified;
