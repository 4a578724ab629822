//! Where a recording's module topology comes from: the recorder's metadata records when the bag holds
//! them, otherwise the dependency headers on the `<channel>/lockstep_header` topics. A header names the
//! module that wrote it, the channel it wrote, and the channels (and producing modules) of the inputs it
//! read: together they are the wiring lock-step replay needs. This is what lets a bag that holds no
//! record replay: a sqlite3 or MCAP copy written by another tool (`rosbags`, `ros2 bag convert`), a bag
//! recorded by `ros2 bag record` from traced modules, or a recording cut before the recorder stored it.

use std::collections::BTreeSet;

use lockstep_bag::cdr::Schema;
use lockstep_bag::{BagReader, MetadataRecord, ReadOptions};
use lockstep_trace::{Component, TopologyBuilder};

use super::error::{LockstepError, Result};
use super::header::{header_from_value, HEADER_SUFFIX};

/// The MCAP metadata record holding the module topology when the recorder closed the bag (one entry per
/// module: `reads=a,b;writes=c`).
pub const TOPOLOGY_RECORD: &str = "lockstep_topology";

/// The same, written by the recorder whenever the topology grew during the recording.
pub const TOPOLOGY_UPDATE_RECORD: &str = "lockstep_topology_update";

/// Where the module topology of a [`super::Recording`] came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologySource {
    /// The metadata records lockstep_recorder stores (`lockstep_topology` when it closes the bag,
    /// `lockstep_topology_update` whenever the topology grew): their union.
    Record,
    /// The bag holds no topology record: rebuilt from the dependency headers of this many
    /// `<channel>/lockstep_header` topics (each header: its module writes its channel and reads its
    /// inputs' channels).
    Headers {
        /// Header topics that held at least one header.
        sidecars: usize,
    },
}

impl std::fmt::Display for TopologySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Record => write!(f, "the recorder's topology record"),
            Self::Headers { sidecars } => write!(
                f,
                "rebuilt from {sidecars} dependency header topic{} (no topology record in the bag)",
                if *sidecars == 1 { "" } else { "s" }
            ),
        }
    }
}

/// `reads=a,b;writes=c` (the recorder's `lockstep_topology` record entry) as a component of `module`.
fn component(module: &str, wiring: &str) -> Component {
    let part = |key: &str| -> Vec<String> {
        wiring
            .split(';')
            .find_map(|p| p.strip_prefix(key))
            .map(|list| {
                list.split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    Component::new(module, part("reads="), part("writes="))
}

/// The topology's facts and where they came from: the union of the topology records in `records`, or
/// when there is none, the facts of every dependency header of the bag. Fails naming the bag when it
/// holds neither, and naming topic and index when a header cannot be read. The caller builds (and so
/// checks for cycles).
pub(crate) fn topology_facts(
    reader: &BagReader,
    records: &[MetadataRecord],
) -> Result<(TopologyBuilder, TopologySource)> {
    // The recorder stores the topology learnt so far whenever it grows (`lockstep_topology_update`)
    // and in full when it closes the bag (`lockstep_topology`); a recording cut short and repaired
    // holds only the former. Their union is the topology: each record only ever adds wiring.
    let mut stored = records
        .iter()
        .filter(|r| r.name == TOPOLOGY_RECORD || r.name == TOPOLOGY_UPDATE_RECORD)
        .peekable();
    let mut builder = TopologyBuilder::new();
    if stored.peek().is_some() {
        for (module, wiring) in stored.flat_map(|r| &r.entries) {
            builder
                .add_component(&component(module, wiring))
                .map_err(LockstepError::Topology)?;
        }
        return Ok((builder, TopologySource::Record));
    }
    let sidecars = headers_into(reader, &mut builder)?;
    if sidecars == 0 {
        return Err(LockstepError::NoTopology {
            bag: reader.path().display().to_string(),
        });
    }
    Ok((builder, TopologySource::Headers { sidecars }))
}

/// Adds the facts of every dependency header of the bag to `builder`; returns how many header topics
/// held at least one header (0: the bag has no header topic, or only empty ones).
fn headers_into(reader: &BagReader, builder: &mut TopologyBuilder) -> Result<usize> {
    let sidecars: Vec<_> = reader
        .topics()
        .iter()
        .filter(|t| t.metadata.name.ends_with(HEADER_SUFFIX))
        .collect();
    let Some(first) = sidecars.first() else {
        return Ok(0);
    };
    // All header topics share one type: the first usable definition decodes them all (as load() does).
    let definition = sidecars
        .iter()
        .find_map(|t| {
            t.definition
                .as_ref()
                .filter(|d| d.encoding == "ros2msg" && !d.text.trim().is_empty())
                .map(|d| (&t.metadata, d))
        })
        .ok_or_else(|| LockstepError::Header {
            what: first.metadata.name.clone(),
            reason: "the bag holds no ros2msg definition of the header type".into(),
        })?;
    let (topic, definition) = definition;
    let schema = Schema::parse(&topic.type_name, &definition.text).map_err(|e| LockstepError::Header {
        what: topic.name.clone(),
        reason: e.to_string(),
    })?;
    let names: Vec<&str> = sidecars.iter().map(|t| t.metadata.name.as_str()).collect();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut index_by_topic = std::collections::BTreeMap::<String, usize>::new();
    for message in reader.messages_with(ReadOptions::topics(names)) {
        let message = message?;
        let topic: &str = &message.topic;
        let index = index_by_topic.entry(topic.to_owned()).or_insert(0);
        let what = format!("{topic} message {index}");
        *index += 1;
        let value = schema.decode(&message.data).map_err(|e| LockstepError::Header {
            what: what.clone(),
            reason: e.to_string(),
        })?;
        let header = header_from_value(&value, &what)?;
        builder.add_header(&header).map_err(LockstepError::Topology)?;
        seen.insert(topic.to_owned());
    }
    Ok(seen.len())
}
