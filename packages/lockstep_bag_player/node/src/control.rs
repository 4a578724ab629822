//! What the services and the play thread share (the clock, the requests, the stop flag, progress): now in
//! the core crate, re-exported under its old path.

pub use lockstep_bag_player::{Control, PlayRequest, Reply, Request, State};
