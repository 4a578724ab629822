//! Dependency headers for Lockstep modules.
//!
//! A *module* is a node; its *channels* (data queues) are topics. Beside every message a module
//! publishes, it publishes a dependency header naming what produced it and from what:
//!
//! - [`TraceHeader`]: module, channel, per-channel sequence number, start time, processing time, a digest of
//!   the payload, and the headers of the inputs used (first level) with *their* inputs (second level) — the
//!   two-level backtrace.
//! - [`Tracer`]: the module-side bookkeeping that numbers outputs and builds headers.
//! - [`digest`]: the payload digest (first 8 bytes of SHA-256, little-endian) that pairs a header with its data.
//! - [`HeaderMatcher`]: pairs data and headers arriving on two topics, despite loss, reordering, duplicates.
//! - [`canonical_from_passes`]: the canonical CDR (padding zeroed) that payload digests are computed from.
//! - [`Pairing`]: one subscribed channel's data, each message yielded with its header in arrival order.
//! - [`step`]: the bookkeeping of lock-step replay's step protocol ([`StepGrant`], [`Recent`], [`match_outputs`]).
//! - [`TopologyBuilder`]: learns which module reads and writes which channel, rejects cycles.
//! - [`proto`]: the protobuf schema (`proto/lockstep/dependency_header.proto`, compiled with
//!   prost-build), for storing headers and topology in a bag.
//!
//! No ROS here: `lockstep_trace_ros` converts to and from the ROS messages.

mod canonical;
mod digest;
mod error;
mod matcher;
mod model;
pub mod names;
mod pairing;
pub mod proto;
pub mod step;
#[cfg(feature = "testing")]
pub mod testing;
mod topology;
mod tracer;

pub use canonical::{canonical_from_passes, canonical_len, CDR_HEADER_BYTES};
pub use digest::{digest, DIGEST_BYTES};
pub use error::{Error, Result};
pub use matcher::{HeaderMatcher, MatcherStats, DEFAULT_MATCHER_CAPACITY};
pub use model::{Component, InputRecord, SourceRef, Topology, TraceHeader, EXTERNAL_MODULE};
pub use pairing::{Pairing, Traced, Upstream, DEFAULT_HEADER_TIMEOUT};
pub use step::{match_outputs, Granted, PendingStep, Recent, StepGrant, StepOutputData};
pub use topology::TopologyBuilder;
pub use tracer::{duration_to_ns_u32, now_ns, Token, Tracer};
