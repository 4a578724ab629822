//! Bag playback logic without ROS (the node is `lockstep_bag_player_node`): which topics play and under
//! which names ([`TopicSelection`]), which part of the bag ([`Window`]), when each message is due
//! ([`PlaybackClock`], [`due`]), with which QoS ([`playback_qos`], [`parse_qos_overrides`]), and what the
//! player's services answer ([`PlayRequest`], [`play_next`], [`burst`], [`check_seek`]), and the play loop
//! itself ([`Engine`], driven through a [`Sink`] the node gives, fed by the [`ReadAhead`] thread).
//!
//! Order: messages play in the bag library's total order (log time, then the order they were written in the
//! bag, across split files too), so two plays of one bag publish the same sequence.

mod clock;
mod config;
mod control;
mod engine;
mod error;
mod lateness;
mod open;
mod progress;
mod qos;
mod readahead;
mod requests;
mod selection;
mod window;

pub use clock::PlaybackClock;
pub use config::{list, PlayConfig, PlayOptions, MAX_CLOCK_HZ, MIN_CLOCK_HZ};
pub use control::{Control, Reply, Request, State};
pub use engine::{Engine, Plan, Sink};
pub use error::{Error, Result};
pub use lateness::{Lateness, LatenessSummary};
pub use open::{OpenBag, OpenError, TopicPlan};
pub use progress::progress_message;
pub use qos::{parse_qos_overrides, playback_qos, publishable, PlaybackQos};
pub use readahead::{Item, ReadAhead};
pub use requests::{
    burst, check_seek, due, play_next, play_summary, rate_refusal, seek_time, Due, PlayRequest,
    NO_PLAY_RUNNING, PLAYER_STOPPED, PLAY_RUNNING,
};
pub use selection::{parse_remaps, TopicSelection};
pub use window::Window;
