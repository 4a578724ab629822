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

mod callback;
mod error;
mod evaluate;
mod frame;
mod header;
mod inputs;
mod module;
mod node_step;
mod order;
mod output;
mod plan;
mod plot;
mod recording;
mod replay;
mod topology_source;
mod types;
mod unmodified;
mod wiring;

pub use callback::{kind as event_kind, EventOutput, GrantEvent, NodeCallback};
pub use error::{LockstepError, Result};
pub use evaluate::{evaluate, fold_indices, ChannelEvaluation, Difference, Evaluation, ModuleEvaluation};
pub use frame::Frame;
pub use header::{header_from_value, header_to_value, HEADER_SUFFIX};
pub use output::write_bag;
pub use plot::{differences_figure, differences_figure_against};
pub use recording::{Channel, RecordedMessage, Recording};
pub use replay::{replay, replay_observed, Module, StepInput};
pub use topology_source::TopologySource;
pub use types::{
    FrameSelection, MissingUpstream, NewModule, ReplayOptions, ReplayOutcome, Simulated, SkippedFrame,
};
pub use unmodified::EVENTS_TOPIC_PREFIX;
pub use wiring::{compare_wiring, fed_channels, live_readers, new_module_wiring, WiringDrift};
