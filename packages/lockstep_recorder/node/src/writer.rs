//! The bag thread: owns the [`BagWriter`], counts what it writes, learns the module topology from dependency
//! headers and declared topologies, and finishes the bag when the node's senders are gone.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockstep_bag::{BagWriter, TopicSpec, WriterOptions};
use lockstep_recorder::Statistics;
use lockstep_trace::{proto, Topology, TopologyBuilder};
use lockstep_trace_ros::{component_from_msg, header_from_msg, topology_to_msg};
use r2r::builtin_interfaces::msg::Time;
use r2r::lockstep_interfaces::msg::{DependencyHeader, ModuleTopology, RecorderStatus, TopicStatistics};

/// Everything the node tells the bag thread.
pub enum Command {
    AddTopic(Box<TopicSpec>),
    Write {
        topic: Arc<str>,
        received_ns: u64,
        data: Vec<u8>,
    },
    /// A dependency header seen on a `*/lockstep_header` topic.
    Header(Box<DependencyHeader>),
    /// A module's own declaration of its wiring (`/lockstep/topology/<module>`).
    Declared(ModuleTopology),
    /// Close the current file and start the next; answers the new file index or why not.
    Split(tokio::sync::oneshot::Sender<Result<usize, String>>),
}

/// The longest a received message waits in an open chunk before it is flushed to disk; bounds what a
/// `kill -9` can lose.
const FLUSH_PERIOD: Duration = Duration::from_millis(500);

#[derive(Default)]
struct State {
    stats: Statistics,
    types: BTreeMap<String, String>,
    topology: TopologyBuilder,
    publishers: BTreeMap<String, BTreeSet<String>>,
    skipped: BTreeMap<String, String>,
    file_index: usize,
    error: Option<String>,
}

/// State shared by the node's tasks and the bag thread.
pub struct Shared {
    pub paused: AtomicBool,
    bag_path: String,
    state: Mutex<State>,
}

impl Shared {
    pub fn new(paused: bool, bag_path: String) -> Arc<Self> {
        Arc::new(Self {
            paused: AtomicBool::new(paused),
            bag_path,
            state: Mutex::default(),
        })
    }

    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> Option<R> {
        self.state.lock().ok().map(|mut s| f(&mut s))
    }

    pub fn note_skipped(&self, topic: &str, type_name: &str, reason: &str) {
        self.with(|s| {
            s.skipped
                .insert(topic.to_owned(), format!("{type_name}: {reason}"))
        });
    }

    pub fn note_publisher(&self, topic: &str, node: &str) {
        self.with(|s| {
            s.publishers
                .entry(topic.to_owned())
                .or_default()
                .insert(node.to_owned())
        });
    }

    /// The topology learnt so far, as the interface message (sorted by module).
    pub fn topology_msg(&self) -> ModuleTopology {
        let components = self.with(|s| s.topology.components()).unwrap_or_default();
        topology_to_msg(&Topology { components })
    }

    pub fn status(&self) -> RecorderStatus {
        let now = now_ns();
        let stamp = Time {
            sec: (now / 1_000_000_000) as i32,
            nanosec: (now % 1_000_000_000) as u32,
        };
        let paused = self.paused.load(std::sync::atomic::Ordering::Relaxed);
        self.with(|s| RecorderStatus {
            stamp: stamp.clone(),
            bag_path: self.bag_path.clone(),
            paused,
            file_index: s.file_index as u32,
            total_messages: s.stats.total_messages(),
            total_bytes: s.stats.total_bytes(),
            topics: s
                .stats
                .topics()
                .map(|(topic, t)| TopicStatistics {
                    topic: topic.to_owned(),
                    type_: t.type_name.clone(),
                    messages: t.messages,
                    bytes: t.bytes,
                    dropped: t.dropped,
                })
                .collect(),
        })
        .unwrap_or_default()
    }
}

impl State {
    fn learn_header(&mut self, header: &DependencyHeader) -> Result<(), String> {
        self.stats
            .note_header(&header.channel_name, &header.module_name, header.sequence_num);
        self.topology
            .add_header(&header_from_msg(header))
            .map_err(|e| format!("header of {}#{}: {e}", header.channel_name, header.sequence_num))
    }

    fn learn_declared(&mut self, declared: &ModuleTopology) -> Result<(), String> {
        for c in &declared.components {
            self.topology
                .add_component(&component_from_msg(c))
                .map_err(|e| format!("declared topology of {}: {e}", c.module_name))?;
        }
        Ok(())
    }

    /// The topology as JSON: `{"module": {"reads": [...], "writes": [...]}}`, sorted.
    fn topology_json(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> = self
            .topology
            .components()
            .into_iter()
            .map(|c| {
                let wiring = serde_json::json!({ "reads": c.reader_channels, "writes": c.writer_channels });
                (c.module_name, wiring)
            })
            .collect();
        serde_json::Value::Object(map).to_string()
    }
}

pub struct BagThread {
    pub commands: Sender<Command>,
    pub handle: std::thread::JoinHandle<()>,
}

impl BagThread {
    /// Create the bag (fails if the directory exists) and start the thread that writes it.
    pub fn start(output: &str, options: WriterOptions, shared: Arc<Shared>) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let writer = BagWriter::create(output, options).with_context(|| format!("creating bag {output}"))?;
        let (commands, inbox) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("bag-writer".into())
            .spawn(move || run(writer, inbox, &shared))?;
        Ok(Self { commands, handle })
    }
}

fn run(mut writer: BagWriter, inbox: Receiver<Command>, shared: &Shared) {
    let mut last_flush = Instant::now();
    let mut unflushed = false;
    loop {
        match inbox.recv_timeout(FLUSH_PERIOD) {
            Ok(command) => {
                if let Err(e) = apply(&mut writer, command, shared) {
                    eprintln!("lockstep_recorder: {e}");
                    shared.with(|s| s.error = Some(e));
                }
                unflushed = true;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if unflushed && last_flush.elapsed() >= FLUSH_PERIOD {
            if let Err(e) = writer.flush() {
                eprintln!("lockstep_recorder: flushing the bag: {e}");
            }
            last_flush = Instant::now();
            unflushed = false;
        }
    }
    finish(writer, shared);
}

fn apply(writer: &mut BagWriter, command: Command, shared: &Shared) -> Result<(), String> {
    match command {
        Command::AddTopic(spec) => {
            let (name, type_name) = (spec.name.clone(), spec.type_name.clone());
            writer
                .add_topic(*spec)
                .map_err(|e| format!("adding topic {name}: {e}"))?;
            shared.with(|s| s.types.insert(name, type_name));
        }
        Command::Write {
            topic,
            received_ns,
            data,
        } => {
            writer
                .write(&topic, received_ns, &data)
                .map_err(|e| format!("writing {topic}: {e}"))?;
            shared.with(|s| {
                let type_name = s.types.get(&*topic).cloned().unwrap_or_default();
                s.stats.record(&topic, &type_name, data.len());
            });
        }
        Command::Header(header) => {
            shared.with(|s| s.learn_header(&header)).unwrap_or(Ok(()))?;
        }
        Command::Declared(topology) => {
            shared.with(|s| s.learn_declared(&topology)).unwrap_or(Ok(()))?;
        }
        Command::Split(reply) => {
            let outcome = writer
                .split_now()
                .map(|()| writer.file_index())
                .map_err(|e| e.to_string());
            if let Ok(index) = outcome {
                shared.with(|s| s.file_index = index);
            }
            let _ = reply.send(outcome);
        }
    }
    Ok(())
}

/// Name of the MCAP attachment holding the topology in the patent's protobuf schema
/// (`lockstep_trace::proto::Topology`).
pub const TOPOLOGY_ATTACHMENT: &str = "lockstep/topology.pb";

/// Store the topology (the protobuf attachment, metadata.yaml custom_data `lockstep.topology`, and MCAP
/// metadata records `lockstep_topology` and `lockstep_graph`) and finish the bag.
fn finish(mut writer: BagWriter, shared: &Shared) {
    let stored = shared.with(|s| {
        let components = s.topology.components();
        let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(",");
        let topology: BTreeMap<String, String> = components
            .iter()
            .map(|c| {
                let wiring = format!(
                    "reads={};writes={}",
                    list(&c.reader_channels),
                    list(&c.writer_channels)
                );
                (c.module_name.clone(), wiring)
            })
            .collect();
        let protobuf = proto::encode(&proto::Topology::from(&Topology { components }));
        let graph: BTreeMap<String, String> = s
            .publishers
            .iter()
            .map(|(topic, nodes)| (topic.clone(), nodes.iter().cloned().collect::<Vec<_>>().join(",")))
            .collect();
        (s.topology_json(), topology, graph, protobuf)
    });
    if let Some((json, topology, graph, protobuf)) = stored {
        writer.set_custom_data("lockstep.topology", json);
        let now = now_ns();
        let media_type = "application/x-protobuf; proto=lockstep.Topology";
        if let Err(e) = writer.attach(TOPOLOGY_ATTACHMENT, media_type, now, now, &protobuf) {
            eprintln!("lockstep_recorder: storing {TOPOLOGY_ATTACHMENT}: {e}");
        }
        for (name, entries) in [("lockstep_topology", &topology), ("lockstep_graph", &graph)] {
            if let Err(e) = writer.write_metadata_record(name, entries) {
                eprintln!("lockstep_recorder: storing {name}: {e}");
            }
        }
    }
    if let Err(e) = writer.finish() {
        eprintln!("lockstep_recorder: finishing the bag: {e}");
    }
}

/// Wall-clock time in nanoseconds since the Unix epoch (what rosbag2 stamps received messages with).
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
