//! What the recorder node decides, without ROS: which topics to record and when ([`TopicSelection`],
//! [`Discoverer`]), which QoS to subscribe with so every publisher matches ([`adapt_qos`]), what each
//! received message goes through ([`TopicRecorder`]: pause, queue bound ([`QueueBudget`]), drop counting),
//! the bag thread that writes, splits and stores the topology, graph and parameter records
//! ([`BagThread`]), what it has recorded ([`Statistics`], including drops detected from gaps in
//! dependency-header sequence numbers, and what the recorder itself dropped), the status it reports
//! ([`Status`]), its settings ([`Settings`], [`RecorderConfig`]) and, with feature `cli`, the flags of
//! `lockstep bag record`. The node crate subscribes, queries the graph and maps to and from messages.

mod bag_thread;
#[cfg(feature = "cli")]
pub mod cli;
mod config;
mod discovery;
mod error;
mod intake;
mod modules;
mod pending;
mod qos;
mod queue;
mod readiness;
mod recording;
mod selection;
mod session;
mod snapshot;
mod state;
mod statistics;
mod status;

pub use bag_thread::{
    BagThread, Command, Snapshot, SnapshotReply, SplitReply, ThreadOptions, TOPOLOGY_ATTACHMENT,
};
pub use config::{RecorderConfig, Settings, TypeSupport};
pub use discovery::{Decision, Discoverer, Plan, GRAPH_PERIOD, TYPE_HASH_WAIT};
pub use error::{Error, Result};
pub use intake::{Decode, TopicKind, TopicRecorder, HEADER_SUFFIX, HEADER_TYPE, TOPOLOGY_TYPE};
pub use modules::{announcer_name, ModuleWatch, NODE_LOOKS};
pub use pending::{
    names_to_read, ParameterEvent, Pending, RecordFormat, MAX_BYTES, MAX_MODULES, MAX_NAME, MAX_PARAMETERS,
    MAX_VALUE,
};
pub use qos::{adapt_qos, SubscriptionQos};
pub use queue::{QueueBudget, Throttle};
pub use readiness::Readiness;
pub use recording::{Clock, GraphQuery, Level, Log, Recording};
pub use selection::{SelectionSettings, TopicSelection};
pub use session::{unix_now_secs, Session};
pub use snapshot::{Held, SnapshotBuffer};
pub use state::{Final, State, Stored, TopicGraph};
pub use statistics::{DropReason, Statistics, TopicStats};
pub use status::{SkippedTopic, Status, TopicStatus};
