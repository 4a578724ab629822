//! What the trajectory-controller tasks share: the engine, the configuration, the request planner, one
//! admission at a time for new trajectories, and the controller's joints.

use std::sync::Arc;

use crate::engine::{Config, Shared};
use crate::requests::Planner;

/// What the trajectory-controller tasks share.
#[derive(Clone)]
pub(crate) struct Context {
    pub(crate) shared: Shared,
    pub(crate) config: Arc<Config>,
    pub(crate) planner: Arc<Planner>,
    /// One new trajectory at a time: the goal server and the topic both go through it.
    pub(crate) admission: Arc<tokio::sync::Mutex<()>>,
    pub(crate) joints: Arc<Vec<String>>,
}
