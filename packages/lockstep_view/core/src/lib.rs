//! `lockstep_view`: a Foxglove WebSocket server (protocol `foxglove.websocket.v1`) without ROS, for
//! `lockstep view` and the `lockstep_view` node, which feed it the ROS graph's topics as raw CDR.
//!
//! - [`protocol`]: the messages (JSON and binary) and the parsing of client input, with errors that say
//!   what is wrong for a status message.
//! - [`queue`]: one client's bounded queue: a slow client's oldest data is dropped and counted.
//! - [`server`]: the WebSocket server on tokio-tungstenite: channels, subscriptions, relaying, and
//!   [`Event`]s telling when a channel gets its first subscriber or loses its last.
//! - `requests`: what clients ask of the node (parameters, service calls) and how the node answers.

pub mod protocol;
pub mod queue;
mod requests;
pub mod server;

pub use protocol::{Channel, Level, Parameter, Service, ServiceCall};
pub use server::{ClientStats, Event, Server, ServerOptions};
