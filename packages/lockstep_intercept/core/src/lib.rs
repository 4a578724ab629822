//! Unmodified ROS 2 nodes in Lockstep, the part without ROS.
//!
//! The rcl interceptor (`lockstep_intercept_preload`, preloaded into a node's process) sees every call a
//! client library makes into `librcl`: messages taken, messages published, timers fired, service requests
//! and responses. This crate decides what those calls mean: which inputs each output was computed from
//! ([`infer`]), the node's wiring, its event log and the limits it detected, and encodes what the interceptor
//! publishes as CDR ([`cdr`]). It also holds the `lockstep trace` verb ([`cli`]), which starts a program with
//! the interceptor preloaded ([`env`]).

pub mod cdr;
pub mod cli;
pub mod env;
pub mod events;
pub mod introspection;
pub mod names;
pub mod output;
pub mod pacer;
pub mod timers;
pub mod tracker;
