//! `lockstep_view`: a Foxglove WebSocket server (protocol `foxglove.websocket.v1`) without ROS, for
//! `lockstep view` and the `lockstep_view` node, which feed it the ROS graph's topics as raw CDR.
//!
//! - [`protocol`]: the messages (JSON and binary) and the parsing of client input, with errors that say
//!   what is wrong for a status message.
//! - [`queue`]: one client's bounded queue: a slow client's oldest data is dropped and counted.
//! - [`server`]: the WebSocket server on tokio-tungstenite: channels, subscriptions, relaying, and
//!   [`Event`]s telling when a channel gets its first subscriber or loses its last.
//! - `latched`: the last messages of transient-local channels, for clients that subscribe later.
//! - `requests`: what clients ask of the node (parameters, service calls) and how the node answers.

mod latched;
pub mod protocol;
pub mod queue;
mod requests;
pub mod server;
mod stats;

pub use protocol::{Channel, Level, Parameter, Service, ServiceCall};
pub use server::{ClientStats, Event, Server, ServerOptions};
