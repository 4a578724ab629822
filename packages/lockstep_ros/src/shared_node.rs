//! The node handle shared between the spinner and a node's tasks, and its locking.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};

/// A node shared between the spinner and the node's tasks.
pub type SharedNode = Arc<Mutex<r2r::Node>>;

/// Lock a shared node, mapping a poisoned mutex to [`Error::Poisoned`].
pub fn lock(node: &SharedNode) -> Result<MutexGuard<'_, r2r::Node>> {
    node.lock().map_err(|_| Error::Poisoned)
}
