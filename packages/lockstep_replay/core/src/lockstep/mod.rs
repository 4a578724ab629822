//! Lock-step re-simulation: replay a recording through live modules in DAG order, one frame at a
//! time, so every module consumes exactly the inputs it consumed when recorded, and write what they output
//! into a new bag.
//!
//! - [`Recording`] indexes a bag: the module topology (a DAG), the frames (dependency headers) and each
//!   channel's data by payload digest.
//! - [`replay`] runs the frames through in-process [`Module`]s (the DDS replay node drives live processes
//!   with the same plan).
//! - [`write_bag`] stores the simulated outputs and their headers in a new bag, log times as recorded, so
//!   replaying one recording twice gives byte-identical files.

mod evaluate;
mod header;
mod inputs;
mod order;
mod output;
mod plan;
mod plot;
mod recording;
mod replay;
mod topology_source;

pub use evaluate::{evaluate, fold_indices, ChannelEvaluation, Difference, Evaluation, ModuleEvaluation};
pub use header::{header_from_value, header_to_value};
pub use output::write_bag;
pub use plot::{differences_figure, differences_figure_against};
pub use recording::{Channel, Frame, RecordedMessage, Recording, HEADER_SUFFIX};
pub use replay::{
    replay, replay_observed, FrameSelection, MissingUpstream, Module, NewModule, ReplayOptions,
    ReplayOutcome, Simulated, SkippedFrame, StepInput,
};
pub use topology_source::TopologySource;

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
