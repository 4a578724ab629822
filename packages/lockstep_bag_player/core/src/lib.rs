//! Bag playback logic without ROS (the node is `lockstep_bag_player_node`): which topics play and under
//! which names ([`TopicSelection`]), which part of the bag ([`Window`]), when each message is due
//! ([`PlaybackClock`], [`due`]), with which QoS ([`playback_qos`], [`parse_qos_overrides`]), and what the
//! player's services answer ([`PlayRequest`], [`play_next`], [`burst`], [`check_seek`]).
//!
//! Order: messages play in the bag library's total order (log time, then the order they were written in the
//! bag, across split files too), so two plays of one bag publish the same sequence.

mod clock;
mod error;
mod lateness;
mod qos;
mod requests;
mod selection;
mod window;

pub use clock::PlaybackClock;
pub use error::{Error, Result};
pub use lateness::{Lateness, LatenessSummary};
pub use qos::{parse_qos_overrides, playback_qos, publishable, PlaybackQos};
pub use requests::{
    burst, check_seek, due, play_next, play_summary, rate_refusal, seek_time, Due, PlayRequest,
    NO_PLAY_RUNNING, PLAYER_STOPPED, PLAY_RUNNING,
};
pub use selection::{parse_remaps, TopicSelection};
pub use window::Window;
