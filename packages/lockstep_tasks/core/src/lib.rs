//! Hierarchical task execution, without ROS.
//!
//! - [`map`]: a station map (stations, lanes with speed limits) from YAML; routes planned by travel time.
//! - [`routes`]: the [`Planner`] interface, and `route: {from, to}` parameters turned into planned points.
//! - [`fleet`]: which robot takes a task: the one that can start it soonest; [`robots`]: the robots.
//! - [`manager`]: the task manager's policy as a state machine: events in, commands out (queues, preemption,
//!   busy actuators, delays, restart from the [`journal`]).
//! - [`sim`]: the simulated actuators' behaviour (busy time, timed goals, the HMI prompt, the navigation
//!   route follower and a drive's progress).
//! - [`config`]: levels, decomposition templates, parameter compatibility rules, attributes and the actuator
//!   mapping, from YAML; errors name the key path and line.
//! - [`params`]: parameters templated from the parent's and merged by rule (min, max, parent, child,
//!   intersect).
//! - [`scheduler`]: top-down dispatch with attributes, group completion, interrupts, pause / resume, cancel.
//! - [`status`]: the statuses and the transition table.
//! - [`tree`]: eager decomposition into per-level subtask lists; status changes checked against the table.

pub mod config;
pub mod fleet;
pub mod journal;
pub mod manager;
pub mod map;
mod map_file;
pub mod map_geojson;
pub mod map_traffic;
pub mod params;
pub mod robots;
pub mod routes;
pub mod scheduler;
pub mod sim;
pub mod status;
pub mod traffic;
mod travel;
pub mod tree;
mod yaml;

pub use config::{Attribute, Config, ConfigError, Merge, Retry};
pub use fleet::{assign, AssignError, Assignment, RobotView, TaskNeeds};
pub use map::{Lane, MapError, StationMap};
pub use params::{ParamError, Params};
pub use routes::{plan_routes, PlannedRoute, Planner, RouteError, RouteSpecError};
pub use scheduler::{Conditions, Outcome, Output, Refused, RestoreError, Scheduler};
pub use status::{EndReason, Status};
pub use tree::{Change, DecomposeError, Id, Subtask, TransitionError, Tree};
