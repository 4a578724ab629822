//! `lockstep_view`: a Foxglove WebSocket server (protocol `foxglove.websocket.v1`) without ROS, for
//! `lockstep view` and the `lockstep_view` node, which feed it the ROS graph's topics as raw CDR.
//!
//! - [`protocol`]: the messages (JSON and binary) and the parsing of client input, with errors that say
//!   what is wrong for a status message.
//! - [`queue`]: one client's bounded queue: a slow client's oldest data is dropped and counted.
//! - [`server`]: the WebSocket server on tokio-tungstenite: channels, subscriptions, relaying, and
//!   [`Event`]s telling when a channel gets its first subscriber or loses its last.
//! - [`param_requests`]: parameter requests grouped by node, and the answer's entries.
//! - [`param_value`]: ROS parameter values as the protocol carries them, and back.
//! - `state`: what the server knows behind one lock (clients, channels, services, latched messages).
//! - `latched`: the last messages of transient-local channels, for clients that subscribe later.
//! - `requests`: what clients ask of the node (parameters, service calls) and how the node answers.
//! - [`access`]: the token, and the allowlists of topics, services and parameters.
//! - [`tls`]: optional `wss://`.
//! - [`policy`]: the access settings together and the summary logged at start.
//! - [`graph`]: vanished names, callable services, clients' drop counts, time stamps.
//! - [`bag_play`]: the `lockstep bag play` child of `lockstep view --bag`.

pub mod access;
#[cfg(feature = "cli")]
pub mod args;
pub mod bag_play;
pub mod graph;
mod latched;
pub mod param_requests;
pub mod param_value;
pub mod policy;
pub mod protocol;
pub mod queue;
mod requests;
pub mod server;
mod state;
mod stats;
mod subscriptions;
pub mod tls;
pub mod upgrade;

pub use access::{AccessError, Allowlist, Kind, Token};
pub use bag_play::BagOptions;
pub use param_value::ParamValue;
pub use policy::Access;
pub use protocol::{Channel, Level, Parameter, Service, ServiceCall};
pub use server::{ClientStats, Event, Server, ServerOptions};
pub use tls::{Tls, TlsError};
