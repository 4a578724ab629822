//! Learning the module topology (which module reads and writes which channel) and checking it is a DAG.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::model::{module_edges, Component, InputRecord, Topology, TraceHeader, EXTERNAL_MODULE};
use crate::{Error, Result};

/// Accumulates "module M reads/writes channel C" facts from headers, declared components and the ROS graph,
/// and builds a [`Topology`] whose output is sorted (deterministic whatever the order facts arrived in).
///
/// Facts from headers: the header's module writes the header's channel and reads each input's channel; each
/// input's module writes that channel and reads its sources' channels. Inputs synthesized for untraced
/// publishers ([`EXTERNAL_MODULE`]) contribute no writer: their channels are the topology's external inputs.
/// The builder merges whatever it is given; leaving out infrastructure nodes (the recorder itself,
/// `/rosout`, parameter events) is the caller's choice.
#[derive(Debug, Clone, Default)]
pub struct TopologyBuilder {
    modules: BTreeMap<String, Component>,
}

impl TopologyBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    fn component(&mut self, module: &str) -> &mut Component {
        self.modules
            .entry(module.to_owned())
            .or_insert_with(|| Component::new(module, Vec::<String>::new(), Vec::<String>::new()))
    }

    /// `module` reads `channel` (e.g. the ROS graph says node `module` subscribes `channel`).
    pub fn add_reader(&mut self, module: &str, channel: &str) {
        if module != EXTERNAL_MODULE && !channel.is_empty() {
            self.component(module).reader_channels.insert(channel.to_owned());
        }
    }

    /// `module` writes `channel` (e.g. the ROS graph says node `module` publishes `channel`).
    pub fn add_writer(&mut self, module: &str, channel: &str) {
        if module != EXTERNAL_MODULE && !channel.is_empty() {
            self.component(module).writer_channels.insert(channel.to_owned());
        }
    }

    /// Merge a declared component (from a module's latched topology or a bag).
    pub fn add_component(&mut self, component: &Component) -> Result<()> {
        require(&component.module_name, "module_name", || {
            format!(
                "component reading {:?} and writing {:?}",
                component.reader_channels, component.writer_channels
            )
        })?;
        // Make sure a module with no channels at all still appears.
        self.component(&component.module_name);
        for channel in &component.reader_channels {
            self.add_reader(&component.module_name, channel);
        }
        for channel in &component.writer_channels {
            self.add_writer(&component.module_name, channel);
        }
        Ok(())
    }

    /// Merge the facts one header carries (both levels). A header without a channel name is refused.
    pub fn add_header(&mut self, header: &TraceHeader) -> Result<()> {
        require(&header.channel_name, "channel_name", || {
            format!(
                "header #{} of module `{}`",
                header.sequence_num, header.module_name
            )
        })?;
        if header.is_external() {
            return Ok(());
        }
        self.add_writer(&header.module_name, &header.channel_name);
        for input in &header.inputs {
            self.add_input(&header.module_name, input);
        }
        Ok(())
    }

    fn add_input(&mut self, reader: &str, input: &InputRecord) {
        self.add_reader(reader, &input.channel_name);
        self.add_writer(&input.module_name, &input.channel_name);
        for source in &input.sources {
            self.add_reader(&input.module_name, &source.channel_name);
            self.add_writer(&source.module_name, &source.channel_name);
        }
    }

    /// The components learned so far, sorted by module name, without checking for cycles.
    pub fn components(&self) -> Vec<Component> {
        self.modules.values().cloned().collect()
    }

    /// The topology, or [`Error::Cycle`] naming one cycle (modules and the channels linking them) if a
    /// module depends, directly or not, on its own output.
    pub fn build(&self) -> Result<Topology> {
        let topology = Topology {
            components: self.components(),
        };
        match find_cycle(&topology) {
            Some((modules, channels)) => Err(Error::Cycle { modules, channels }),
            None => Ok(topology),
        }
    }
}

/// [`Error::Empty`] naming `field` of `what` (described only when it is empty) unless `value` is set.
fn require(value: &str, field: &'static str, what: impl FnOnce() -> String) -> Result<()> {
    if value.is_empty() {
        return Err(Error::Empty { what: what(), field });
    }
    Ok(())
}

fn find_cycle(topology: &Topology) -> Option<(Vec<String>, Vec<String>)> {
    let edges = module_edges(topology);
    let mut graph = DiGraph::<String, String>::new();
    let mut index: BTreeMap<String, NodeIndex> = BTreeMap::new();
    for component in &topology.components {
        index.insert(
            component.module_name.clone(),
            graph.add_node(component.module_name.clone()),
        );
    }
    for ((from, to), channel) in &edges {
        if let (Some(&a), Some(&b)) = (index.get(from), index.get(to)) {
            graph.add_edge(a, b, channel.clone());
        }
    }
    // A strongly connected component with more than one module, or a module reading its own output, is a
    // cycle. Report the one holding the alphabetically first module, so the error is reproducible.
    let start = tarjan_scc(&graph)
        .into_iter()
        .filter(|scc| scc.len() > 1 || scc.iter().any(|&n| graph.contains_edge(n, n)))
        .filter_map(|scc| {
            scc.iter()
                .map(|&n| graph[n].clone())
                .min()
                .map(|name| (name, scc))
        })
        .min_by(|a, b| a.0.cmp(&b.0))?;
    let (start_name, scc) = start;
    let members: BTreeSet<String> = scc.iter().map(|&n| graph[n].clone()).collect();
    shortest_cycle(&edges, &members, &start_name)
}

/// The shortest cycle through `start` inside `members` (breadth-first over sorted edges, so deterministic).
fn shortest_cycle(
    edges: &BTreeMap<(String, String), String>,
    members: &BTreeSet<String>,
    start: &str,
) -> Option<(Vec<String>, Vec<String>)> {
    let successors = |module: &str| -> Vec<(String, String)> {
        edges
            .iter()
            .filter(|((from, to), _)| from == module && members.contains(to))
            .map(|((_, to), channel)| (to.clone(), channel.clone()))
            .collect()
    };
    // parent[module] = (previous module, channel used)
    let mut parent: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut queue = VecDeque::from([start.to_owned()]);
    while let Some(module) = queue.pop_front() {
        for (next, channel) in successors(&module) {
            if next == start {
                // Walk back from `module` to `start`.
                let mut modules = vec![module.clone()];
                let mut channels = vec![channel];
                let mut current = module.clone();
                while current != start {
                    let (previous, via) = parent.get(&current)?.clone();
                    modules.push(previous.clone());
                    channels.push(via);
                    current = previous;
                }
                modules.reverse();
                channels.reverse();
                return Some((modules, channels));
            }
            if !parent.contains_key(&next) && next != start {
                parent.insert(next.clone(), (module.clone(), channel));
                queue.push_back(next);
            }
        }
    }
    None
}
