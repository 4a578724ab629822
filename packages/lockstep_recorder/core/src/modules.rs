//! Which module's parameters to read, and from which node ([`ModuleWatch`]): each module the recorder learns
//! (from its latched topology or its dependency headers) is looked for in the ROS graph as the node
//! announcing `/lockstep/topology/<module>`; after [`NODE_LOOKS`] rounds without one, `/<module>` is tried.
//! At most [`MAX_MODULES`](crate::pending::MAX_MODULES) modules are read.

use std::collections::{BTreeMap, BTreeSet};

use crate::pending::MAX_MODULES;

/// Discovery rounds spent looking for the node announcing a module's topology before trying `/<module>`.
pub const NODE_LOOKS: u32 = 20;

/// The modules whose parameters are read (or being read), and how long each has been looked for.
#[derive(Debug, Default)]
pub struct ModuleWatch {
    started: BTreeSet<String>,
    looks: BTreeMap<String, u32>,
}

impl ModuleWatch {
    /// Whether `module` still needs its node found (not started, and the bound not reached).
    pub fn wants(&self, module: &str) -> bool {
        !self.started.contains(module) && self.started.len() < MAX_MODULES
    }

    /// Given the node the graph shows announcing `module` (if any), the node to read its parameters from
    /// now, or `None` to look again next round. A module is started once.
    pub fn node_for(&mut self, module: &str, announcer: Option<String>) -> Option<String> {
        let node = match announcer {
            Some(name) => name,
            None => {
                let looked = self.looks.entry(module.to_owned()).or_default();
                *looked += 1;
                if *looked < NODE_LOOKS {
                    return None;
                }
                format!("/{module}")
            }
        };
        self.started.insert(module.to_owned());
        Some(node)
    }
}

/// The fully qualified name of the first publisher (node name, namespace) whose node is discovered. A
/// publisher whose node is not discovered yet is named `_NODE_NAME_UNKNOWN_` (in
/// `_NODE_NAMESPACE_UNKNOWN_`): then `None`, to look again later.
pub fn announcer_name<'a>(publishers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<String> {
    let (name, namespace) = publishers
        .into_iter()
        .find(|(name, _)| !name.contains("_UNKNOWN_"))?;
    if namespace.contains("_UNKNOWN_") {
        return None;
    }
    Some(format!("{}/{name}", namespace.trim_end_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_is_read_from_its_announcer_or_after_enough_looks_from_its_own_name() {
        let mut w = ModuleWatch::default();
        assert_eq!(
            w.node_for("m1", Some("/ns/m1_node".into())),
            Some("/ns/m1_node".into())
        );
        assert!(!w.wants("m1"), "started once");
        for _ in 1..NODE_LOOKS {
            assert!(w.wants("m2"));
            assert_eq!(w.node_for("m2", None), None);
        }
        assert_eq!(w.node_for("m2", None), Some("/m2".into()));
    }

    #[test]
    fn at_most_max_modules_are_read() {
        let mut w = ModuleWatch::default();
        for i in 0..MAX_MODULES {
            w.node_for(&format!("m{i}"), Some("/n".into()));
        }
        assert!(!w.wants("one_more"));
    }

    #[test]
    fn the_announcer_is_the_first_discovered_node() {
        let list = [
            ("_NODE_NAME_UNKNOWN_", "_NODE_NAMESPACE_UNKNOWN_"),
            ("planner", "/robot/"),
        ];
        assert_eq!(announcer_name(list), Some("/robot/planner".into()));
        assert_eq!(announcer_name([("planner", "/")]), Some("/planner".into()));
        assert_eq!(announcer_name([("planner", "_NODE_NAMESPACE_UNKNOWN_")]), None);
        assert_eq!(announcer_name([]), None);
    }
}
