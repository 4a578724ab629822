//! The modules' parameters learnt by the recorder and not yet stored in the bag ([`Pending`]), bounded: the
//! graph may hold hostile nodes, so names, values and the text in all are capped (see the constants). The
//! node finds each module's node, reads its parameters and follows `/parameter_events`; the bag thread
//! stores what is pending ([`Pending::store`]) as MCAP metadata records.

use std::collections::BTreeMap;
use std::sync::Mutex;

use lockstep_bag::BagWriter;

/// Longest parameter name stored, bytes.
pub const MAX_NAME: usize = 256;
/// Longest value text stored, bytes.
pub const MAX_VALUE: usize = 4096;
/// Parameter text stored in all (names and values), bytes.
pub const MAX_BYTES: usize = 8 << 20;
/// Modules whose parameters are read.
pub const MAX_MODULES: usize = 256;
/// Parameters read per module.
pub const MAX_PARAMETERS: usize = 1000;

/// How the parameter records are named and written; the names are shared with the replay, which reads
/// them, so the node passes them in from where both take them.
#[derive(Debug, Clone, Copy)]
pub struct RecordFormat {
    /// `<module>/<parameter>` -> value text.
    pub values: &'static str,
    /// `<module>` -> `node=...;read_ns=...` or `node=...;error=...`.
    pub nodes: &'static str,
    /// change key -> value text or [`deleted`](Self::deleted).
    pub changes: &'static str,
    /// `<module>` -> changes not stored.
    pub dropped: &'static str,
    /// The value text of a deleted parameter.
    pub deleted: &'static str,
    /// The prefix of a value too long to store.
    pub unrecorded: &'static str,
    /// The key of the `n`th change, received at `received_ns`: (received_ns, n, module, parameter).
    pub change_key: fn(u64, u64, &str, &str) -> String,
}

/// One `/parameter_events` message as plain text: who announced it, parameters set (name, value text) and
/// names deleted.
#[derive(Debug, Clone, Default)]
pub struct ParameterEvent {
    pub node: String,
    pub set: Vec<(String, String)>,
    pub deleted: Vec<String>,
}

/// What was learnt and not yet stored in the bag, and which nodes' changes are kept.
pub struct Pending {
    format: RecordFormat,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    values: BTreeMap<String, String>,
    nodes: BTreeMap<String, String>,
    changes: BTreeMap<String, String>,
    /// Changes not stored, per module, and whether that changed since last stored.
    dropped: BTreeMap<String, u64>,
    dropped_dirty: bool,
    bytes: usize,
    next_change: u64,
    /// Fully qualified node name -> module, for modules whose values were asked for.
    watched: BTreeMap<String, String>,
}

impl Inner {
    /// Count `n` bytes against [`MAX_BYTES`]; false when they do not fit.
    fn charge(&mut self, n: usize) -> bool {
        if self.bytes + n > MAX_BYTES {
            return false;
        }
        self.bytes += n;
        true
    }
}

impl Pending {
    pub fn new(format: RecordFormat) -> Self {
        Self {
            format,
            inner: Mutex::default(),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> Option<R> {
        self.inner.lock().ok().map(|mut i| f(&mut i))
    }

    /// The value's text, or `unrecorded:...` when it is longer than [`MAX_VALUE`].
    pub fn bounded_text(&self, text: String) -> String {
        if text.len() > MAX_VALUE {
            let unrecorded = self.format.unrecorded;
            return format!("{unrecorded}{} bytes of text, over {MAX_VALUE}", text.len());
        }
        text
    }

    /// From now on keep the changes `node` announces, as `module`'s.
    pub fn watch_node(&self, node: &str, module: &str) {
        self.with(|i| i.watched.insert(node.to_owned(), module.to_owned()));
    }

    /// Keep `module`'s values read from `node` at `read_ns`.
    pub fn add_values(&self, module: &str, node: &str, read_ns: u64, values: &[(String, String)]) {
        self.with(|i| {
            for (name, text) in values {
                let key = format!("{module}/{name}");
                if i.charge(key.len() + text.len()) {
                    i.values.insert(key, text.clone());
                }
            }
            i.nodes
                .insert(module.to_owned(), format!("node={node};read_ns={read_ns}"));
        });
    }

    /// Keep why `module`'s values could not be read from `node`.
    pub fn add_error(&self, module: &str, node: &str, error: &str) {
        let error: String = error.chars().take(MAX_VALUE).collect();
        self.with(|i| {
            i.nodes
                .insert(module.to_owned(), format!("node={node};error={error}"))
        });
    }

    /// Keep the changes of one `/parameter_events` message, if it comes from a watched node.
    pub fn add_event(&self, event: &ParameterEvent, received_ns: u64) {
        let deleted = self.format.deleted;
        let key = self.format.change_key;
        self.with(|i| {
            let Some(module) = i.watched.get(&event.node).cloned() else {
                return;
            };
            let texts = (event.set.iter().map(|(n, t)| (n, t.as_str())))
                .chain(event.deleted.iter().map(|n| (n, deleted)));
            for (name, text) in texts {
                let key = key(received_ns, i.next_change, &module, name);
                if name.len() <= MAX_NAME && i.charge(key.len() + text.len()) {
                    i.next_change += 1;
                    i.changes.insert(key, text.to_owned());
                } else {
                    *i.dropped.entry(module.clone()).or_default() += 1;
                    i.dropped_dirty = true;
                }
            }
        });
    }

    /// Write what was learnt since last time into the bag.
    pub fn store(&self, writer: &mut BagWriter) -> lockstep_bag::Result<()> {
        let Some((values, nodes, changes, dropped)) = self.with(|i| {
            let dropped = std::mem::take(&mut i.dropped_dirty).then(|| {
                (i.dropped.iter())
                    .map(|(m, n)| (m.clone(), n.to_string()))
                    .collect::<BTreeMap<_, _>>()
            });
            let taken = (
                std::mem::take(&mut i.values),
                std::mem::take(&mut i.nodes),
                std::mem::take(&mut i.changes),
            );
            (taken.0, taken.1, taken.2, dropped)
        }) else {
            return Ok(());
        };
        let f = &self.format;
        for (name, entries) in [(f.values, &values), (f.nodes, &nodes), (f.changes, &changes)] {
            if !entries.is_empty() {
                writer.write_metadata_record(name, entries)?;
            }
        }
        if let Some(dropped) = dropped {
            writer.write_metadata_record(f.dropped, &dropped)?;
        }
        Ok(())
    }
}

/// The parameter names to read of a module: those not over [`MAX_NAME`], sorted, once each, at most
/// [`MAX_PARAMETERS`].
pub fn names_to_read(listed: Vec<String>) -> Vec<String> {
    let mut names: Vec<String> = listed.into_iter().filter(|n| n.len() <= MAX_NAME).collect();
    names.sort();
    names.dedup();
    names.truncate(MAX_PARAMETERS);
    names
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn format() -> RecordFormat {
        RecordFormat {
            values: "lockstep_parameters",
            nodes: "lockstep_parameter_nodes",
            changes: "lockstep_parameter_changes",
            dropped: "lockstep_parameter_changes_dropped",
            deleted: "deleted",
            unrecorded: "unrecorded:",
            change_key: |ns, n, module, name| format!("{ns:020}.{n:06} {module}/{name}"),
        }
    }

    fn event(node: &str, set: &[(&str, &str)], deleted: &[&str]) -> ParameterEvent {
        ParameterEvent {
            node: node.into(),
            set: set.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
            deleted: deleted.iter().map(|n| n.to_string()).collect(),
        }
    }

    #[test]
    fn changes_of_watched_nodes_are_kept_in_order_and_bounded() {
        let pending = Pending::new(format());
        pending.watch_node("/mission_planner", "mission_planner");
        pending.add_event(&event("/other", &[("hold", "integer:1")], &[]), 5);
        pending.add_event(&event("/mission_planner", &[("hold", "integer:2")], &[]), 7);
        pending.add_event(&event("/mission_planner", &[], &["old"]), 9);
        let changes = pending.with(|i| i.changes.clone()).unwrap();
        let listed: Vec<(&str, &str)> = changes.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            listed,
            [
                ("00000000000000000007.000000 mission_planner/hold", "integer:2"),
                ("00000000000000000009.000001 mission_planner/old", "deleted"),
            ]
        );
        let huge = format!("string:{}", "x".repeat(MAX_VALUE));
        assert!(pending.bounded_text(huge).starts_with("unrecorded:"));
        pending.with(|i| i.bytes = MAX_BYTES);
        pending.add_event(&event("/mission_planner", &[("hold", "integer:3")], &[]), 11);
        assert_eq!(pending.with(|i| i.dropped.clone()).unwrap()["mission_planner"], 1);
    }

    #[test]
    fn values_and_read_errors_are_kept_per_module_and_taken_once() {
        let pending = Pending::new(format());
        let values = [("rate".to_string(), "double:0.5".to_string())];
        pending.add_values("m1", "/ns/m1", 12, &values);
        pending.add_error("m2", "/m2", &"e".repeat(MAX_VALUE + 10));
        let (values, nodes) = pending.with(|i| (i.values.clone(), i.nodes.clone())).unwrap();
        assert_eq!(values["m1/rate"], "double:0.5");
        assert_eq!(nodes["m1"], "node=/ns/m1;read_ns=12");
        assert_eq!(nodes["m2"].len(), "node=/m2;error=".len() + MAX_VALUE);
    }

    #[test]
    fn names_to_read_are_short_sorted_and_unique() {
        let listed = vec!["b".into(), "a".into(), "b".into(), "x".repeat(MAX_NAME + 1)];
        assert_eq!(names_to_read(listed), ["a", "b"]);
    }
}
