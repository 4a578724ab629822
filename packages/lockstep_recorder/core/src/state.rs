//! What the recorder has learnt, behind one lock: per-topic statistics and types, the module topology (from
//! dependency headers and declared topologies), the ROS graph of the recorded topics, the topics it cannot
//! record, the bag file index and the error that stopped recording; and the records the bag stores of it.

use std::collections::{BTreeMap, BTreeSet};

use lockstep_trace::{proto, Component, Topology, TopologyBuilder, TraceHeader};

use crate::statistics::Statistics;

/// The ROS graph of one recorded topic: fully qualified names of the nodes publishing and subscribing it
/// (the recorder itself left out).
#[derive(Debug, Default, Clone)]
pub struct TopicGraph {
    pub writers: BTreeSet<String>,
    pub readers: BTreeSet<String>,
}

#[derive(Debug, Default)]
pub struct State {
    pub stats: Statistics,
    /// Recorded topic -> its type.
    pub types: BTreeMap<String, String>,
    pub topology: TopologyBuilder,
    pub graph: BTreeMap<String, TopicGraph>,
    /// Topic -> (type, why it is not recorded).
    pub skipped: BTreeMap<String, (String, String)>,
    pub file_index: usize,
    pub error: Option<String>,
}

/// The topology and ROS graph as the bag stores them while recording (stored again only when they change).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Stored {
    /// One entry per module: `reads=a,b;writes=c`.
    pub topology: BTreeMap<String, String>,
    /// One entry per recorded topic: `writers=/node,...;readers=/node,...`.
    pub graph: BTreeMap<String, String>,
    /// The topology as JSON (metadata.yaml custom_data `lockstep.topology`).
    pub json: String,
}

/// What the bag stores of the topology when it is finished.
#[derive(Debug)]
pub struct Final {
    pub records: Stored,
    /// The topology in the dependency headers' protobuf schema (`lockstep_trace::proto::Topology`).
    pub protobuf: Vec<u8>,
    /// Record `lockstep_topology_check`: `result` (`acyclic` or `cycle`) and, for a cycle, `detail`.
    pub check: BTreeMap<String, String>,
}

impl Final {
    /// custom_data `lockstep.topology_check`: `acyclic` or `cycle: <modules and channels>`.
    pub fn check_summary(&self) -> String {
        match self.check.get("detail") {
            Some(cycle) => format!("cycle: {cycle}"),
            None => "acyclic".to_owned(),
        }
    }
}

impl State {
    /// Count the header's sequence gap and learn the wiring it shows.
    pub fn learn_header(&mut self, header: &TraceHeader) -> Result<(), String> {
        self.stats
            .note_header(&header.channel_name, &header.module_name, header.sequence_num);
        self.topology
            .add_header(header)
            .map_err(|e| format!("header of {}#{}: {e}", header.channel_name, header.sequence_num))
    }

    /// Learn the wiring modules declared themselves.
    pub fn learn_declared(&mut self, declared: &[Component]) -> Result<(), String> {
        for c in declared {
            self.topology
                .add_component(c)
                .map_err(|e| format!("declared topology of {}: {e}", c.module_name))?;
        }
        Ok(())
    }

    /// Whether the topology learnt so far is a DAG; else the cycle, described.
    pub fn topology_check(&self) -> Result<(), String> {
        self.topology.build().map(drop).map_err(|e| e.to_string())
    }

    /// The topology as JSON: `{"module": {"reads": [...], "writes": [...]}}`, sorted.
    pub fn topology_json(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> = (self.topology.components().into_iter())
            .map(|c| {
                let wiring = serde_json::json!({ "reads": c.reader_channels, "writes": c.writer_channels });
                (c.module_name, wiring)
            })
            .collect();
        serde_json::Value::Object(map).to_string()
    }

    /// The topology and graph records as they stand.
    pub fn stored(&self) -> Stored {
        let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(",");
        let topology = (self.topology.components().iter())
            .map(|c| {
                let wiring = format!(
                    "reads={};writes={}",
                    list(&c.reader_channels),
                    list(&c.writer_channels)
                );
                (c.module_name.clone(), wiring)
            })
            .collect();
        let graph = (self.graph.iter())
            .map(|(topic, g)| {
                let wiring = format!("writers={};readers={}", list(&g.writers), list(&g.readers));
                (topic.clone(), wiring)
            })
            .collect();
        Stored {
            topology,
            graph,
            json: self.topology_json(),
        }
    }

    /// What the finished bag stores of the topology.
    pub fn final_records(&self) -> Final {
        let components = self.topology.components();
        let protobuf = proto::encode(&proto::Topology::from(&Topology { components }));
        let check: BTreeMap<String, String> = match self.topology_check() {
            Ok(()) => [("result".to_owned(), "acyclic".to_owned())].into(),
            Err(cycle) => [
                ("result".to_owned(), "cycle".to_owned()),
                ("detail".to_owned(), cycle),
            ]
            .into(),
        };
        Final {
            records: self.stored(),
            protobuf,
            check,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(module: &str, reads: &[&str], writes: &[&str]) -> Component {
        Component::new(
            module,
            reads.iter().map(|s| s.to_string()),
            writes.iter().map(|s| s.to_string()),
        )
    }

    #[test]
    fn records_list_each_modules_wiring_and_each_topics_graph() {
        let mut s = State::default();
        s.learn_declared(&[component("m2", &["/c1"], &["/c2", "/c3"])])
            .unwrap();
        let g = s.graph.entry("/c2".into()).or_default();
        g.writers.insert("/m2".into());
        g.readers.extend(["/b".to_string(), "/a".to_string()]);
        let stored = s.stored();
        assert_eq!(stored.topology["m2"], "reads=/c1;writes=/c2,/c3");
        assert_eq!(stored.graph["/c2"], "writers=/m2;readers=/a,/b");
        assert_eq!(stored.json, r#"{"m2":{"reads":["/c1"],"writes":["/c2","/c3"]}}"#);
        let done = s.final_records();
        assert_eq!(done.check_summary(), "acyclic");
        assert_eq!(done.check.len(), 1);
        assert!(!done.protobuf.is_empty());
    }

    #[test]
    fn a_cycle_is_reported_in_the_check_and_the_status() {
        let mut s = State::default();
        s.learn_declared(&[component("a", &["/y"], &["/x"]), component("b", &["/x"], &["/y"])])
            .unwrap();
        assert!(s.topology_check().is_err());
        let done = s.final_records();
        assert_eq!(done.check["result"], "cycle");
        assert!(
            done.check_summary().starts_with("cycle: "),
            "{}",
            done.check_summary()
        );
    }
}
