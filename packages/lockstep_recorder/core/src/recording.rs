//! State shared by the node's tasks, the subscriptions' threads and the bag thread ([`Recording`]): pause
//! and stop flags, the queue budget, counters, what was learnt ([`State`]) and the parameters waiting for
//! the bag.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lockstep_trace::Component;

use crate::pending::Pending;
use crate::queue::QueueBudget;
use crate::state::State;
use crate::statistics::DropReason;
use crate::status::{SkippedTopic, Status, TopicStatus};

/// How bad a log line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// Where the recorder's log lines go (the node's ROS logger).
pub type Log = Arc<dyn Fn(Level, &str) + Send + Sync>;

/// Who publishes and subscribes a topic now: (writers, readers), fully qualified node names, the recorder's
/// own nodes left out.
pub type GraphQuery = Box<dyn Fn(&str) -> (Vec<String>, Vec<String>) + Send>;

/// A clock read on the threads that take messages, in nanoseconds.
pub type Clock = Box<dyn Fn() -> u64 + Send + Sync>;

/// State shared by the node's tasks and the bag thread.
pub struct Recording {
    pub paused: AtomicBool,
    /// Set once recording stopped on a write failure.
    pub stopped: AtomicBool,
    /// Bytes waiting for the bag thread, bounded by parameter `max_queue_bytes`.
    pub budget: QueueBudget,
    /// Snapshot mode: bytes of messages held in memory for the next snapshot.
    pub held_bytes: AtomicU64,
    /// Snapshot mode: the most bytes held (0: not in snapshot mode).
    pub snapshot_cache_bytes: AtomicU64,
    /// The clock messages are stamped with when set (the ROS clock under `use_sim_time`), else the system's.
    clock: std::sync::OnceLock<Clock>,
    /// Messages taken from DDS (recorded or not); the node's drain on shutdown waits for it to stand still.
    pub received: Arc<AtomicU64>,
    /// The same per topic (each topic's subscription counts into its own counter, without a lock).
    received_by_topic: Mutex<BTreeMap<String, Arc<AtomicU64>>>,
    bag_path: String,
    log: Log,
    state: Mutex<State>,
    graph: Mutex<Option<GraphQuery>>,
    /// The modules' parameters and their changes, waiting for the bag thread.
    pub parameters: Pending,
}

impl Recording {
    pub fn new(
        paused: bool,
        bag_path: String,
        max_queue_bytes: u64,
        log: Log,
        received: Arc<AtomicU64>,
        parameters: Pending,
    ) -> Arc<Self> {
        Arc::new(Self {
            paused: AtomicBool::new(paused),
            stopped: AtomicBool::new(false),
            budget: QueueBudget::new(max_queue_bytes),
            held_bytes: AtomicU64::new(0),
            snapshot_cache_bytes: AtomicU64::new(0),
            clock: std::sync::OnceLock::new(),
            received,
            received_by_topic: Mutex::default(),
            bag_path,
            log,
            state: Mutex::default(),
            graph: Mutex::default(),
            parameters,
        })
    }

    /// Stamp received messages with `clock` (nanoseconds) from now on instead of the system time: the node's
    /// ROS clock under `use_sim_time` (`/clock`, as rosbag2's recorder does). Set once; later calls are ignored.
    pub fn use_clock(&self, clock: Clock) {
        let _ = self.clock.set(clock);
    }

    /// The time to stamp a message received now with, in nanoseconds.
    pub fn now_ns(&self) -> u64 {
        match self.clock.get() {
            Some(clock) => clock(),
            None => lockstep_trace::now_ns() as u64,
        }
    }

    /// Run `f` on the state (`None` when a thread panicked holding it).
    pub fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> Option<R> {
        self.state.lock().ok().map(|mut s| f(&mut s))
    }

    /// Pause; the answer to `~/pause`.
    pub fn pause(&self) -> &'static str {
        let was = self.paused.swap(true, Ordering::SeqCst);
        if was {
            "already paused"
        } else {
            "paused"
        }
    }

    /// Resume; the answer to `~/resume`.
    pub fn resume(&self) -> &'static str {
        let was = self.paused.swap(false, Ordering::SeqCst);
        if was {
            "resumed"
        } else {
            "was not paused"
        }
    }

    pub fn log(&self, level: Level, line: &str) {
        (self.log)(level, line);
    }

    /// List in the status a topic that cannot be recorded.
    pub fn note_skipped(&self, topic: &str, type_name: &str, reason: &str) {
        self.with(|s| {
            s.skipped
                .insert(topic.to_owned(), (type_name.to_owned(), reason.to_owned()))
        });
    }

    /// From now on, learn the graph of recorded topics with `query`.
    pub fn attach_graph(&self, query: GraphQuery) {
        if let Ok(mut slot) = self.graph.lock() {
            *slot = Some(query);
        }
    }

    /// Add what the graph shows now for every recorded topic (nodes are only added: a node that left is
    /// still part of what happened during the recording).
    pub fn refresh_graph(&self) {
        let Ok(query) = self.graph.lock() else {
            return;
        };
        let Some(query) = query.as_ref() else {
            return;
        };
        let topics: Vec<String> = self
            .with(|s| s.types.keys().cloned().collect())
            .unwrap_or_default();
        for topic in topics {
            let (writers, readers) = query(&topic);
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

    /// The modules' wiring learnt so far, sorted by module.
    pub fn components(&self) -> Vec<Component> {
        self.with(|s| s.topology.components()).unwrap_or_default()
    }

    /// What `~/status` reports now.
    pub fn status(&self) -> Status {
        let paused = self.paused.load(Ordering::Relaxed);
        let recording = !self.stopped.load(Ordering::Relaxed);
        let received: BTreeMap<String, u64> = (self.received_by_topic.lock())
            .map(|m| (m.iter().map(|(t, n)| (t.clone(), n.load(Ordering::Relaxed)))).collect())
            .unwrap_or_default();
        self.with(|s| Status {
            bag_path: self.bag_path.clone(),
            paused,
            recording,
            error: s.error.clone().unwrap_or_default(),
            topology_error: s.topology_check().err().unwrap_or_default(),
            file_index: s.file_index as u32,
            total_messages: s.stats.total_messages(),
            total_bytes: s.stats.total_bytes(),
            queue_bytes: self.budget.used() + self.held_bytes.load(Ordering::Relaxed),
            max_queue_bytes: match self.snapshot_cache_bytes.load(Ordering::Relaxed) {
                0 => self.budget.max(),
                cache => cache,
            },
            topics: (s.stats.topics())
                .map(|(topic, t)| TopicStatus {
                    topic: topic.to_owned(),
                    type_name: t.type_name.clone(),
                    received: received.get(topic).copied().unwrap_or(0),
                    messages: t.messages,
                    bytes: t.bytes,
                    dropped: t.dropped,
                    dropped_queue_full: t.dropped_queue_full,
                    dropped_after_error: t.dropped_after_error,
                })
                .collect(),
            skipped: (s.skipped.iter())
                .map(|(topic, (type_name, reason))| SkippedTopic {
                    topic: topic.clone(),
                    type_name: type_name.clone(),
                    reason: reason.clone(),
                })
                .collect(),
        })
        .unwrap_or_default()
    }
}
