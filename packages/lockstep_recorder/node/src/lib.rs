//! The recorder node `lockstep_recorder` (and `lockstep bag record`, which runs it in its own process, see
//! [`cli`]): records topics (raw CDR of any message type installed on the machine, see `topics`) into a
//! rosbag2-compatible MCAP bag, with the dependency headers of traced modules, the module topology learnt
//! from them and the modules' parameters (see `parameters`). What it decides is the core's
//! (`lockstep_recorder`: discovery, the bag thread and its queue bound, the status); this crate subscribes,
//! queries the graph and maps to and from messages.
//!
//! Parameters: see [`RecorderParams`]. Services (like rosbag2's recorder): `~/pause`, `~/resume`,
//! `~/split_bagfile` (std_srvs/Trigger), `~/is_paused` (lockstep_interfaces/IsPaused), `~/get_topology`
//! (lockstep_interfaces/GetTopology). Status: `~/status` (lockstep_interfaces/RecorderStatus) every
//! `status_period_secs`. Once a look at the graph left no topic with publishers unsubscribed and each topic
//! named in `topics` delivered a message, it logs `ready: recording <n> topics` (once), the line
//! `lockstep launch` waits for before it starts the nodes a launch file holds back until the recorder records.
//! On SIGINT/SIGTERM the node first takes everything DDS has delivered to it (until
//! nothing new arrives for 0.2 s, at most 1 s: with publishers still running there is always something new,
//! and a stop must stay prompt), then the bag thread writes what was received and finishes the bag.

pub mod cli;
mod messages;
mod parameters;
mod services;
mod sim_time;
mod topics;

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use lockstep_recorder::{Readiness, RecorderConfig, Session, Settings, Status};
use lockstep_ros::generic::GenericNode;
use lockstep_ros::{lock, Int, ParamRule, ParamRules, Real, SharedNode};

use topics::Discovery;

/// Parameters of the recorder.
#[derive(r2r::RosParams, Debug, Clone)]
pub struct RecorderParams {
    /// Bag directory to create; it must not exist yet. Empty: `lockstep_bag_<unix seconds>`.
    pub output: String,
    /// Record every topic (minus `exclude_regex`, `exclude_topics` and `exclude_topic_types`); services' and
    /// actions' topics are chosen by `all_services` and `all_actions`.
    pub all_topics: bool,
    /// Comma-separated topics to record in addition (absolute or relative names).
    pub topics: String,
    /// Record topics whose name matches this regular expression.
    pub include_regex: String,
    /// Do not record topics, services or actions whose name matches this regular expression (those named in
    /// `topics`, `services` or `actions` are still recorded).
    pub exclude_regex: String,
    /// Record the introspection events of every service (`<service>/_service_event`, published by servers and
    /// clients with service introspection on), minus `exclude_regex` and `exclude_services`.
    pub all_services: bool,
    /// Record every action: its feedback and status topics, and the introspection events of its goal, result
    /// and cancel services where the action's server or client publishes them.
    pub all_actions: bool,
    /// Comma-separated services whose introspection events to record.
    pub services: String,
    /// Comma-separated actions to record.
    pub actions: String,
    /// Comma-separated topics not to record.
    pub exclude_topics: String,
    /// Comma-separated services not to record.
    pub exclude_services: String,
    /// Comma-separated actions not to record.
    pub exclude_actions: String,
    /// Comma-separated message types (`pkg/msg/Type`) whose topics to record.
    pub topic_types: String,
    /// Comma-separated message types whose topics not to record (topics named in `topics` are still recorded).
    pub exclude_topic_types: String,
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
    /// Keep only the last `max_queue_bytes` of messages in memory (oldest whole messages leave first) and write
    /// them when `~/snapshot` is called: the first snapshot into the bag's first file, each later one into a
    /// new file. `~/status` shows the bytes held as `queue_bytes`.
    pub snapshot_mode: bool,
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

/// The same fields, as plain settings (the core's defaults and checks) and back.
macro_rules! same_fields {
    ($($field:ident),*) => {
        impl From<&RecorderParams> for Settings {
            fn from(p: &RecorderParams) -> Self {
                Self { $($field: p.$field.clone()),* }
            }
        }
        impl From<Settings> for RecorderParams {
            fn from(s: Settings) -> Self {
                Self { $($field: s.$field),* }
            }
        }
    };
}
same_fields! {
    output, all_topics, topics, include_regex, exclude_regex, all_services, all_actions, services, actions,
    exclude_topics, exclude_services, exclude_actions, topic_types, exclude_topic_types, discovery_period_secs,
    compression,
    max_bag_size_bytes, max_bag_duration_secs, start_paused, status_period_secs, max_queue_bytes,
    test_write_delay_secs, type_support, snapshot_mode
}

impl Default for RecorderParams {
    fn default() -> Self {
        Settings::default().into()
    }
}

/// On SIGINT/SIGTERM the node keeps taking messages until none arrived for `DRAIN_QUIET` (at most
/// `DRAIN_MAX`), so what DDS delivered before the stop is in the bag. Taking is far faster than any
/// publisher, so a backlog is taken well within `DRAIN_MAX`; with live publishers the stop takes `DRAIN_MAX`.
const DRAIN_QUIET: Duration = Duration::from_millis(200);
const DRAIN_MAX: Duration = Duration::from_secs(1);

/// Called with the recorder's status every `status_period_secs` (what `~/status` publishes).
pub type StatusObserver = Box<dyn FnMut(&Status)>;

/// Runs the recorder node `node_name` until SIGINT/SIGTERM (or a fatal error), then finishes the bag and
/// returns the last status. `defaults` are the parameters' values unless `--ros-args -p` overrides them.
/// Messages are stamped with the ROS clock (`/clock`) when the node's `use_sim_time` is true or
/// `force_sim_time` says so (`lockstep bag record --use-sim-time`).
pub fn run(
    node_name: &str,
    defaults: RecorderParams,
    observer: Option<StatusObserver>,
    force_sim_time: bool,
) -> anyhow::Result<Status> {
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
    let session_slot: Arc<Mutex<Option<Session>>> = Arc::default();
    let slot = session_slot.clone();
    let outcome = lockstep_ros::run_node_with(node_name, options, move |node| {
        Ok(setup(node, defaults, received, observer, slot, force_sim_time)?)
    });
    // The node's tasks are gone, so every other sender to the bag thread is dropped: it finishes the bag.
    let session = session_slot.lock().ok().and_then(|mut s| s.take());
    let status = session.map(Session::finish).transpose()?;
    outcome.with_context(|| node_name.to_owned())?;
    status.context("the recorder stopped before it started recording")
}

fn setup(
    node: SharedNode,
    defaults: RecorderParams,
    received: Arc<AtomicU64>,
    observer: Option<StatusObserver>,
    slot: Arc<Mutex<Option<Session>>>,
    force_sim_time: bool,
) -> anyhow::Result<impl std::future::Future<Output = Result<(), lockstep_ros::BoxError>>> {
    let (config, readiness) = read_parameters(&node, defaults)?;
    let logger = lockstep_ros::logger_name(&node)?;
    let log = messages::log(logger.clone());
    let session = Session::start(&config, log, received, messages::pending_parameters())?;
    let (recording, commands) = (session.recording.clone(), session.commands.clone());
    if let Ok(mut slot) = slot.lock() {
        *slot = Some(session);
    }
    if sim_time::follow(&node, force_sim_time)? {
        let clock = lock(&node)?.get_ros_clock();
        recording.use_clock(Box::new(move || sim_time::now_ns(&clock)));
        r2r::log_info!(
            &logger,
            "stamping messages with the ROS clock (/clock, use_sim_time)"
        );
    }
    let status_task = services::status(&node, recording.clone(), config.status_period, observer)?;
    let services_task = services::serve(&node, &recording, &commands, config.snapshot_mode)?;
    let n = lock(&node)?;
    let own_name = n.fully_qualified_name()?;
    // Subscriptions of any installed type and graph queries go through the node `<name>_generic`, beside
    // this one in its namespace.
    let generic = GenericNode::new(&n.name()?, &n.namespace()?).context("starting the generic node")?;
    drop(n);
    r2r::log_info!(&logger, "recording into {}", config.output);
    // Each module's parameters, read when the module is learnt, and their changes (see `parameters`).
    let parameters_task = parameters::watch(node.clone(), recording.clone(), config.discovery_period);
    let discovery = Discovery {
        selection: config.selection,
        readiness,
        commands,
        recording,
        period: config.discovery_period,
        own_name,
        type_support: config.type_support,
        generic,
    };
    let discovery_task = topics::discover(node.clone(), discovery);
    Ok(async move {
        tokio::join!(services_task, status_task, discovery_task, parameters_task);
        Ok(())
    })
}

/// Declare the parameters and check them. A bad start value stops the node naming the parameter and its
/// range; every parameter is read at start only, so a run-time set is refused saying so. Also when to say
/// ready: the topics named in `topics` must have delivered a message.
fn read_parameters(
    node: &SharedNode,
    defaults: RecorderParams,
) -> anyhow::Result<(RecorderConfig, Readiness)> {
    let params = lockstep_ros::declare_start_only_parameters(node, defaults)?;
    let now = lockstep_recorder::unix_now_secs();
    let readiness = Readiness::new(&params.topics);
    Ok((RecorderConfig::new(&Settings::from(&params), now)?, readiness))
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
