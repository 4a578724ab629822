//! The state of one launch reading: the scope a `<group>` or include opens and the walker that carries
//! the plan, the files being read and the limits spent so far. A leaf module, so that the parent and the
//! children that extend [`Walker`] all use it without importing one another.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use roxmltree::Node;
use serde_norway::Value;

use super::source::Source;
use crate::ament::PackageIndex;
use crate::error::{LaunchError, Location, Result};
use crate::plan::{Plan, Wait};
use crate::subst::Bounds;

/// What a `<group>` (or an include) scopes.
#[derive(Debug, Clone, Default)]
pub(super) struct Scope {
    pub(super) vars: BTreeMap<String, String>,
    pub(super) env: BTreeMap<String, Option<String>>,
    pub(super) namespace: String,
    pub(super) remaps: Vec<(String, String)>,
    pub(super) params: Vec<(String, Value)>,
    /// `<?lockstep wait-for?>`s met so far: every process declared in the scope waits for them.
    pub(super) waits: Vec<Wait>,
}

/// Reads launch files into a plan: the state one reading carries from file to file.
pub(super) struct Walker<'o> {
    /// Where packages are (for `$(find-pkg-share)` and node executables).
    pub(super) index: &'o PackageIndex,
    pub(super) plan: Plan,
    pub(super) anon: BTreeMap<String, String>,
    pub(super) labels: BTreeMap<String, usize>,
    pub(super) declared: BTreeSet<String>,
    /// Elements open around the one being read, across included files.
    pub(super) depth: usize,
    /// The files being read, outermost first (as the file system names them), to see include cycles.
    pub(super) files: Vec<PathBuf>,
    /// Files read so far.
    pub(super) files_read: usize,
    /// Bytes of text read, expanded and copied so far (see [`crate::limits::MAX_COPIED_BYTES`]).
    pub(super) copied: usize,
    /// Substitutions of the file being read.
    pub(super) bounds: Bounds,
}

/// The file, line and column of `node`.
pub(super) fn at(src: &Source<'_>, node: Node<'_, '_>) -> Location {
    src.location(node.range().start)
}

/// Whether the condition `name` (`if` or `unless`) with `value` lets its element apply.
pub(super) fn applies(at: &Location, name: &str, value: &str) -> Result<bool> {
    let truth = match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" => true,
        "false" | "0" => false,
        other => {
            return Err(LaunchError::invalid(
                at,
                format!("{name}=\"{other}\": a condition is true, false, 1 or 0"),
            ))
        }
    };
    Ok(truth == (name == "if"))
}
