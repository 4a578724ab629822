//! The bag player node `lockstep_bag_player` and `lockstep bag play`: timed playback of any rosbag2 bag
//! (MCAP or sqlite3, ours or rosbag2's), every message type installed on the machine, in a stable total order
//! (log time, then write order), with `ros2 bag play`'s options and rosbag2's player services.
//!
//! The logic without ROS is the `lockstep_bag_player` crate (the play loop, the read-ahead thread, the
//! options' checks, opening the bags, merging them); here: the ROS side of the play loop (`engine`:
//! publishers, `/clock` for clock topics, log), the parameters (`config`), the services (`services`), setup
//! and `/clock` (`player`), the CLI (`cli`) with its keyboard controls (`keys`) and progress line (`status`).

pub mod cli;
pub mod config;
pub mod control;
mod engine;
mod keys;
pub mod player;
mod services;
mod status;

pub use config::{PlayConfig, PlayerParams};
pub use player::{run, Started, NODE_NAME};
