//! What the recorder node decides, without ROS: which topics to record ([`TopicSelection`]), which QoS to
//! subscribe with so every publisher matches ([`adapt_qos`]), and what it has recorded ([`Statistics`],
//! including drops detected from gaps in dependency-header sequence numbers, and what the recorder itself
//! dropped), and how much may wait for the bag writer ([`QueueBudget`]).

mod error;
mod qos;
mod queue;
mod selection;
mod statistics;

pub use error::{Error, Result};
pub use qos::{adapt_qos, SubscriptionQos};
pub use queue::{QueueBudget, Throttle};
pub use selection::TopicSelection;
pub use statistics::{DropReason, Statistics, TopicStats};

/// The suffix of the sidecar topic that carries a channel's dependency headers.
pub const HEADER_SUFFIX: &str = "/lockstep_header";

/// The ROS type of dependency headers.
pub const HEADER_TYPE: &str = "lockstep_interfaces/msg/DependencyHeader";
