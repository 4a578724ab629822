//! Shared r2r glue for every Lockstep node.
//!
//! - [`run_node`]: create the ROS context and node, let the caller wire topics/services/actions, spin the node
//!   on the same thread as the caller's tasks without losing messages in bursts, and stop cleanly on
//!   SIGINT/SIGTERM.
//! - [`qos`]: the QoS presets Lockstep uses (latched, reliable, sensor data, keep-all).
//! - [`declare_parameters`]: typed parameters (`#[derive(r2r::RosParams)]`, doc comments become descriptions)
//!   served on the node's standard parameter services and filled from `--ros-args --params-file`.
//! - [`declare_checked_parameters`]: the same, each parameter checked against the struct's [`ParamRules`]
//!   (finite, in range, not empty) at start and on every run-time set; a bad set is refused with the reason.
//! - [`action_server`]: a ROS 2 action server whose cancelled goals end CANCELED (r2r's stay CANCELING).
//! - [`generic`]: subscriptions and publishers of any installed message type, as serialized CDR.
//! - [`introspection`]: parameters that make the node's services publish their calls (service introspection).
//! - [`graph`]: who subscribes to a topic (r2r has only the publishers' side).
//! - [`typesupport`]: a message type's C type support loaded at run time (types not compiled in).
//! - [`text`]: request text echoed into a log line or an answer, clipped to its first 200 characters.
//! - [`time`]: conversions between ROS `builtin_interfaces/Time` and nanoseconds or seconds.
//! - Logging goes through the ROS logger: use `r2r::log_info!(node_logger, ...)` etc., re-exported here.
//!
//! When ROS 2 comes from the PyPI wheels, this crate's build script also links libpython (see `build.rs`),
//! so node crates need nothing but this dependency.

pub mod action_server;
mod context;
mod error;
pub mod generic;
pub mod graph;
mod guarded;
pub mod help;
pub mod introspection;
pub mod param_rules;
pub mod parameter_events;
mod parameter_service;
pub mod parameter_text;
pub mod params_file;
mod python_link;
pub mod qos;
mod rcl_node;
mod shared_node;
pub mod text;
pub mod time;
pub mod typesupport;

pub use error::{exit_status, BoxError, Error, Result, RosContext};
pub use guarded::{start_only, Guard, Guarded, OnRefused};
pub use param_rules::{Check, Int, ParamRule, ParamRules, Real};
pub use rcl_node::RclError;
pub use shared_node::{lock, SharedNode};

use std::{future::Future, sync::Arc, sync::Mutex, time::Duration};

pub use r2r::{self, log_debug, log_error, log_info, log_warn};

/// The items of a comma-separated string parameter (`joints:=a, b,c`): trimmed, empty ones dropped. ROS 2
/// string-array parameters cannot be empty, so list parameters are strings.
pub fn param_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Longest time one `spin_once` blocks the node's thread while nothing arrives. It returns at once when
/// something does; the bound is the extra latency timers and other tasks can see while the node is idle.
pub const SPIN_TIMEOUT: Duration = Duration::from_millis(1);

/// Create the ROS context and a node. The context reads `--ros-args` from the process arguments, so
/// remappings (`-r __ns:=/robot`, `-r cmd_vel:=/base/cmd_vel`) and `--params-file` work as in any ROS node.
pub fn create_node(name: &str, namespace: &str) -> Result<r2r::Node> {
    python_link::keep();
    let ctx = context::create()?;
    r2r::Node::create(ctx, name, namespace).ros_context(format!("creating node `{name}`"))
}

/// A timer that never fires in practice (once a year), held for as long as the node spins: rcl returns at once
/// from a wait on an empty wait set, so a node with no subscriptions, services or timers (a `lockstep view`
/// before its first client, a CLI node) would spin a whole core. With it every wait blocks for
/// [`SPIN_TIMEOUT`] when nothing arrives.
pub fn idle_timer(node: &SharedNode) -> Result<r2r::Timer> {
    lock(node)?
        .create_wall_timer(Duration::from_secs(365 * 24 * 3600))
        .ros_context("creating the idle timer")
}

/// Spin the node forever, one `spin_once` at a time, yielding to every other task between two spins.
///
/// Why not a spinner thread: r2r hands each received message to its stream through a channel of 10 and
/// silently drops what does not fit. A spinner thread racing ahead of the consumers loses messages in any
/// burst. On one thread with a yield between spins, every stream woken by a spin is drained before the next
/// spin, and one spin takes at most one message per subscription, so the channel never fills; messages not
/// yet taken wait in the DDS reader's history (sized by the subscription's QoS), as in any ROS node.
/// Returns only if the node mutex was poisoned.
pub async fn spin(node: SharedNode) -> Error {
    spin_with(node, SPIN_TIMEOUT).await
}

/// [`spin`] with another bound on one `spin_once` while nothing arrives: longer makes an idle node cheaper
/// (each spin rebuilds and waits on the node's whole wait set) and delays the node's tasks that are woken by
/// something other than DDS (tokio timers, channels from other threads) by up to that much.
pub async fn spin_with(node: SharedNode, timeout: Duration) -> Error {
    loop {
        match node.lock() {
            Ok(mut node) => node.spin_once(timeout),
            Err(_) => return Error::Poisoned,
        }
        tokio::task::yield_now().await;
    }
}

/// Run a node until its main future ends or the process gets SIGINT/SIGTERM.
///
/// The node lives on one thread (a current-thread tokio runtime) with its tasks; see [`spin`] for why.
/// `setup` runs inside that runtime (so it may `tokio::spawn`; CPU-heavy work belongs in
/// `tokio::task::spawn_blocking`), receives the shared node to create its publishers, subscriptions,
/// services and actions, and returns the node's main future. On exit the node is dropped, which removes it
/// from the ROS graph.
pub fn run_node<S, Fut>(name: &str, setup: S) -> Result<()>
where
    S: FnOnce(SharedNode) -> std::result::Result<Fut, BoxError>,
    Fut: Future<Output = std::result::Result<(), BoxError>> + 'static,
{
    run_node_with(name, RunOptions::default(), setup)
}

/// How [`run_node_with`] stops.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// After SIGINT/SIGTERM, keep spinning and running the node's tasks until this drains.
    pub drain_on_shutdown: Option<Drain>,
    /// The bound on one `spin_once` while nothing arrives (see [`spin_with`]); `None`: [`SPIN_TIMEOUT`].
    pub spin_timeout: Option<Duration>,
}

/// A drain on shutdown: the node counts what it takes in `activity`; after the signal the node keeps spinning
/// (taking what DDS has already delivered to its readers) until `activity` stays unchanged for `quiet`, or at
/// most `max`.
#[derive(Debug, Clone)]
pub struct Drain {
    pub activity: Arc<std::sync::atomic::AtomicU64>,
    pub quiet: Duration,
    pub max: Duration,
}

impl Drain {
    /// Spin until `activity` has been still for `quiet` (or `max` passed); returns whether it went quiet.
    async fn settle(&self) -> bool {
        use std::sync::atomic::Ordering;
        let deadline = tokio::time::Instant::now() + self.max;
        loop {
            let before = self.activity.load(Ordering::SeqCst);
            tokio::time::sleep(self.quiet).await;
            if self.activity.load(Ordering::SeqCst) == before {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
        }
    }
}

/// [`run_node`] with options (for example a drain of what DDS delivered before stopping on a signal).
pub fn run_node_with<S, Fut>(name: &str, options: RunOptions, setup: S) -> Result<()>
where
    S: FnOnce(SharedNode) -> std::result::Result<Fut, BoxError>,
    Fut: Future<Output = std::result::Result<(), BoxError>> + 'static,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    // Listen for SIGINT/SIGTERM before anything else, so a signal during setup is a clean stop, not a kill.
    let shutdown = {
        let _entered = runtime.enter();
        ShutdownSignal::listen().map_err(Error::Runtime)?
    };
    let node: SharedNode = Arc::new(Mutex::new(create_node(name, "")?));
    let _keep_waiting = idle_timer(&node)?;

    let main = {
        let _entered = runtime.enter();
        setup(node.clone()).map_err(|source| Error::Node {
            node: name.to_owned(),
            source,
        })?
    };

    let outcome = runtime.block_on(async {
        let node_error = |source| Error::Node {
            node: name.to_owned(),
            source,
        };
        let spinner = spin_with(node.clone(), options.spin_timeout.unwrap_or(SPIN_TIMEOUT));
        tokio::pin!(main, spinner);
        tokio::select! {
            result = &mut main => return result.map_err(node_error),
            error = &mut spinner => return Err(error),
            () = shutdown.recv() => {}
        }
        let Some(drain) = options.drain_on_shutdown else {
            return Ok(());
        };
        tokio::select! {
            quiet = drain.settle() => {
                if !quiet {
                    let logger = logger_name(&node).unwrap_or_default();
                    log_info!(&logger, "still receiving {:?} after the stop signal; stopping now", drain.max);
                }
                Ok(())
            }
            result = &mut main => result.map_err(node_error),
            error = &mut spinner => Err(error),
        }
    });
    // Tasks may still hold publishers; stop them before the node goes.
    runtime.shutdown_timeout(Duration::from_secs(1));
    teardown_watchdog(name, outcome.is_ok());
    let serial = rcl_node::teardown_guard();
    drop(node);
    drop(serial);
    outcome
}

/// The longest a node's DDS teardown may take before the process ends without it.
const TEARDOWN_LIMIT: Duration = Duration::from_secs(10);

/// Fast DDS 2.14 can deadlock destroying a participant: the destroying thread waits for the participant's
/// listener to be free while a discovery thread, inside that listener, waits for a lock the destroying thread
/// holds. Everything the node had to do is done when its teardown starts, so if the teardown outlives
/// [`TEARDOWN_LIMIT`] the process ends (`_exit`: no atexit handlers, which could hang the same way) with the
/// node's own exit status, instead of hanging whoever stops it.
fn teardown_watchdog(name: &str, ok: bool) {
    let name = name.to_owned();
    let _ = std::thread::Builder::new()
        .name("teardown-watchdog".into())
        .spawn(move || {
            std::thread::sleep(TEARDOWN_LIMIT);
            eprintln!(
                "[WARN] [{name}]: the DDS participant's teardown hung for {TEARDOWN_LIMIT:?} (a Fast DDS shutdown deadlock); exiting without it"
            );
            // SAFETY: _exit ends the process at once; it touches no Rust state.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) }
        });
}

/// SIGINT and SIGTERM, caught from the moment [`ShutdownSignal::listen`] returns.
pub struct ShutdownSignal {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignal {
    /// Start catching the signals (must be called inside a tokio runtime).
    pub fn listen() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Resolves on the first SIGINT or SIGTERM received since `listen`.
    pub async fn recv(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
        }
    }
}

/// Typed parameters declared on a node.
pub struct Parameters<P> {
    /// The current values, kept up to date when someone sets a parameter.
    pub values: Arc<Mutex<P>>,
    /// Each change made from outside: (parameter name, new value).
    pub changes: futures::stream::BoxStream<'static, (String, r2r::ParameterValue)>,
}

impl<P: Clone> Parameters<P> {
    /// A copy of the current values.
    pub fn current(&self) -> Result<P> {
        Ok(self.values.lock().map_err(|_| Error::Poisoned)?.clone())
    }
}

/// Declare typed parameters on the node and serve them on its standard parameter services
/// (`~/get_parameters`, `~/set_parameters`, `~/describe_parameters`, ...). Values given with
/// `--ros-args -p name:=value` or `--params-file` are applied before this returns. Must be called inside the
/// tokio runtime (for example from [`run_node`]'s `setup`).
pub fn declare_parameters<P>(node: &SharedNode, params: P) -> Result<Parameters<P>>
where
    P: r2r::RosParams + Send + 'static,
{
    let values = Arc::new(Mutex::new(params));
    let (make_node, make_values) = (node.clone(), values.clone());
    let make = move || -> Result<_> {
        let mut n = lock(&make_node)?;
        // r2r's handler panics while holding these locks: clear the poison before making the services again.
        n.params.clear_poison();
        make_values.clear_poison();
        let handler = n
            .make_derived_parameter_handler(make_values.clone())
            .map_err(|e| match e {
                r2r::Error::InvalidParameterType { name, ty } => Error::Parameter(format!(
                    "parameter '{name}': the value given (with -p or in a parameter file) is not {}",
                    error::type_words(ty)
                )),
                e => Error::Ros {
                    action: "declaring parameters".into(),
                    source: e,
                },
            })?;
        check_sim_time(&n)?;
        Ok(handler)
    };
    let logger = logger_name(node)?;
    let on_restart = move |why: String| {
        log_warn!(
            &logger,
            "a parameter service could not answer ({why}); the parameter services are made again"
        );
    };
    let changes = parameter_service::supervise(make, on_restart)?;
    // Announced on /parameter_events like rclcpp and rclpy nodes do (a recorder stores them).
    let changes = parameter_events::announce(node, changes)?;
    Ok(Parameters { values, changes })
}

/// With `use_sim_time`, r2r follows `/clock` from the moment the parameter handler exists: the ROS clock
/// then reads zero until the first `/clock` message. If it reads the system time instead, the r2r this node
/// was built with has no `/clock` support (its build script, when it reuses generated bindings, leaves out the
/// settings that enable it), and the node would silently run on the wall clock: refuse to start.
fn check_sim_time(node: &r2r::Node) -> Result<()> {
    let use_sim_time = node
        .params
        .lock()
        .map_err(|_| Error::Poisoned)?
        .get("use_sim_time")
        .map(|p| p.value.clone());
    if use_sim_time != Some(r2r::ParameterValue::Bool(true)) {
        return Ok(());
    }
    let clock = node.get_ros_clock();
    match time::clock_now(&clock) {
        Some(now) if !now.is_zero() => Err(Error::Parameter(
            "use_sim_time is true but this build cannot follow /clock (r2r was compiled without \
             rosgraph_msgs/Clock support); rebuild it: `cargo clean -p r2r` then build again"
                .to_owned(),
        )),
        _ => Ok(()),
    }
}

impl<P: Clone> Parameters<Guarded<P>> {
    /// A copy of the current values of parameters declared with [`declare_checked_parameters`].
    pub fn snapshot(&self) -> Result<P> {
        Ok(self.values.lock().map_err(|_| Error::Poisoned)?.values())
    }
}

/// [`declare_parameters`] with rules: the values given at start (`-p`, `--params-file`) are checked against
/// `P`'s [`ParamRules`] (the first bad one is [`Error::Parameter`]: the node should not start), and every
/// run-time set is checked before it is taken: a bad one is refused with `successful: false` and the reason,
/// logged as a warning and counted ([`Guarded::refused`]), and the value in force stays. Install a guard
/// ([`Guarded::set_guard`], e.g. [`start_only`]) to refuse sets of parameters the node reads at start only.
pub fn declare_checked_parameters<P>(node: &SharedNode, params: P) -> Result<Parameters<Guarded<P>>>
where
    P: r2r::RosParams + ParamRules + Send + 'static,
{
    let logger = logger_name(node)?;
    let mut guarded = Guarded::new(params);
    guarded.set_logger(logger);
    let declared = declare_parameters(node, guarded)?;
    {
        let mut values = declared.values.lock().map_err(|_| Error::Poisoned)?;
        param_rules::check_all::<P>(&mut values).map_err(Error::Parameter)?;
    }
    Ok(declared)
}

/// [`declare_checked_parameters`] for a node that reads every parameter once, at start: returns their values
/// (a bad start value is [`Error::Parameter`]); from then on a run-time set is refused with its reason, a bad
/// value with its range and a good one with "read at start only; restart the node", rather than taken and
/// ignored.
pub fn declare_start_only_parameters<P>(node: &SharedNode, params: P) -> Result<P>
where
    P: r2r::RosParams + ParamRules + Clone + Send + 'static,
{
    let declared = declare_checked_parameters(node, params)?;
    let mut values = declared.values.lock().map_err(|_| Error::Poisoned)?;
    values.set_guard(start_only(&[]));
    Ok(values.values())
}

/// The node's logger name, for `r2r::log_*!` macros.
pub fn logger_name(node: &SharedNode) -> Result<String> {
    Ok(lock(node)?.logger().to_owned())
}
