//! The bag thread: owns the [`BagWriter`], counts what it writes, learns the module topology from dependency
//! headers and declared topologies, and finishes the bag when the node's senders are gone.
//!
//! Failures: the first write failure (disk full, file too large, permission lost) stops recording for good.
//! It is logged once and kept in [`RecorderStatus::error`]; the thread then finishes the bag with what it
//! holds (falling back to an in-place reindex when the summary cannot be written), so everything written
//! before the failure stays readable, and goes on counting what arrives as `dropped_after_error`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockstep_bag::{error_chain, BagWriter, TopicSpec, WriterOptions};
use lockstep_recorder::{DropReason, QueueBudget, Statistics};
use lockstep_ros::graph::{Endpoint, GraphProbe};
use lockstep_trace::{now_ns, proto, Topology, TopologyBuilder};
use lockstep_trace_ros::{component_from_msg, header_from_msg, topology_to_msg};
use r2r::lockstep_interfaces::msg::{DependencyHeader, ModuleTopology, RecorderStatus, TopicStatistics};

/// Everything the node tells the bag thread.
pub enum Command {
    AddTopic(Box<TopicSpec>),
    /// A received message; its bytes are reserved in [`Shared::budget`] until the thread handles it.
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

/// How long the bag thread naps after emptying its inbox (see `Thread::run`).
const BATCH_NAP: Duration = Duration::from_millis(2);

/// The ROS graph of one recorded topic: fully qualified names of the nodes publishing and subscribing it
/// (the recorder itself left out).
#[derive(Default, Clone)]
struct TopicGraph {
    writers: BTreeSet<String>,
    readers: BTreeSet<String>,
}

#[derive(Default)]
struct State {
    stats: Statistics,
    types: BTreeMap<String, String>,
    topology: TopologyBuilder,
    graph: BTreeMap<String, TopicGraph>,
    skipped: BTreeMap<String, String>,
    file_index: usize,
    error: Option<String>,
}

/// State shared by the node's tasks and the bag thread.
pub struct Shared {
    pub paused: AtomicBool,
    /// Set once recording stopped on a write failure.
    pub stopped: AtomicBool,
    /// Bytes waiting for the bag thread, bounded by parameter `max_queue_bytes`.
    pub budget: QueueBudget,
    /// Messages taken from DDS (recorded or not); the node's drain on shutdown waits for it to stand still.
    pub received: Arc<AtomicU64>,
    /// The same per topic (each topic's task counts into its own counter, without a lock).
    received_by_topic: Mutex<BTreeMap<String, Arc<AtomicU64>>>,
    bag_path: String,
    logger: String,
    state: Mutex<State>,
    /// Asks the ROS graph who publishes and subscribes (with the recorder's own name, to leave it out).
    graph_probe: Mutex<Option<(GraphProbe, String)>>,
}

impl Shared {
    pub fn new(
        paused: bool,
        bag_path: String,
        max_queue_bytes: u64,
        logger: String,
        received: Arc<AtomicU64>,
    ) -> Arc<Self> {
        Arc::new(Self {
            paused: AtomicBool::new(paused),
            stopped: AtomicBool::new(false),
            budget: QueueBudget::new(max_queue_bytes),
            received,
            received_by_topic: Mutex::default(),
            bag_path,
            logger,
            state: Mutex::default(),
            graph_probe: Mutex::default(),
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

    /// From now on, learn the graph of recorded topics with `probe`, leaving out the node `own_name`.
    pub fn attach_graph_probe(&self, probe: GraphProbe, own_name: String) {
        if let Ok(mut slot) = self.graph_probe.lock() {
            *slot = Some((probe, own_name));
        }
    }

    /// Add what the graph shows now for every recorded topic (nodes are only added: a node that left is
    /// still part of what happened during the recording).
    pub fn refresh_graph(&self) {
        let Ok(probe) = self.graph_probe.lock() else {
            return;
        };
        let Some((probe, own_name)) = probe.as_ref() else {
            return;
        };
        let topics: Vec<String> = self
            .with(|s| s.types.keys().cloned().collect())
            .unwrap_or_default();
        let nodes = |endpoints: Result<Vec<Endpoint>, _>| -> Vec<String> {
            endpoints
                .unwrap_or_default()
                .into_iter()
                .map(|e| e.node)
                .filter(|n| n != own_name)
                .collect()
        };
        for topic in topics {
            let writers = nodes(probe.publishers(&topic));
            let readers = nodes(probe.subscriptions(&topic));
            self.with(|s| {
                let entry = s.graph.entry(topic).or_default();
                entry.writers.extend(writers);
                entry.readers.extend(readers);
            });
        }
    }

    /// The counter of messages taken from DDS on `topic`.
    pub fn received_counter(&self, topic: &str) -> Arc<AtomicU64> {
        self.received_by_topic
            .lock()
            .map(|mut m| m.entry(topic.to_owned()).or_default().clone())
            .unwrap_or_default()
    }

    /// Count a message received and not recorded; returns the topic's running count for `reason`.
    pub fn note_dropped(&self, topic: &str, reason: DropReason) -> u64 {
        self.with(|s| {
            let type_name = s.types.get(topic).cloned().unwrap_or_default();
            s.stats.drop_message(topic, &type_name, reason)
        })
        .unwrap_or(0)
    }

    /// The topology learnt so far, as the interface message (sorted by module).
    pub fn topology_msg(&self) -> ModuleTopology {
        let components = self.with(|s| s.topology.components()).unwrap_or_default();
        topology_to_msg(&Topology { components })
    }

    pub fn status(&self) -> RecorderStatus {
        let stamp = lockstep_ros::time::ns_to_time(now_ns());
        let paused = self.paused.load(Ordering::Relaxed);
        let recording = !self.stopped.load(Ordering::Relaxed);
        let received: BTreeMap<String, u64> = self
            .received_by_topic
            .lock()
            .map(|m| {
                m.iter()
                    .map(|(t, n)| (t.clone(), n.load(Ordering::Relaxed)))
                    .collect()
            })
            .unwrap_or_default();
        self.with(|s| RecorderStatus {
            stamp: stamp.clone(),
            bag_path: self.bag_path.clone(),
            paused,
            recording,
            error: s.error.clone().unwrap_or_default(),
            file_index: s.file_index as u32,
            total_messages: s.stats.total_messages(),
            total_bytes: s.stats.total_bytes(),
            queue_bytes: self.budget.used(),
            max_queue_bytes: self.budget.max(),
            topics: s
                .stats
                .topics()
                .map(|(topic, t)| TopicStatistics {
                    topic: topic.to_owned(),
                    type_: t.type_name.clone(),
                    received: received.get(topic).copied().unwrap_or(0),
                    messages: t.messages,
                    bytes: t.bytes,
                    dropped: t.dropped,
                    dropped_queue_full: t.dropped_queue_full,
                    dropped_after_error: t.dropped_after_error,
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

/// Knobs of the bag thread beyond the bag's own options.
pub struct ThreadOptions {
    /// Sleep this long before each write: a slow disk, for tests of the queue bound.
    pub write_delay: Duration,
}

pub struct BagThread {
    pub commands: Sender<Command>,
    pub handle: std::thread::JoinHandle<()>,
}

impl BagThread {
    /// Create the bag (fails if the directory exists) and start the thread that writes it.
    pub fn start(
        output: &str,
        options: WriterOptions,
        thread: ThreadOptions,
        shared: Arc<Shared>,
    ) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let writer = BagWriter::create(output, options).with_context(|| format!("creating bag {output}"))?;
        let (commands, inbox) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("bag-writer".into())
            .spawn(move || Thread::new(writer, thread, shared).run(&inbox))?;
        Ok(Self { commands, handle })
    }
}

struct Thread {
    /// `None` once recording stopped on a failure (the bag was finished then).
    writer: Option<BagWriter>,
    dir: PathBuf,
    options: ThreadOptions,
    shared: Arc<Shared>,
}

impl Thread {
    fn new(writer: BagWriter, options: ThreadOptions, shared: Arc<Shared>) -> Self {
        Self {
            dir: writer.dir().to_path_buf(),
            writer: Some(writer),
            options,
            shared,
        }
    }

    fn run(mut self, inbox: &Receiver<Command>) {
        let mut last_flush = Instant::now();
        let mut unflushed = false;
        loop {
            match inbox.recv_timeout(FLUSH_PERIOD) {
                Ok(command) => {
                    unflushed |= self.apply(command);
                    // Take what else is waiting, then nap briefly instead of parking in `recv` at once: a
                    // thread parked in `recv` is woken (a futex call and a context switch on both sides) by
                    // every single send, which at 10,000 msg/s was most of the recorder's CPU. Napping lets
                    // messages gather and be taken in batches, for at most `BATCH_NAP` of latency.
                    while let Ok(command) = inbox.try_recv() {
                        unflushed |= self.apply(command);
                    }
                    std::thread::sleep(BATCH_NAP);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if unflushed && last_flush.elapsed() >= FLUSH_PERIOD {
                if let Some(Err(e)) = self.writer.as_mut().map(BagWriter::flush) {
                    self.fail(format!("flushing {}: {}", self.dir.display(), error_chain(&e)));
                }
                last_flush = Instant::now();
                unflushed = false;
            }
        }
        if let Some(writer) = self.writer.take() {
            if let Err(e) = finish(writer, &self.shared) {
                let message = format!("finishing the bag {}: {}", self.dir.display(), error_chain(&e));
                r2r::log_error!(&self.shared.logger, "{message}");
                self.shared.with(|s| s.error.get_or_insert(message).clone());
            }
        }
    }

    /// Handle one command; returns whether something was written.
    fn apply(&mut self, command: Command) -> bool {
        let shared = self.shared.clone();
        match command {
            Command::AddTopic(spec) => {
                let (name, type_name) = (spec.name.clone(), spec.type_name.clone());
                shared.with(|s| {
                    s.stats.register(&name, &type_name);
                    s.types.insert(name.clone(), type_name)
                });
                if let Some(writer) = self.writer.as_mut() {
                    if let Err(e) = writer.add_topic(*spec) {
                        self.fail(format!(
                            "adding topic {name} to {}: {}",
                            self.dir.display(),
                            error_chain(&e)
                        ));
                    }
                }
                false
            }
            Command::Write {
                topic,
                received_ns,
                data,
            } => {
                let written = self.write(&topic, received_ns, &data);
                shared.budget.release(data.len() as u64);
                written
            }
            Command::Header(header) => {
                if let Some(Err(e)) = shared.with(|s| s.learn_header(&header)) {
                    r2r::log_warn!(&shared.logger, "{e}");
                }
                false
            }
            Command::Declared(topology) => {
                if let Some(Err(e)) = shared.with(|s| s.learn_declared(&topology)) {
                    r2r::log_warn!(&shared.logger, "{e}");
                }
                false
            }
            Command::Split(reply) => {
                let outcome = match self.writer.as_mut() {
                    Some(writer) => writer
                        .split_now()
                        .map(|()| writer.file_index())
                        .map_err(|e| error_chain(&e)),
                    None => Err(self.stopped_reason()),
                };
                match &outcome {
                    Ok(index) => {
                        shared.with(|s| s.file_index = *index);
                    }
                    Err(e) if self.writer.is_some() => {
                        self.fail(format!("splitting {}: {e}", self.dir.display()))
                    }
                    Err(_) => {}
                }
                let _ = reply.send(outcome);
                false
            }
        }
    }

    fn write(&mut self, topic: &Arc<str>, received_ns: u64, data: &[u8]) -> bool {
        let Some(writer) = self.writer.as_mut() else {
            self.shared.note_dropped(topic, DropReason::AfterError);
            return false;
        };
        if !self.options.write_delay.is_zero() {
            std::thread::sleep(self.options.write_delay);
        }
        match writer.write(topic, received_ns, data) {
            Ok(()) => {
                self.shared.with(|s| {
                    let type_name = s.types.get(&**topic).cloned().unwrap_or_default();
                    s.stats.record(topic, &type_name, data.len());
                });
                true
            }
            Err(e) => {
                self.fail(format!(
                    "writing {topic} to {}: {}",
                    self.dir.display(),
                    error_chain(&e)
                ));
                self.shared.note_dropped(topic, DropReason::AfterError);
                false
            }
        }
    }

    fn stopped_reason(&self) -> String {
        let error = self
            .shared
            .with(|s| s.error.clone())
            .flatten()
            .unwrap_or_default();
        format!("recording stopped: {error}")
    }

    /// Stop recording for good on the first failure: log it once, keep it in the status, and make what was
    /// written so far a readable bag.
    fn fail(&mut self, what: String) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        let Some(writer) = self.writer.take() else {
            return;
        };
        r2r::log_error!(&self.shared.logger, "recording stopped: {what}");
        let repaired = match finish(writer, &self.shared) {
            Ok(()) => "the bag holds everything written before it".to_owned(),
            // The summary could not be written either (the same full disk): keep what is on disk, up to the
            // last complete chunk, the way `lockstep bag reindex` does after a crash.
            Err(_) => match lockstep_bag::reindex(&self.dir) {
                Ok(report) => {
                    let kept: u64 = report.files.iter().map(|f| f.messages).sum();
                    self.shared.with(|s| {
                        for topic in &report.metadata.topics_with_message_count {
                            s.stats.keep_only(&topic.topic_metadata.name, topic.message_count);
                        }
                    });
                    format!("the bag was reindexed and holds the {kept} messages flushed before it")
                }
                Err(e) => format!(
                    "the bag could not be finished ({}); run `lockstep bag reindex {}` once there is room",
                    error_chain(&e),
                    self.dir.display()
                ),
            },
        };
        r2r::log_error!(&self.shared.logger, "{repaired}");
        self.shared
            .with(|s| s.error.get_or_insert(format!("{what}; {repaired}")).clone());
    }
}

/// Name of the MCAP attachment holding the topology in the patent's protobuf schema
/// (`lockstep_trace::proto::Topology`).
pub const TOPOLOGY_ATTACHMENT: &str = "lockstep/topology.pb";

/// Store the topology (the protobuf attachment, metadata.yaml custom_data `lockstep.topology`, and MCAP
/// metadata records `lockstep_topology` and `lockstep_graph`) and finish the bag.
///
/// `lockstep_graph` has one entry per recorded topic: `writers=<node>,...;readers=<node>,...` from the ROS
/// graph (the recorder itself left out).
fn finish(mut writer: BagWriter, shared: &Shared) -> lockstep_bag::Result<()> {
    shared.refresh_graph();
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
            .graph
            .iter()
            .map(|(topic, g)| {
                let wiring = format!("writers={};readers={}", list(&g.writers), list(&g.readers));
                (topic.clone(), wiring)
            })
            .collect();
        (s.topology_json(), topology, graph, protobuf)
    });
    if let Some((json, topology, graph, protobuf)) = stored {
        writer.set_custom_data("lockstep.topology", json);
        let now = now_ns() as u64;
        let media_type = "application/x-protobuf; proto=lockstep.Topology";
        writer.attach(TOPOLOGY_ATTACHMENT, media_type, now, now, &protobuf)?;
        for (name, entries) in [("lockstep_topology", &topology), ("lockstep_graph", &graph)] {
            writer.write_metadata_record(name, entries)?;
        }
    }
    writer.finish().map(drop)
}
