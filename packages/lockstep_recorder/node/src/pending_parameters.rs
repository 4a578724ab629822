//! The modules' parameters learnt by the recorder and not yet stored in the bag ([`Pending`]), bounded: the
//! graph may hold hostile nodes, so names, values and the text in all are capped (see the constants). The
//! ROS side (finding each module's node, reading its parameters, following `/parameter_events`) is module
//! `parameters`; the bag thread stores what is pending (`Pending::store`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use lockstep_bag::BagWriter;
use lockstep_ros::parameter_text::{self, records};
use r2r::rcl_interfaces::msg::{ParameterEvent, ParameterValue};

/// Longest parameter name stored, bytes.
pub const MAX_NAME: usize = 256;
/// Longest value text stored, bytes.
pub const MAX_VALUE: usize = 4096;
/// Parameter text stored in all (names and values), bytes.
pub const MAX_BYTES: usize = 8 << 20;

/// What was learnt and not yet stored in the bag, and which nodes' changes are kept.
#[derive(Default)]
pub struct Pending {
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
    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> Option<R> {
        self.inner.lock().ok().map(|mut i| f(&mut i))
    }

    /// From now on keep the changes `node` announces, as `module`'s.
    pub(crate) fn watch_node(&self, node: &str, module: &str) {
        self.with(|i| i.watched.insert(node.to_owned(), module.to_owned()));
    }

    pub(crate) fn add_values(&self, module: &str, node: &str, read_ns: u64, values: &[(String, String)]) {
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

    pub(crate) fn add_error(&self, module: &str, node: &str, error: &str) {
        let error: String = error.chars().take(MAX_VALUE).collect();
        self.with(|i| {
            i.nodes
                .insert(module.to_owned(), format!("node={node};error={error}"))
        });
    }

    /// Keep the changes of one `/parameter_events` message, if it comes from a watched node.
    pub(crate) fn add_event(&self, event: &ParameterEvent, received_ns: u64) {
        self.with(|i| {
            let Some(module) = i.watched.get(&event.node).cloned() else {
                return;
            };
            let set = (event.new_parameters.iter()).chain(&event.changed_parameters);
            let texts = set.map(|p| (&p.name, bounded_text(&p.value))).chain(
                event
                    .deleted_parameters
                    .iter()
                    .map(|p| (&p.name, records::DELETED.to_owned())),
            );
            for (name, text) in texts {
                let key = records::change_key(received_ns, i.next_change, &module, name);
                if name.len() <= MAX_NAME && i.charge(key.len() + text.len()) {
                    i.next_change += 1;
                    i.changes.insert(key, text);
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
        for (name, entries) in [
            (records::VALUES, &values),
            (records::NODES, &nodes),
            (records::CHANGES, &changes),
        ] {
            if !entries.is_empty() {
                writer.write_metadata_record(name, entries)?;
            }
        }
        if let Some(dropped) = dropped {
            writer.write_metadata_record(records::DROPPED, &dropped)?;
        }
        Ok(())
    }
}

/// The value's text, or `unrecorded:...` when it is longer than [`MAX_VALUE`].
pub(crate) fn bounded_text(value: &ParameterValue) -> String {
    let text = parameter_text::format(value);
    if text.len() > MAX_VALUE {
        return format!(
            "{}{} bytes of text, over {MAX_VALUE}",
            records::UNRECORDED,
            text.len()
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2r::rcl_interfaces::msg::Parameter;

    fn integer(name: &str, v: i64) -> Parameter {
        Parameter {
            name: name.into(),
            value: parameter_text::parse(&format!("integer:{v}")).unwrap(),
        }
    }

    #[test]
    fn changes_of_watched_nodes_are_kept_in_order_and_bounded() {
        let pending = Pending::default();
        pending.watch_node("/mission_planner", "mission_planner");
        let event = |node: &str, params: Vec<Parameter>| ParameterEvent {
            node: node.into(),
            changed_parameters: params,
            ..ParameterEvent::default()
        };
        pending.add_event(&event("/other", vec![integer("hold", 1)]), 5);
        pending.add_event(&event("/mission_planner", vec![integer("hold", 2)]), 7);
        let deleted = ParameterEvent {
            node: "/mission_planner".into(),
            deleted_parameters: vec![integer("old", 0)],
            ..ParameterEvent::default()
        };
        pending.add_event(&deleted, 9);
        let changes = pending.with(|i| i.changes.clone()).unwrap();
        let listed: Vec<(&str, &str)> = changes.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            listed,
            [
                ("00000000000000000007.000000 mission_planner/hold", "integer:2"),
                ("00000000000000000009.000001 mission_planner/old", "deleted"),
            ]
        );
        let huge = Parameter {
            name: "blob".into(),
            value: parameter_text::parse(&format!("string:{}", "x".repeat(MAX_VALUE))).unwrap(),
        };
        assert!(bounded_text(&huge.value).starts_with("unrecorded:"));
        pending.with(|i| i.bytes = MAX_BYTES);
        pending.add_event(&event("/mission_planner", vec![integer("hold", 3)]), 11);
        assert_eq!(pending.with(|i| i.dropped.clone()).unwrap()["mission_planner"], 1);
    }
}
