//! The recorder node `lockstep_recorder` (and `lockstep bag record`, which runs it in its own process, see
//! [`cli`]): records topics (raw CDR of any message type installed on the machine, see `topics`)
//! into a rosbag2-compatible MCAP bag, with the dependency headers of traced modules and the module topology
//! learnt from them.
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
//!
//! Each module's parameters (read through its parameter services when the module is first seen) and their
//! changes on `/parameter_events` are stored too, as metadata records (see `parameters`).

pub mod cli;
mod parameters;
mod pending_parameters;
mod shared;
mod topics;
mod writer;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use futures::StreamExt;
use lockstep_bag::{ChunkCompression, WriterOptions};
use lockstep_recorder::TopicSelection;
use lockstep_ros::generic::GenericNode;
use lockstep_ros::{lock, qos, Int, ParamRule, ParamRules, Real, SharedNode};
use r2r::lockstep_interfaces::msg::RecorderStatus;
use r2r::lockstep_interfaces::srv::{GetTopology, IsPaused};
use r2r::std_srvs::srv::Trigger;

use shared::Shared;
use topics::{Discovery, TypeSupport};
use writer::{BagThread, Command, ThreadOptions};

/// Parameters of the recorder.
#[derive(r2r::RosParams, Debug, Clone)]
pub struct RecorderParams {
    /// Bag directory to create; it must not exist yet. Empty: `lockstep_bag_<unix seconds>`.
    pub output: String,
    /// Record every topic (minus `exclude_regex`).
    pub all_topics: bool,
    /// Comma-separated topics to record in addition (absolute or relative names).
    pub topics: String,
    /// Record topics whose name matches this regular expression.
    pub include_regex: String,
    /// Do not record topics matching this regular expression (topics named in `topics` are still recorded).
    pub exclude_regex: String,
    /// Seconds between two looks at the ROS graph for new topics.
    pub discovery_period_secs: f64,
    /// Chunk compression: `none` or `zstd`.
    pub compression: String,
    /// Start a new bag file when the current one would exceed this many bytes (0: never).
    pub max_bag_size_bytes: i64,
    /// Start a new bag file after this many seconds of messages (0: never).
    pub max_bag_duration_secs: f64,
    /// Start paused (messages are dropped until `~/resume`).
    pub start_paused: bool,
    /// Seconds between two `~/status` messages.
    pub status_period_secs: f64,
    /// Bytes of received messages that may wait for the bag writer; beyond it messages are dropped and
    /// counted (like rosbag2's `max_cache_size`, whose default this is).
    pub max_queue_bytes: i64,
    /// For tests of the queue bound: sleep this long before each write, like a slow disk. Leave at 0.
    pub test_write_delay_secs: f64,
    /// `generic`: load each type's support at run time from AMENT_PREFIX_PATH (every installed type records);
    /// `compiled`: only the types compiled into this binary (kept for comparison benchmarks).
    pub type_support: String,
}

/// What each parameter may hold (`lockstep_ros::ParamRules`), checked at start (the `lockstep bag record`
/// flags too, which become the defaults) and on every run-time set.
const RULES: &[ParamRule] = &[
    ParamRule::real("discovery_period_secs", Real::closed(0.01, 3600.0, "s")),
    ParamRule::one_of("compression", &["none", "zstd"]),
    ParamRule::int("max_bag_size_bytes", Int::closed(0, i64::MAX, "bytes")),
    ParamRule::real("max_bag_duration_secs", Real::closed(0.0, 1e9, "s")),
    ParamRule::real("status_period_secs", Real::closed(0.01, 3600.0, "s")),
    ParamRule::int("max_queue_bytes", Int::closed(1, i64::MAX, "bytes")),
    ParamRule::real("test_write_delay_secs", Real::closed(0.0, 60.0, "s")),
    ParamRule::one_of("type_support", &["generic", "compiled"]),
];

impl ParamRules for RecorderParams {
    fn param_rules() -> &'static [ParamRule] {
        RULES
    }
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
            type_support: "generic".into(),
        }
    }
}

/// The bag thread's handle, joined by `main` after the node stopped so the bag is finished before exit.
static BAG_THREAD: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);

/// On SIGINT/SIGTERM the node keeps taking messages until none arrived for `DRAIN_QUIET` (at most
/// `DRAIN_MAX`), so what DDS delivered before the stop is in the bag. Taking is far faster than any
/// publisher, so a backlog is taken well within `DRAIN_MAX`; with live publishers the stop takes `DRAIN_MAX`.
const DRAIN_QUIET: Duration = Duration::from_millis(200);
const DRAIN_MAX: Duration = Duration::from_secs(1);

/// Called with the recorder's status every `status_period_secs` (what `~/status` publishes).
pub type StatusObserver = Box<dyn FnMut(&RecorderStatus)>;

/// Runs the recorder node `node_name` until SIGINT/SIGTERM (or a fatal error), then finishes the bag and
/// returns the last status. `defaults` are the parameters' values unless `--ros-args -p` overrides them.
pub fn run(
    node_name: &str,
    defaults: RecorderParams,
    observer: Option<StatusObserver>,
) -> anyhow::Result<RecorderStatus> {
    let received = Arc::new(AtomicU64::new(0));
    // The recorded topics are taken on threads of their own; the node's spin serves its services, status and
    // parameters. At the default 1 ms an idle recorder spent 4.6 % of a core rebuilding its wait set; 20 ms
    // delays only the status timer and the hand-over of newly discovered topics, by at most that.
    const IDLE_SPIN: std::time::Duration = std::time::Duration::from_millis(20);
    let drain = lockstep_ros::Drain {
        activity: received.clone(),
        quiet: DRAIN_QUIET,
        max: DRAIN_MAX,
    };
    let options = lockstep_ros::RunOptions {
        drain_on_shutdown: Some(drain),
        spin_timeout: Some(IDLE_SPIN),
    };
    let shared_slot: Arc<Mutex<Option<Arc<Shared>>>> = Arc::default();
    let slot = shared_slot.clone();
    let outcome = lockstep_ros::run_node_with(node_name, options, move |node| {
        Ok(setup(node, defaults, received, observer, slot)?)
    });
    // The node's tasks are gone, so every sender to the bag thread is dropped: it finishes the bag.
    let handle = BAG_THREAD.lock().ok().and_then(|mut h| h.take());
    if let Some(handle) = handle {
        if handle.join().is_err() {
            anyhow::bail!("the bag writer thread panicked");
        }
    }
    outcome.with_context(|| node_name.to_owned())?;
    let shared = shared_slot.lock().ok().and_then(|mut s| s.take());
    shared
        .map(|s| s.status())
        .context("the recorder stopped before it started recording")
}

fn writer_options(params: &RecorderParams) -> anyhow::Result<WriterOptions> {
    let compression = match params.compression.as_str() {
        "none" | "" => ChunkCompression::None,
        "zstd" => ChunkCompression::Zstd,
        other => anyhow::bail!("parameter `compression`: `{other}` is not `none` or `zstd`"),
    };
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
    defaults: RecorderParams,
    received: Arc<AtomicU64>,
    mut observer: Option<StatusObserver>,
    shared_slot: Arc<Mutex<Option<Arc<Shared>>>>,
) -> anyhow::Result<impl std::future::Future<Output = Result<(), lockstep_ros::BoxError>>> {
    // A bad start value stops the node naming the parameter and its range; every parameter is read at start
    // only, so a run-time set is refused saying so.
    let declared = lockstep_ros::declare_checked_parameters(&node, defaults)?;
    let mut params = declared
        .values
        .lock()
        .map_err(|_| lockstep_ros::Error::Poisoned)?;
    params.set_guard(lockstep_ros::start_only(&[]));
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
    if let Ok(mut slot) = shared_slot.lock() {
        *slot = Some(shared.clone());
    }
    if let Ok(mut slot) = BAG_THREAD.lock() {
        *slot = Some(bag.handle);
    }
    let commands = bag.commands;
    let discovery_period = Duration::from_secs_f64(params.discovery_period_secs.max(0.01));
    let type_support = TypeSupport::parse(&params.type_support)?;
    let status_period = Duration::from_secs_f64(params.status_period_secs.max(0.05));
    drop(params);

    let mut n = lock(&node)?;
    let node_name = n.fully_qualified_name()?;
    // Subscriptions of any installed type and graph queries go through the node `<name>_generic`, beside
    // this one in its namespace.
    let generic = GenericNode::new(&n.name()?, &n.namespace()?).context("starting the generic node")?;
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
                let status = shared.status();
                if let Some(observer) = observer.as_mut() {
                    observer(&status);
                }
                match status_pub.publish(&status) {
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
    // Each module's parameters, read when the module is learnt, and their changes (see `parameters`).
    let parameters_task = parameters::watch(node.clone(), shared.clone(), discovery_period);
    let discovery = Discovery {
        selection,
        commands,
        shared,
        period: discovery_period,
        own_name: node_name,
        type_support,
        generic,
    };
    let discovery_task = topics::discover(node.clone(), discovery);

    Ok(async move {
        tokio::join!(
            pause_task,
            resume_task,
            is_paused_task,
            split_task,
            topology_task,
            status_task,
            discovery_task,
            parameters_task
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

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_ros::param_rules::check_all;

    #[test]
    fn the_defaults_pass_the_rules_and_bad_values_are_refused_with_the_range() {
        assert_eq!(check_all(&mut RecorderParams::default()), Ok(()));
        let mut p = RecorderParams {
            status_period_secs: f64::NAN,
            ..RecorderParams::default()
        };
        assert_eq!(
            check_all(&mut p).err().as_deref(),
            Some("parameter 'status_period_secs' = NaN: must be finite and in [0.01, 3600] s")
        );
        let mut p = RecorderParams {
            max_queue_bytes: 0,
            ..RecorderParams::default()
        };
        assert!(check_all(&mut p)
            .err()
            .is_some_and(|e| e.starts_with("parameter 'max_queue_bytes' = 0: must be an integer in [1, ")));
    }
}
