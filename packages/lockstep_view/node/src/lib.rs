//! `lockstep_view_node`: the live view as a ROS 2 node. [`bridge`] relays the graph to the Foxglove
//! WebSocket server of `lockstep_view`, [`params`] answers its parameter requests and [`services`] its
//! service calls; [`cli`] is `lockstep view`, which runs the node in-process, and [`bag`] its `--bag` (a bag
//! player beside the view); [`access`] who may connect and what they may do.

pub mod access;
pub mod bag;
pub mod bridge;
pub mod cli;
pub mod params;
pub mod services;
