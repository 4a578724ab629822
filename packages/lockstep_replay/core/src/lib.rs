//! Lock-step re-simulation logic without ROS (the node is `lockstep_replay_node`): [`lockstep`] loads a
//! recording, orders its frames, feeds each module exactly the inputs it consumed when recorded, writes the
//! outputs into a new bag and evaluates them against the recording.
//!
//! Timed playback of a bag (`lockstep bag play`) is the `lockstep_bag_player` crate.

#[cfg(feature = "cli")]
pub mod args;
pub mod lockstep;
pub mod parameters;
pub mod report;
