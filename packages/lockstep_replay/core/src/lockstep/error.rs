//! What can go wrong in a lock-step replay ([`LockstepError`]), kept apart so that every part of the
//! replay can name it without importing the module that gathers them.

/// What can go wrong in a lock-step replay.
#[derive(Debug, thiserror::Error)]
pub enum LockstepError {
    /// Reading or writing a bag.
    #[error(transparent)]
    Bag(#[from] lockstep_bag::Error),
    /// The bag holds neither the recorder's topology record nor any dependency header: nothing says which
    /// module reads and writes which channel.
    #[error(
        "{bag}: no module topology: the bag holds neither a `lockstep_topology` record (written by \
         lockstep_recorder) nor dependency headers (`<channel>/lockstep_header` topics, published by traced \
         modules); record the modules' outputs together with their `/lockstep_header` topics"
    )]
    NoTopology {
        /// The bag, as opened.
        bag: String,
    },
    /// The recorded topology cannot be replayed (a cycle, naming modules and channels).
    #[error("recorded topology: {0}")]
    Topology(lockstep_trace::Error),
    /// A header cannot be read.
    #[error("dependency header {what}: {reason}")]
    Header {
        /// Topic and index of the header message.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// A live module that the recorded topology does not have.
    #[error("module `{module}` is not in the recorded topology")]
    UnknownModule {
        /// The module.
        module: String,
    },
    /// With `strict`: a frame whose back-trace reaches outside the recording.
    #[error("frame {channel} #{sequence_num} of `{module}` cannot be replayed: {reason}")]
    Unreplayable {
        /// Its module.
        module: String,
        /// Its output channel.
        channel: String,
        /// Its sequence number.
        sequence_num: u32,
        /// Why.
        reason: String,
    },
    /// A module's step failed.
    #[error("`{module}` failed on frame {channel} #{sequence_num}: {reason}")]
    Step {
        /// The module.
        module: String,
        /// The output channel of the frame.
        channel: String,
        /// Its sequence number.
        sequence_num: u32,
        /// What the module said.
        reason: String,
    },
    /// A recorded message a frame needs cannot be had.
    #[error("recorded {channel} (digest {digest:016x}): {reason}")]
    Payload {
        /// Its channel.
        channel: String,
        /// Its payload digest.
        digest: u64,
        /// Why.
        reason: String,
    },
    /// A simulated output or header cannot be encoded for the output bag.
    #[error("encoding {what}: {reason}")]
    Encode {
        /// What.
        what: String,
        /// Why.
        reason: String,
    },
}

/// `Result` with a [`LockstepError`].
pub type Result<T, E = LockstepError> = std::result::Result<T, E>;
