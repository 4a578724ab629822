//! `lockstep_recorder`: records topics (raw CDR, any type the build knows) into a rosbag2-compatible MCAP bag,
//! with the dependency headers of traced modules and the module topology learnt from them.
//!
//! Parameters: see [`RecorderParams`]. Services (like rosbag2's recorder): `~/pause`, `~/resume`,
//! `~/split_bagfile` (std_srvs/Trigger), `~/is_paused` (lockstep_interfaces/IsPaused), `~/get_topology`
//! (lockstep_interfaces/GetTopology). Status: `~/status` (lockstep_interfaces/RecorderStatus) every
//! `status_period_secs`.
//!
//! The bag is written by a thread of its own, so disk I/O never stalls the node's spinning. What waits for it
//! is bounded by `max_queue_bytes`: when that is full, messages are dropped, counted per topic
//! (`dropped_queue_full` in the status) and logged (throttled). A write failure stops recording cleanly (see
//! `writer`); the node keeps answering. On SIGINT/SIGTERM the node first takes everything DDS has delivered
//! to it (until nothing new arrives for 0.2 s, at most 1 s: with publishers still running
//! there is always something new, and a stop must stay prompt), then the thread writes what was received, stores
//! the topology and finishes the bag (summary + metadata.yaml).

mod writer;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use std::time::Duration;

use anyhow::Context as _;
use futures::StreamExt;
use lockstep_bag::{ChunkCompression, MessageDefinitions, TopicSpec, WriterOptions};
use lockstep_recorder::{adapt_qos, DropReason, Throttle, TopicSelection, HEADER_TYPE};
use lockstep_ros::{lock, qos, SharedNode};
use r2r::lockstep_interfaces::msg::{DependencyHeader, ModuleTopology, RecorderStatus};
use r2r::lockstep_interfaces::srv::{GetTopology, IsPaused};
use r2r::std_srvs::srv::Trigger;
use r2r::WrappedTypesupport;

use writer::{BagThread, Command, Shared, ThreadOptions};

/// Parameters of the recorder.
#[derive(r2r::RosParams, Debug)]
struct RecorderParams {
    /// Bag directory to create; it must not exist yet. Empty: `lockstep_bag_<unix seconds>`.
    output: String,
    /// Record every topic (minus `exclude_regex`).
    all_topics: bool,
    /// Comma-separated topics to record in addition (absolute or relative names).
    topics: String,
    /// Record topics whose name matches this regular expression.
    include_regex: String,
    /// Do not record topics matching this regular expression (topics named in `topics` are still recorded).
    exclude_regex: String,
    /// Seconds between two looks at the ROS graph for new topics.
    discovery_period_secs: f64,
    /// Chunk compression: `none` or `zstd`.
    compression: String,
    /// Start a new bag file when the current one would exceed this many bytes (0: never).
    max_bag_size_bytes: i64,
    /// Start a new bag file after this many seconds of messages (0: never).
    max_bag_duration_secs: f64,
    /// Start paused (messages are dropped until `~/resume`).
    start_paused: bool,
    /// Seconds between two `~/status` messages.
    status_period_secs: f64,
    /// Bytes of received messages that may wait for the bag writer; beyond it messages are dropped and
    /// counted (like rosbag2's `max_cache_size`, whose default this is).
    max_queue_bytes: i64,
    /// For tests of the queue bound: sleep this long before each write, like a slow disk. Leave at 0.
    test_write_delay_secs: f64,
}

impl Default for RecorderParams {
    fn default() -> Self {
        Self {
            output: String::new(),
            all_topics: true,
            topics: String::new(),
            include_regex: String::new(),
            exclude_regex: String::new(),
            discovery_period_secs: 0.1,
            compression: "none".into(),
            max_bag_size_bytes: 0,
            max_bag_duration_secs: 0.0,
            start_paused: false,
            status_period_secs: 1.0,
            max_queue_bytes: 100 * 1024 * 1024,
            test_write_delay_secs: 0.0,
        }
    }
}

/// The bag thread's handle, joined by `main` after the node stopped so the bag is finished before exit.
static BAG_THREAD: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);

/// Seconds between two looks at who publishes and subscribes each recorded topic.
const GRAPH_PERIOD: Duration = Duration::from_secs(1);

/// On SIGINT/SIGTERM the node keeps taking messages until none arrived for `DRAIN_QUIET` (at most
/// `DRAIN_MAX`), so what DDS delivered before the stop is in the bag. Taking is far faster than any
/// publisher, so a backlog is taken well within `DRAIN_MAX`; with live publishers the stop takes `DRAIN_MAX`.
const DRAIN_QUIET: Duration = Duration::from_millis(200);
const DRAIN_MAX: Duration = Duration::from_secs(1);

fn main() -> anyhow::Result<()> {
    let received = Arc::new(AtomicU64::new(0));
    let drain = lockstep_ros::Drain {
        activity: received.clone(),
        quiet: DRAIN_QUIET,
        max: DRAIN_MAX,
    };
    let options = lockstep_ros::RunOptions {
        drain_on_shutdown: Some(drain),
    };
    let outcome =
        lockstep_ros::run_node_with("lockstep_recorder", options, |node| Ok(setup(node, received)?));
    // The node's tasks are gone, so every sender to the bag thread is dropped: it finishes the bag.
    let handle = BAG_THREAD.lock().ok().and_then(|mut h| h.take());
    if let Some(handle) = handle {
        if handle.join().is_err() {
            anyhow::bail!("the bag writer thread panicked");
        }
    }
    outcome.context("lockstep_recorder")
}

fn writer_options(params: &RecorderParams) -> anyhow::Result<WriterOptions> {
    let compression = match params.compression.as_str() {
        "none" | "" => ChunkCompression::None,
        "zstd" => ChunkCompression::Zstd,
        other => anyhow::bail!("parameter `compression`: `{other}` is not `none` or `zstd`"),
    };
    anyhow::ensure!(
        params.max_bag_size_bytes >= 0 && params.max_bag_duration_secs >= 0.0,
        "parameters `max_bag_size_bytes` and `max_bag_duration_secs` must not be negative"
    );
    Ok(WriterOptions {
        compression,
        max_bag_size_bytes: (params.max_bag_size_bytes > 0).then_some(params.max_bag_size_bytes as u64),
        max_bag_duration_ns: (params.max_bag_duration_secs > 0.0)
            .then_some((params.max_bag_duration_secs * 1e9) as u64),
        ..WriterOptions::default()
    })
}

fn setup(
    node: SharedNode,
    received: Arc<AtomicU64>,
) -> anyhow::Result<impl std::future::Future<Output = Result<(), lockstep_ros::BoxError>>> {
    let params = lockstep_ros::declare_parameters(&node, RecorderParams::default())?.values;
    let params = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
    let logger = lockstep_ros::logger_name(&node)?;
    let topics: Vec<String> = params.topics.split(',').map(str::to_owned).collect();
    let selection = TopicSelection::new(
        params.all_topics,
        &topics,
        &params.include_regex,
        &params.exclude_regex,
    )?;
    let output = if params.output.is_empty() {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        format!("lockstep_bag_{secs}")
    } else {
        params.output.clone()
    };
    let options = writer_options(&params)?;
    anyhow::ensure!(
        params.max_queue_bytes > 0,
        "parameter `max_queue_bytes` must be positive, not {}",
        params.max_queue_bytes
    );
    anyhow::ensure!(
        params.test_write_delay_secs.is_finite() && params.test_write_delay_secs >= 0.0,
        "parameter `test_write_delay_secs` must be a non-negative number of seconds"
    );
    let shared = Shared::new(
        params.start_paused,
        output.clone(),
        params.max_queue_bytes as u64,
        logger.clone(),
        received,
    );
    let thread = ThreadOptions {
        write_delay: Duration::from_secs_f64(params.test_write_delay_secs),
    };
    let bag = BagThread::start(&output, options, thread, shared.clone())?;
    if let Ok(mut slot) = BAG_THREAD.lock() {
        *slot = Some(bag.handle);
    }
    let commands = bag.commands;
    let discovery_period = Duration::from_secs_f64(params.discovery_period_secs.max(0.01));
    let status_period = Duration::from_secs_f64(params.status_period_secs.max(0.05));
    drop(params);

    let mut n = lock(&node)?;
    let node_name = n.fully_qualified_name()?;
    let status_topic = format!("{node_name}/status");
    let status_pub = n.create_publisher::<RecorderStatus>("~/status", qos::reliable(10))?;
    let pause = n.create_service::<Trigger::Service>("~/pause", qos::reliable(10))?;
    let resume = n.create_service::<Trigger::Service>("~/resume", qos::reliable(10))?;
    let split = n.create_service::<Trigger::Service>("~/split_bagfile", qos::reliable(10))?;
    let is_paused = n.create_service::<IsPaused::Service>("~/is_paused", qos::reliable(10))?;
    let get_topology = n.create_service::<GetTopology::Service>("~/get_topology", qos::reliable(10))?;
    drop(n);
    r2r::log_info!(&logger, "recording into {output}");

    let pause_task = {
        let shared = shared.clone();
        pause.for_each(move |req| {
            let was = shared.paused.swap(true, Ordering::SeqCst);
            respond_trigger(req, true, if was { "already paused" } else { "paused" });
            futures::future::ready(())
        })
    };
    let resume_task = {
        let shared = shared.clone();
        resume.for_each(move |req| {
            let was = shared.paused.swap(false, Ordering::SeqCst);
            respond_trigger(req, true, if was { "resumed" } else { "was not paused" });
            futures::future::ready(())
        })
    };
    let is_paused_task = {
        let shared = shared.clone();
        is_paused.for_each(move |req| {
            let _ = req.respond(IsPaused::Response {
                paused: shared.paused.load(Ordering::SeqCst),
            });
            futures::future::ready(())
        })
    };
    let split_task = {
        let commands = commands.clone();
        split.for_each(move |req| {
            let commands = commands.clone();
            async move {
                let (reply, answer) = tokio::sync::oneshot::channel();
                let outcome = match commands.send(Command::Split(reply)) {
                    Ok(()) => answer
                        .await
                        .unwrap_or_else(|_| Err("the bag writer stopped".into())),
                    Err(_) => Err("the bag writer stopped".into()),
                };
                match outcome {
                    Ok(index) => respond_trigger(req, true, &format!("now writing file {index}")),
                    Err(reason) => respond_trigger(req, false, &reason),
                }
            }
        })
    };
    let topology_task = {
        let shared = shared.clone();
        get_topology.for_each(move |req| {
            let topology = shared.topology_msg();
            let _ = req.respond(GetTopology::Response {
                success: true,
                message: String::new(),
                topology,
            });
            futures::future::ready(())
        })
    };
    let status_task = {
        let shared = shared.clone();
        let logger = logger.clone();
        async move {
            let mut interval = tokio::time::interval(status_period);
            let mut failing = false;
            loop {
                interval.tick().await;
                match status_pub.publish(&shared.status()) {
                    Err(e) if !failing => {
                        r2r::log_error!(&logger, "publishing {status_topic}: {e} (logged once)");
                        failing = true;
                    }
                    Err(_) => {}
                    Ok(()) => failing = false,
                }
            }
        }
    };
    let discovery_task = discover(
        node.clone(),
        selection,
        commands,
        shared,
        discovery_period,
        node_name,
    );

    Ok(async move {
        tokio::join!(
            pause_task,
            resume_task,
            is_paused_task,
            split_task,
            topology_task,
            status_task,
            discovery_task
        );
        Ok(())
    })
}

fn respond_trigger(req: r2r::ServiceRequest<Trigger::Service>, success: bool, message: &str) {
    let _ = req.respond(Trigger::Response {
        success,
        message: message.to_owned(),
    });
}

/// Look at the graph every `period`; subscribe to each new matching topic with QoS adapted to its publishers.
/// Every [`GRAPH_PERIOD`] note who publishes and subscribes each recorded topic (the bag's `lockstep_graph`).
async fn discover(
    node: SharedNode,
    selection: TopicSelection,
    commands: std::sync::mpsc::Sender<Command>,
    shared: Arc<Shared>,
    period: Duration,
    own_name: String,
) {
    let logger = lockstep_ros::logger_name(&node).unwrap_or_default();
    let own_status_topic = format!("{own_name}/status");
    let ament_prefix_path = std::env::var("AMENT_PREFIX_PATH").unwrap_or_default();
    let mut definitions = MessageDefinitions::from_prefix_path(&ament_prefix_path);
    match lockstep_ros::graph::GraphProbe::new("lockstep_recorder") {
        Ok(probe) => shared.attach_graph_probe(probe, own_name),
        Err(e) => r2r::log_warn!(
            &logger,
            "the publishers and subscribers of recorded topics will not be stored: {e}"
        ),
    }
    let mut known: BTreeSet<String> = BTreeSet::new();
    let mut interval = tokio::time::interval(period);
    let mut last_graph = tokio::time::Instant::now();
    loop {
        interval.tick().await;
        let Ok(n) = lock(&node) else { return };
        let Ok(graph) = n.get_topic_names_and_types() else {
            continue;
        };
        drop(n);
        // Sorted, so topics discovered in the same round are added in a stable order.
        let graph: std::collections::BTreeMap<_, _> = graph.into_iter().collect();
        for (topic, types) in graph {
            if known.contains(&topic) || topic == own_status_topic || !selection.matches(&topic) {
                continue;
            }
            let Some(type_name) = types.first().cloned() else {
                continue;
            };
            let Ok(n) = lock(&node) else { return };
            let publishers = n.get_publishers_info_by_topic(&topic, false).unwrap_or_default();
            drop(n);
            if publishers.is_empty() {
                continue; // only subscribers so far: the QoS to match is not known yet
            }
            known.insert(topic.clone());
            let offered: Vec<lockstep_bag::QosProfile> =
                publishers.iter().map(|p| to_bag_qos(&p.qos_profile)).collect();
            let wanted = adapt_qos(&offered);
            let mut profile = qos::keep_all_reliable();
            if !wanted.reliable {
                profile = profile.best_effort();
            }
            if wanted.transient_local {
                profile = profile.transient_local();
            }
            let stream = match lock(&node).map(|mut n| n.subscribe_raw(&topic, &type_name, profile)) {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => {
                    r2r::log_warn!(&logger, "not recording {topic} ({type_name}): {e}");
                    shared.note_skipped(&topic, &type_name, &e.to_string());
                    continue;
                }
                Err(_) => return,
            };
            let (definition, missing) = definitions.resolve_or_empty(&type_name);
            if let Some(e) = missing {
                r2r::log_warn!(&logger, "{topic}: no message definition stored: {e}");
            }
            let spec = TopicSpec::new(topic.clone(), type_name.clone())
                .with_qos(offered)
                .with_definition(definition);
            if commands.send(Command::AddTopic(Box::new(spec))).is_err() {
                return;
            }
            r2r::log_info!(&logger, "recording {topic} ({type_name})");
            tokio::spawn(record_topic(
                stream,
                topic,
                type_name,
                commands.clone(),
                shared.clone(),
                logger.clone(),
            ));
        }
        if last_graph.elapsed() >= GRAPH_PERIOD {
            last_graph = tokio::time::Instant::now();
            shared.refresh_graph();
        }
    }
}

/// Seconds between two log lines about drops on one topic.
const DROP_LOG_PERIOD: Duration = Duration::from_secs(2);

async fn record_topic(
    mut stream: impl futures::Stream<Item = Vec<u8>> + Unpin,
    topic: String,
    type_name: String,
    commands: std::sync::mpsc::Sender<Command>,
    shared: Arc<Shared>,
    logger: String,
) {
    let topic: Arc<str> = topic.into();
    let is_header = type_name == HEADER_TYPE;
    let is_topology = type_name == "lockstep_interfaces/msg/ModuleTopology";
    let mut drop_log = Throttle::new(DROP_LOG_PERIOD);
    let received = shared.received_counter(&topic);
    while let Some(data) = stream.next().await {
        shared.received.fetch_add(1, Ordering::SeqCst);
        received.fetch_add(1, Ordering::Relaxed);
        let received_ns = lockstep_trace::now_ns() as u64;
        if shared.paused.load(Ordering::Relaxed) {
            continue;
        }
        if shared.stopped.load(Ordering::Relaxed) {
            shared.note_dropped(&topic, DropReason::AfterError);
            continue;
        }
        // Headers and declared topologies are recorded as they are and also feed the topology.
        if is_header {
            if let Ok(header) = DependencyHeader::from_serialized_bytes(&data) {
                let _ = commands.send(Command::Header(Box::new(header)));
            }
        } else if is_topology {
            if let Ok(topology) = ModuleTopology::from_serialized_bytes(&data) {
                let _ = commands.send(Command::Declared(topology));
            }
        }
        if !shared.budget.try_reserve(data.len() as u64) {
            let dropped = shared.note_dropped(&topic, DropReason::QueueFull);
            if drop_log.ready(std::time::Instant::now()) {
                r2r::log_warn!(
                    &logger,
                    "{topic}: write queue full ({} of max_queue_bytes {} bytes waiting): {dropped} messages \
                     dropped so far",
                    shared.budget.used(),
                    shared.budget.max()
                );
            }
            continue;
        }
        let write = Command::Write {
            topic: topic.clone(),
            received_ns,
            data,
        };
        if commands.send(write).is_err() {
            return;
        }
    }
}

fn to_bag_qos(q: &r2r::QosProfile) -> lockstep_bag::QosProfile {
    use lockstep_bag::qos::{Durability, History, Liveliness, Reliability, RmwTime};
    use r2r::qos::{DurabilityPolicy, HistoryPolicy, LivelinessPolicy, ReliabilityPolicy};
    let time = |d: Duration| RmwTime {
        sec: d.as_secs(),
        nsec: u64::from(d.subsec_nanos()),
    };
    lockstep_bag::QosProfile {
        history: match q.history {
            HistoryPolicy::KeepAll => History::KeepAll,
            HistoryPolicy::KeepLast => History::KeepLast,
            HistoryPolicy::SystemDefault => History::SystemDefault,
            HistoryPolicy::Unknown => History::Unknown,
        },
        depth: q.depth as u64,
        reliability: match q.reliability {
            ReliabilityPolicy::Reliable => Reliability::Reliable,
            ReliabilityPolicy::BestEffort => Reliability::BestEffort,
            ReliabilityPolicy::SystemDefault => Reliability::SystemDefault,
            ReliabilityPolicy::BestAvailable => Reliability::BestAvailable,
            ReliabilityPolicy::Unknown => Reliability::Unknown,
        },
        durability: match q.durability {
            DurabilityPolicy::TransientLocal => Durability::TransientLocal,
            DurabilityPolicy::Volatile => Durability::Volatile,
            DurabilityPolicy::SystemDefault => Durability::SystemDefault,
            DurabilityPolicy::BestAvailable => Durability::BestAvailable,
            DurabilityPolicy::Unknown => Durability::Unknown,
        },
        deadline: time(q.deadline),
        lifespan: time(q.lifespan),
        liveliness: match q.liveliness {
            LivelinessPolicy::Automatic => Liveliness::Automatic,
            LivelinessPolicy::ManualByNode => Liveliness::ManualByNode,
            LivelinessPolicy::ManualByTopic => Liveliness::ManualByTopic,
            LivelinessPolicy::SystemDefault => Liveliness::SystemDefault,
            LivelinessPolicy::BestAvailable => Liveliness::BestAvailable,
            LivelinessPolicy::Unknown => Liveliness::Unknown,
        },
        liveliness_lease_duration: time(q.liveliness_lease_duration),
        ..lockstep_bag::QosProfile::default()
    }
}
