//! The crate's error type, kept in a leaf module so every other module can use it without importing the
//! crate root.

/// What can go wrong publishing or subscribing traced topics.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An r2r call failed: lockstep_ros's error, whose action names the topic
    /// ([`lockstep_ros::Error::Ros`]).
    #[error(transparent)]
    Ros(#[from] lockstep_ros::Error),
    /// A lock-step grant names no output on the channel a module publishes a step's output on.
    #[error("the step of {frame} names no output on `{channel}` (it names {named})")]
    NotGranted {
        /// The publisher's channel.
        channel: String,
        /// The granted frame (`<channel> #<sequence>`).
        frame: String,
        /// The output channels the grant names.
        named: String,
    },
    /// The tracing library refused (e.g. an input channel never received).
    #[error("tracing on `{channel}`: {source}")]
    Trace {
        /// The output channel.
        channel: String,
        #[source]
        source: lockstep_trace::Error,
    },
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;
