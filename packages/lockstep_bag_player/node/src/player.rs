//! Setting up a play: open the bag, choose topics, window and QoS, create a generic publisher per topic
//! (every installed type plays, compiled in or not), start the read-ahead and play threads, the services
//! and `/clock`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use lockstep_bag::BagReader;
use lockstep_bag_player::{parse_qos_overrides, parse_remaps, playback_qos, TopicSelection, Window};
use lockstep_ros::generic::GenericNode;
use lockstep_ros::{lock, qos, SharedNode};
use r2r::rosgraph_msgs::msg::Clock;

use crate::config::{PlayConfig, PlayerParams};
use crate::control::Control;
use crate::engine::{Engine, Outlet, Plan};
use crate::readahead::ReadAhead;

/// Default node name (rosbag2's own player node is `rosbag2_player`).
pub const NODE_NAME: &str = "lockstep_bag_player";

/// What a caller of [`run`] learns once the play is set up (the CLI shows progress from it).
pub struct Started {
    pub control: Arc<Control>,
    /// Messages of the played topics in the bag (the progress total).
    pub total: u64,
}

type OnStart = Box<dyn FnOnce(&Started) + Send>;

/// Run the player node until playback ends (with `exit_at_end`) or SIGINT/SIGTERM. `defaults` are the
/// parameters' values before `--ros-args` (the node binary passes the defaults, the CLI its flags).
pub fn run(defaults: PlayerParams, looped: bool, on_start: Option<OnStart>) -> anyhow::Result<()> {
    let running: Running = Arc::default();
    let slot = running.clone();
    let outcome = lockstep_ros::run_node(NODE_NAME, move |node| {
        Ok(setup(node, defaults, looped, on_start, &slot)?)
    });
    // Stop the play thread (on a signal it is still running) and wait for it, so publishers go cleanly.
    let taken = running.lock().ok().and_then(|mut r| r.take());
    if let Some((control, thread)) = taken {
        control.stop();
        let _ = thread.join();
    }
    outcome.context(NODE_NAME)
}

type Running = Arc<Mutex<Option<(Arc<Control>, std::thread::JoinHandle<()>)>>>;

fn setup(
    node: SharedNode,
    defaults: PlayerParams,
    looped_default: bool,
    on_start: Option<OnStart>,
    running: &Running,
) -> anyhow::Result<impl std::future::Future<Output = Result<(), lockstep_ros::BoxError>>> {
    // A bad start value stops the node naming the parameter and its range; every parameter is read at start
    // only (a new play through `~/play` takes its own options), so a run-time set is refused saying so.
    let params = lockstep_ros::declare_start_only_parameters(&node, defaults)?;
    let looped = looped_default || loop_parameter(&node)?;
    let config = PlayConfig::from_params(&params, looped)?;
    let logger = lockstep_ros::logger_name(&node)?;

    let bag = OpenBag::open(&config)?;
    let (name, namespace) = {
        let n = lock(&node)?;
        (n.name()?, n.namespace()?)
    };
    let generic = GenericNode::new(&name, &namespace).context("starting the generic node")?;
    let (outlets, total) = create_outlets(&generic, &bag, &logger)?;

    let played_topics = outlets.len();
    let control = Arc::new(Control::new(config.rate, config.start_paused));
    control.total.store(total, std::sync::atomic::Ordering::Relaxed);
    // /clock shows the start of the window until the play starts (after waiting for subscribers, the delay).
    let window = bag.window;
    control.change(|s, wall| s.clock.jump(window.start_ns, wall));
    let done_rx = start_play_thread(&config, bag, outlets, generic, &control, &logger, running)?;
    if let Some(on_start) = on_start {
        on_start(&Started {
            control: control.clone(),
            total,
        });
    }
    r2r::log_info!(
        &logger,
        "playing {} ({played_topics} topics, {total} messages) at rate {}{}",
        config.bag.display(),
        config.rate,
        if config.start_paused { ", paused" } else { "" }
    );

    let services = crate::services::serve(&node, control.clone())?;
    let clock = clock_task(&node, control, config.clock_hz)?;
    let exit_at_end = config.exit_at_end;
    let bag = config.bag.clone();
    Ok(async move {
        let ended = async move {
            let failed = done_rx.await.ok().flatten();
            if !exit_at_end {
                futures::future::pending::<()>().await;
            }
            failed
        };
        tokio::select! {
            failed = ended => {
                if let Some(e) = failed {
                    // The play stopped where the bag could not be read: not what was asked for.
                    return Err(format!("{}: {e}", bag.display()).into());
                }
            }
            () = services => {}
            () = clock => {}
        }
        Ok(())
    })
}

/// The bag opened for a play: its reader and time range, the selected topics, their remaps and QoS
/// overrides, and the window to play.
struct OpenBag {
    reader: BagReader,
    bag_start_ns: u64,
    bag_end_ns: u64,
    selected: Vec<String>,
    remaps: BTreeMap<String, String>,
    overrides: BTreeMap<String, lockstep_bag::QosProfile>,
    window: Window,
}

impl OpenBag {
    /// Open the bag of `config` and check its options against it: a bad bag or option is an error.
    fn open(config: &PlayConfig) -> anyhow::Result<Self> {
        let reader =
            BagReader::open(&config.bag).with_context(|| format!("opening bag {}", config.bag.display()))?;
        let (bag_start_ns, bag_end_ns) = reader
            .time_range()
            .with_context(|| format!("bag {} has no messages", config.bag.display()))?;
        let selection = TopicSelection::new(&config.topics, &config.regex, &config.exclude_regex)?;
        let selected = selection.select(reader.topics().iter().map(|t| t.metadata.name.as_str()))?;
        let remaps = parse_remaps(&config.remaps)?;
        let overrides = match &config.qos_overrides_path {
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                parse_qos_overrides(&text, path)?
            }
            None => BTreeMap::new(),
        };
        let window = Window::new(
            bag_start_ns,
            bag_end_ns,
            config.start_offset_secs,
            config.playback_duration_secs,
            config.playback_until_ns,
        )?;
        Ok(Self {
            reader,
            bag_start_ns,
            bag_end_ns,
            selected,
            remaps,
            overrides,
            window,
        })
    }
}

/// A publisher for every selected topic whose type is installed (others are logged and skipped), under its
/// remapped name, with the recorded or overridden QoS; and the number of messages they play. None playable
/// is an error.
fn create_outlets(
    generic: &GenericNode,
    bag: &OpenBag,
    logger: &str,
) -> anyhow::Result<(BTreeMap<String, Outlet>, u64)> {
    let mut outlets = BTreeMap::new();
    let mut total = 0;
    for topic in bag
        .reader
        .topics()
        .iter()
        .filter(|t| bag.selected.contains(&t.metadata.name))
    {
        let bag_name = &topic.metadata.name;
        let type_name = &topic.metadata.type_name;
        let out_name = bag
            .remaps
            .get(bag_name)
            .cloned()
            .unwrap_or_else(|| bag_name.clone());
        let chosen = playback_qos(
            bag_name,
            &topic.metadata.offered_qos_profiles,
            bag.overrides.get(bag_name),
        );
        if let Some(note) = &chosen.note {
            r2r::log_warn!(logger, "{note}");
        }
        match generic.publisher(&out_name, type_name, qos::from_bag(&chosen.profile)) {
            Ok(publisher) => {
                total += topic.message_count;
                outlets.insert(
                    bag_name.clone(),
                    Outlet {
                        publisher,
                        name: out_name,
                        failing: false,
                    },
                );
            }
            Err(e) => r2r::log_warn!(logger, "not playing {bag_name} ({type_name}): {e}"),
        }
    }
    anyhow::ensure!(
        !outlets.is_empty(),
        "none of the selected topics ({}) can be played (see the warnings above)",
        bag.selected.join(", ")
    );
    for unknown in bag.overrides.keys().filter(|t| !outlets.contains_key(*t)) {
        r2r::log_warn!(
            logger,
            "QoS override for {unknown}: not a played topic of this bag"
        );
    }
    Ok((outlets, total))
}

/// Start the read-ahead and the play thread (kept in `running`); the receiver tells when the play thread
/// ended, and why the bag could not be read to its end if so.
fn start_play_thread(
    config: &PlayConfig,
    bag: OpenBag,
    outlets: BTreeMap<String, Outlet>,
    generic: GenericNode,
    control: &Arc<Control>,
    logger: &str,
    running: &Running,
) -> anyhow::Result<tokio::sync::oneshot::Receiver<Option<String>>> {
    let topics: BTreeSet<String> = outlets.keys().cloned().collect();
    let reader = ReadAhead::start(bag.reader, topics, config.read_ahead_queue_size)?;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<Option<String>>();
    let engine = Engine {
        control: control.clone(),
        reader,
        outlets,
        plan: Plan {
            bag_start_ns: bag.bag_start_ns,
            bag_end_ns: bag.bag_end_ns,
            window: bag.window,
            looped: config.looped,
            delay_ns: (config.delay_secs * 1e9).round() as u64,
            wait_for_all_acked: Duration::from_millis(config.wait_for_all_acked_ms),
            wait_for_subscribers: config.wait_for_subscribers,
        },
        logger: logger.to_owned(),
        exit_at_end: config.exit_at_end,
        next: None,
        lateness: lockstep_bag_player::Lateness::default(),
        span: None,
        spent: Vec::new(),
        failed: None,
    };
    let thread = std::thread::Builder::new()
        .name("bag-play".into())
        .spawn(move || {
            let failed = engine.run();
            // Keeps the generic node (and so every publisher's node) alive as long as the play thread.
            drop(generic);
            let _ = done_tx.send(failed);
        })?;
    if let Ok(mut slot) = running.lock() {
        *slot = Some((control.clone(), thread));
    }
    Ok(done_rx)
}

/// The parameter `loop` (a Rust keyword, so not a field of [`PlayerParams`]): read from what `--ros-args`
/// gave the node.
fn loop_parameter(node: &SharedNode) -> anyhow::Result<bool> {
    let n = lock(node)?;
    let params = n.params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
    match params.get("loop").map(|p| &p.value) {
        None | Some(r2r::ParameterValue::NotSet) => Ok(false),
        Some(r2r::ParameterValue::Bool(b)) => Ok(*b),
        Some(other) => anyhow::bail!("parameter `loop`: {other:?} is not a boolean"),
    }
}

/// Publish `/clock` with the bag time at `hz` (nothing when 0); while paused it stays still.
fn clock_task(
    node: &SharedNode,
    control: Arc<Control>,
    hz: f64,
) -> anyhow::Result<futures::future::BoxFuture<'static, ()>> {
    use futures::FutureExt as _;
    if hz <= 0.0 {
        return Ok(futures::future::pending().boxed());
    }
    let publisher = lock(node)?.create_publisher::<Clock>("/clock", qos::reliable(10))?;
    Ok(async move {
        let mut interval = tokio::time::interval(Duration::from_secs_f64(1.0 / hz));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            let clock = Clock {
                clock: lockstep_ros::time::ns_to_time(control.bag_now() as i64),
            };
            let _ = publisher.publish(&clock);
        }
    }
    .boxed())
}
