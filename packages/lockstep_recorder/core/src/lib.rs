//! What the recorder node decides, without ROS: which topics to record ([`TopicSelection`]), which QoS to
//! subscribe with so every publisher matches ([`adapt_qos`]), and what it has recorded ([`Statistics`],
//! including drops detected from gaps in dependency-header sequence numbers, and what the recorder itself
//! dropped), and how much may wait for the bag writer ([`QueueBudget`]).

mod qos;
mod queue;
mod selection;
mod statistics;

pub use qos::{adapt_qos, SubscriptionQos};
pub use queue::{QueueBudget, Throttle};
pub use selection::TopicSelection;
pub use statistics::{DropReason, Statistics, TopicStats};

/// Errors of the recorder logic.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("parameter `{parameter}`: invalid regular expression `{pattern}`: {source}")]
    InvalidRegex {
        parameter: &'static str,
        pattern: String,
        #[source]
        source: regex::Error,
    },
    #[error("parameter `topics`: `{topic}` is not a valid topic name (expected `/name` or `name`)")]
    InvalidTopic { topic: String },
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// The suffix of the sidecar topic that carries a channel's dependency headers.
pub const HEADER_SUFFIX: &str = "/lockstep_header";

/// The ROS type of dependency headers.
pub const HEADER_TYPE: &str = "lockstep_interfaces/msg/DependencyHeader";
