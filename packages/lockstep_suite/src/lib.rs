//! `lockstep test`: replay regression suites over a corpus of recordings.
//!
//! A suite file ([`suite`]) names recordings (paths and globs), the launch file that starts the modules
//! under test in step mode and its variants (named sets of launch arguments), what counts as a pass per
//! channel and field, optional Datalog assertions and the baseline. Each (recording, variant) is a case
//! ([`plan`]) run on a ROS domain of its own ([`domain`], [`run`]): the modules are launched, `lockstep
//! replay` steps them through the recording, and their outputs are compared frame by frame with the
//! recording or an earlier run ([`compare`], [`asserts`]); what the replay could not replay and the live
//! parameters that differ from the recorded ones are the case's warnings ([`replayed`]). Reports:
//! `report.json` and `differences.png` per case; `summary.json`, JUnit XML and `summary.html` per suite
//! ([`report`]).

pub mod asserts;
pub mod compare;
pub mod domain;
mod error;
mod paths;
pub mod plan;
pub mod replayed;
pub mod report;
pub mod run;
pub mod suite;

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "cli")]
mod ray;

pub use error::{Error, Result};
