//! `lockstep replay` and the node `lockstep_replay`: lock-step re-simulation of a recording through live
//! module processes over DDS (`lockstep_dds`, with the recorded module parameters compared or applied by
//! `parameters`), or through the example pipeline's logic in this process (`in_process`); the command line is
//! `replay_cli`.
//!
//! The logic without ROS is the `lockstep_replay` crate. The bag player (`lockstep bag play`) is the
//! `lockstep_bag_player_node` crate.

pub mod in_process;
mod intercepted;
mod live_parameters;
pub mod lockstep_dds;
pub mod parameters;
mod remote_module;
pub mod repeat;
pub mod replay_cli;
