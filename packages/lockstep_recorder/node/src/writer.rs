//! The bag thread: owns the [`BagWriter`], counts what it writes, learns the module topology from dependency
//! headers and declared topologies, and finishes the bag when the node's senders are gone.
//!
//! Failures: the first write failure (disk full, file too large, permission lost) stops recording for good.
//! It is logged once and kept in [`RecorderStatus::error`]; the thread then finishes the bag with what it
//! holds (falling back to an in-place reindex when the summary cannot be written), so everything written
//! before the failure stays readable, and goes on counting what arrives as `dropped_after_error`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockstep_bag::{error_chain, BagWriter, TopicSpec, WriterOptions};
use lockstep_recorder::DropReason;
use lockstep_trace::{now_ns, proto, Topology};
use r2r::lockstep_interfaces::msg::{DependencyHeader, ModuleTopology};

use crate::shared::Shared;

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
/// metadata records `lockstep_topology` and `lockstep_graph`), the result of checking it is a DAG
/// (custom_data `lockstep.topology_check`: `acyclic` or `cycle: <modules and channels>`; record
/// `lockstep_topology_check` with `result` and `detail`), and finish the bag.
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
        let check: BTreeMap<String, String> = match s.topology_check() {
            Ok(()) => [("result".to_owned(), "acyclic".to_owned())].into(),
            Err(cycle) => [
                ("result".to_owned(), "cycle".to_owned()),
                ("detail".to_owned(), cycle),
            ]
            .into(),
        };
        (s.topology_json(), topology, graph, protobuf, check)
    });
    if let Some((json, topology, graph, protobuf, check)) = stored {
        writer.set_custom_data("lockstep.topology", json);
        let summary = match check.get("detail") {
            Some(cycle) => format!("cycle: {cycle}"),
            None => "acyclic".to_owned(),
        };
        writer.set_custom_data("lockstep.topology_check", summary);
        writer.write_metadata_record("lockstep_topology_check", &check)?;
        let now = now_ns() as u64;
        let media_type = "application/x-protobuf; proto=lockstep.Topology";
        writer.attach(TOPOLOGY_ATTACHMENT, media_type, now, now, &protobuf)?;
        for (name, entries) in [("lockstep_topology", &topology), ("lockstep_graph", &graph)] {
            writer.write_metadata_record(name, entries)?;
        }
    }
    writer.finish().map(drop)
}
