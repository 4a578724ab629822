//! The bag thread: owns the [`BagWriter`], counts what it writes, learns the module topology from dependency
//! headers and declared topologies, and finishes the bag when the node's senders are gone.
//!
//! What a `kill -9` leaves: every flushed chunk, and the topology learnt so far: whenever it grew, the thread
//! stores it (record `lockstep_topology_update`, the ROS graph as `lockstep_graph_update`, and metadata.yaml's
//! custom_data) before the next flush, so a cut recording repaired by `lockstep bag reindex` still replays.
//!
//! Failures: the first write failure (disk full, file too large, permission lost) stops recording for good.
//! The thread finishes the bag with what it holds, or, when that fails too, repairs it in place the way
//! `lockstep bag reindex --in-place` does (which replaces nothing unless its copy is complete on disk). Either
//! way it then counts the messages actually in the bag files, so the status never counts a message that
//! did not reach the disk, removes temporary files, logs one error line, keeps it in
//! [`Status::error`](crate::Status::error) and goes on counting what arrives as `dropped_after_error`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockstep_bag::{error_chain, BagWriter, TopicSpec, WriterOptions};
use lockstep_trace::{now_ns, Component, TraceHeader};

use crate::error::{Error, Result};
use crate::recording::{Level, Recording};
use crate::snapshot::{Held, SnapshotBuffer};
use crate::statistics::DropReason;

/// Everything the node tells the bag thread.
pub enum Command {
    AddTopic(Box<TopicSpec>),
    /// A received message; its bytes are reserved in [`Recording::budget`] until the thread handles it.
    Write {
        topic: Arc<str>,
        received_ns: u64,
        data: Vec<u8>,
    },
    /// A dependency header seen on a `*/lockstep_header` topic.
    Header(Box<TraceHeader>),
    /// A module's own declaration of its wiring (`/lockstep/topology/<module>`).
    Declared(Vec<Component>),
    /// Close the current file and start the next; answered with the new file index or why not.
    Split(SplitReply),
    /// Snapshot mode: write the messages held in memory (into a new file after the first snapshot).
    Snapshot(SnapshotReply),
}

/// What one snapshot wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub messages: u64,
    pub bytes: u64,
    /// The bag file written (its index).
    pub file_index: usize,
    /// Messages that left the cache since the previous snapshot, pushed out by newer ones.
    pub evicted: u64,
}

/// Takes the answer to a [`Command::Snapshot`].
pub type SnapshotReply = Box<dyn FnOnce(std::result::Result<Snapshot, String>) + Send>;

/// Takes the answer to a [`Command::Split`].
pub type SplitReply = Box<dyn FnOnce(std::result::Result<usize, String>) + Send>;

/// The longest a received message waits in an open chunk before it is flushed to disk; bounds what a
/// `kill -9` can lose.
const FLUSH_PERIOD: Duration = Duration::from_millis(500);

/// How long the bag thread naps after emptying its inbox (see `Thread::run`).
const BATCH_NAP: Duration = Duration::from_millis(2);

/// Knobs of the bag thread beyond the bag's own options.
pub struct ThreadOptions {
    /// Sleep this long before each write: a slow disk, for tests of the queue bound.
    pub write_delay: Duration,
    /// Snapshot mode: keep at most this many bytes of messages in memory until a snapshot.
    pub snapshot_bytes: Option<u64>,
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
        shared: Arc<Recording>,
    ) -> Result<Self> {
        let writer = BagWriter::create(output, options).map_err(|source| Error::CreateBag {
            output: output.to_owned(),
            source,
        })?;
        let (commands, inbox) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("bag-writer".into())
            .spawn(move || Thread::new(writer, thread, shared).run(&inbox))
            .map_err(Error::Thread)?;
        Ok(Self { commands, handle })
    }
}

struct Thread {
    /// `None` once recording stopped on a failure (the bag was finished then).
    writer: Option<BagWriter>,
    dir: PathBuf,
    options: ThreadOptions,
    shared: Arc<Recording>,
    /// The topology and graph records last stored in the bag (to store them again only when they grew).
    stored: Option<crate::state::Stored>,
    /// Snapshot mode's messages in memory, and the snapshots written so far.
    snapshot: Option<SnapshotBuffer>,
    snapshots: usize,
}

impl Thread {
    fn new(writer: BagWriter, options: ThreadOptions, shared: Arc<Recording>) -> Self {
        Self {
            dir: writer.dir().to_path_buf(),
            writer: Some(writer),
            snapshot: options.snapshot_bytes.map(SnapshotBuffer::new),
            snapshots: 0,
            options,
            shared,
            stored: None,
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
                self.store_progress();
                if let Some(Err(e)) = self.writer.as_mut().map(BagWriter::flush) {
                    self.fail(format!("flushing {}: {}", self.dir.display(), error_chain(&e)));
                }
                last_flush = Instant::now();
                unflushed = false;
            }
        }
        if let Some(writer) = self.writer.take() {
            if let Err(e) = finish(writer, &self.shared) {
                let what = format!("finishing the bag {}: {}", self.dir.display(), error_chain(&e));
                self.after_failure(what, false);
            }
        }
    }

    /// Store the topology and graph learnt so far when they differ from what the bag holds.
    fn store_progress(&mut self) {
        let Some(now) = self.shared.with(|s| s.stored()) else {
            return;
        };
        let Some(writer) = self.writer.as_mut() else {
            return;
        };
        let before = self.stored.take().unwrap_or_default();
        let mut outcome = Ok(());
        if now.topology != before.topology {
            writer.set_custom_data("lockstep.topology", now.json.clone());
            outcome = writer.write_metadata_record("lockstep_topology_update", &now.topology);
        }
        if now.graph != before.graph {
            outcome =
                outcome.and_then(|()| writer.write_metadata_record("lockstep_graph_update", &now.graph));
        }
        // The modules' parameters learnt since (see `parameters`).
        outcome = outcome.and_then(|()| self.shared.parameters.store(writer));
        match outcome {
            Ok(()) => self.stored = Some(now),
            Err(e) => self.fail(format!(
                "storing the topology in {}: {}",
                self.dir.display(),
                error_chain(&e)
            )),
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
                let size = data.len() as u64;
                let written = match self.snapshot.as_mut() {
                    Some(buffer) => {
                        buffer.push(Held {
                            topic,
                            received_ns,
                            data,
                        });
                        shared.held_bytes.store(buffer.bytes(), Ordering::Relaxed);
                        false
                    }
                    None => self.write(&topic, received_ns, &data),
                };
                shared.budget.release(size);
                written
            }
            Command::Snapshot(reply) => {
                reply(self.write_snapshot());
                false
            }
            Command::Header(header) => {
                if let Some(Err(e)) = shared.with(|s| s.learn_header(&header)) {
                    shared.log(Level::Warn, &e);
                }
                false
            }
            Command::Declared(topology) => {
                if let Some(Err(e)) = shared.with(|s| s.learn_declared(&topology)) {
                    shared.log(Level::Warn, &e);
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
                reply(outcome);
                false
            }
        }
    }

    /// Write what snapshot mode holds, in the order received: into the current file the first time, into a
    /// new file after that; flushed before the answer, so a snapshot answered is on disk.
    fn write_snapshot(&mut self) -> std::result::Result<Snapshot, String> {
        let Some(buffer) = self.snapshot.as_mut() else {
            return Err(
                "the recorder is not in snapshot mode (parameter snapshot_mode, flag --snapshot-mode)".into(),
            );
        };
        let evicted = buffer.evicted;
        let held = buffer.take();
        self.shared.held_bytes.store(0, Ordering::Relaxed);
        let Some(writer) = self.writer.as_mut() else {
            return Err(self.stopped_reason());
        };
        if self.snapshots > 0 && !held.is_empty() {
            if let Err(e) = writer.split_now() {
                let e = error_chain(&e);
                self.fail(format!("splitting {} for a snapshot: {e}", self.dir.display()));
                return Err(e);
            }
            let index = writer.file_index();
            self.shared.with(|s| s.file_index = index);
        }
        let file_index = writer.file_index();
        self.snapshots += usize::from(!held.is_empty());
        let (mut messages, mut bytes) = (0, 0);
        for message in held {
            if self.write(&message.topic, message.received_ns, &message.data) {
                messages += 1;
                bytes += message.data.len() as u64;
            }
        }
        self.store_progress();
        if let Some(Err(e)) = self.writer.as_mut().map(BagWriter::flush) {
            let e = error_chain(&e);
            self.fail(format!("flushing {}: {e}", self.dir.display()));
            return Err(e);
        }
        Ok(Snapshot {
            messages,
            bytes,
            file_index,
            evicted,
        })
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

    /// Stop recording for good on the first failure: make what was written so far a readable bag, count what
    /// it holds, and report it once (log line and status).
    fn fail(&mut self, what: String) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        let Some(writer) = self.writer.take() else {
            return;
        };
        let finished = finish(writer, &self.shared).is_ok();
        self.after_failure(what, finished);
    }

    /// After a failure (the writer is gone): repair the bag unless it was `finished`, correct the counts to
    /// what the files hold, remove temporary files and report, in one log line.
    fn after_failure(&mut self, what: String, finished: bool) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        let repair = if finished {
            Ok(())
        } else {
            lockstep_bag::reindex_with(&self.dir, &lockstep_bag::ReindexTarget::InPlace).map(drop)
        };
        remove_temporary_files(&self.dir);
        let kept = match lockstep_bag::survey(&self.dir) {
            Ok(report) => {
                let counts: BTreeMap<String, u64> = report
                    .metadata
                    .topics_with_message_count
                    .iter()
                    .map(|t| (t.topic_metadata.name.clone(), t.message_count))
                    .collect();
                self.shared.with(|s| {
                    let names: Vec<String> = s.stats.topics().map(|(n, _)| n.to_owned()).collect();
                    for name in names {
                        s.stats.keep_only(&name, counts.get(&name).copied().unwrap_or(0));
                    }
                });
                format!("{} messages", report.metadata.message_count)
            }
            Err(e) => format!(
                "what reached the disk (it cannot be read now: {})",
                error_chain(&e)
            ),
        };
        let state = match repair {
            Ok(()) => format!("the bag holds the {kept} that reached the disk"),
            Err(e) => format!(
                "the bag holds the {kept} that reached the disk but could not be finished ({}): run `lockstep bag reindex {}` once there is room",
                error_chain(&e),
                self.dir.display()
            ),
        };
        let message = format!("recording stopped: {what}; {state}");
        self.shared.log(Level::Error, &message);
        self.shared.with(|s| s.error.get_or_insert(message).clone());
    }
}

/// Remove what an interrupted write leaves in the bag directory: a half-written metadata.yaml copy and the
/// temporary copies of a repair.
fn remove_temporary_files(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".tmp") || name.ends_with(".reindex-tmp") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Name of the MCAP attachment holding the topology in the dependency headers' protobuf schema
/// (`lockstep_trace::proto::Topology`).
pub const TOPOLOGY_ATTACHMENT: &str = "lockstep/topology.pb";

/// Store the topology (the protobuf attachment, metadata.yaml custom_data `lockstep.topology`, and MCAP
/// metadata records `lockstep_topology` and `lockstep_graph`), the result of checking it is a DAG
/// (custom_data `lockstep.topology_check`: `acyclic` or `cycle: <modules and channels>`; record
/// `lockstep_topology_check` with `result` and `detail`), and finish the bag.
///
/// `lockstep_graph` has one entry per recorded topic: `writers=<node>,...;readers=<node>,...` from the ROS
/// graph (the recorder itself left out).
fn finish(mut writer: BagWriter, shared: &Recording) -> lockstep_bag::Result<()> {
    shared.refresh_graph();
    if let Some(done) = shared.with(|s| s.final_records()) {
        writer.set_custom_data("lockstep.topology", done.records.json.clone());
        writer.set_custom_data("lockstep.topology_check", done.check_summary());
        writer.write_metadata_record("lockstep_topology_check", &done.check)?;
        let now = now_ns() as u64;
        let media_type = "application/x-protobuf; proto=lockstep.Topology";
        writer.attach(TOPOLOGY_ATTACHMENT, media_type, now, now, &done.protobuf)?;
        for (name, entries) in [
            ("lockstep_topology", &done.records.topology),
            ("lockstep_graph", &done.records.graph),
        ] {
            writer.write_metadata_record(name, entries)?;
        }
    }
    shared.parameters.store(&mut writer)?;
    writer.finish().map(drop)
}
