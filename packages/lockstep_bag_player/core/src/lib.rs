//! Bag playback logic without ROS (the node is `lockstep_bag_player_node`): which topics play and under
//! which names ([`TopicSelection`]), which part of the bag ([`Window`]), when each message is due
//! ([`PlaybackClock`], [`due`]), with which QoS ([`playback_qos`], [`parse_qos_overrides`]), and what the
//! player's services answer ([`PlayRequest`], [`play_next`], [`burst`], [`check_seek`]), the play loop
//! itself ([`Engine`], driven through a [`Sink`] the node gives, fed by one [`ReadAhead`] thread per bag,
//! [`Merged`]), and `lockstep bag play`'s keyboard controls ([`KeyParser`], [`apply_key`]) and progress line
//! ([`progress_line`], [`Redraw`]).
//!
//! Order: messages play in the bag library's total order (log time, then the order they were written in the
//! bag, across split files too), so two plays of one bag publish the same sequence; several bags play as one
//! stream ([`Merged`]), equal time stamps in the order the bags were given.

#[cfg(feature = "cli")]
pub mod args;
mod clock;
mod config;
mod control;
mod engine;
mod error;
mod keys;
mod lateness;
mod merge;
mod open;
mod progress;
mod qos;
mod readahead;
mod requests;
mod selection;
mod service_events;
mod window;

pub use clock::PlaybackClock;
pub use config::{
    bags, list, ClockTopics, MessageOrder, PlayConfig, PlayOptions, MAX_CLOCK_HZ, MIN_CLOCK_HZ,
};
pub use control::{Control, Reply, Request, State};
pub use engine::{Engine, Plan, Sink};
pub use error::{Error, Result};
pub use keys::{apply as apply_key, Key, KeyParser, KEY_RATE_RANGE};
pub use lateness::{Lateness, LatenessSummary};
pub use merge::{Feed, Merged, Next, Stamped};
pub use open::{OpenBag, OpenError, TopicPlan};
pub use progress::{percent, progress_line, rate_text, ProgressState, Redraw};
pub use qos::{parse_qos_overrides, playback_qos, publishable, PlaybackQos};
pub use readahead::{Item, ReadAhead};
pub use requests::{
    burst, check_seek, due, play_next, play_summary, rate_refusal, seek_time, Due, PlayRequest,
    NO_PLAY_RUNNING, PLAYER_STOPPED, PLAY_RUNNING,
};
pub use selection::{parse_remaps, TopicSelection};
pub use service_events::{RequestSource, SentRequests, REQUEST_RECEIVED, REQUEST_SENT};
pub use window::Window;
