//! What the task manager and the simulated actuators share: the action server they serve their actions with.

pub mod action_server;
