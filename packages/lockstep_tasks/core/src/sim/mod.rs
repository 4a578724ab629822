//! The simulated actuators' behaviour, free of ROS: what `lockstep_actuator` does with a goal.

pub mod follower;
