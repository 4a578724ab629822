//! Hierarchical task execution, without ROS.
//!
//! - [`config`]: levels, decomposition templates, parameter compatibility rules, attributes and the actuator
//!   mapping, from YAML; errors name the key path and line.
//! - [`params`]: parameters templated from the parent's and merged by rule (min, max, parent, child,
//!   intersect).
//! - [`scheduler`]: top-down dispatch with attributes, group completion, interrupts, pause / resume, cancel.
//! - [`status`]: the statuses and the transition table.
//! - [`tree`]: eager decomposition into per-level subtask lists; status changes checked against the table.

pub mod config;
pub mod params;
pub mod scheduler;
pub mod status;
pub mod tree;

pub use config::{Attribute, Config, ConfigError, Merge};
pub use params::{ParamError, Params};
pub use scheduler::{Conditions, Outcome, Output, Refused, Scheduler};
pub use status::{EndReason, Status};
pub use tree::{Change, DecomposeError, Id, Subtask, TransitionError, Tree};
