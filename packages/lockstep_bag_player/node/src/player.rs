//! Setting up a play: open the bags, choose topics, window and QoS, create a generic publisher per topic
//! (every installed type plays, compiled in or not), start the read-ahead threads (one per bag, merged) and
//! the play thread, the services and `/clock`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use lockstep_bag_player::{Merged, OpenBag};
use lockstep_ros::generic::GenericNode;
use lockstep_ros::{lock, qos, SharedNode};
use r2r::rosgraph_msgs::msg::Clock;

use crate::config::{FromParams as _, PlayConfig, PlayerParams};
use crate::control::Control;
use crate::engine::{Caller, Engine, Outlet, Outlets, Plan};

/// Default node name (rosbag2's own player node is `rosbag2_player`).
pub const NODE_NAME: &str = "lockstep_bag_player";

/// What a caller of [`run`] learns once the play is set up (the CLI shows progress from it).
pub struct Started {
    pub control: Arc<Control>,
    /// Messages of the played topics in the bags (the progress total).
    pub total: u64,
    /// The window played (bag times, ns), for the progress line's percent.
    pub start_ns: u64,
    pub end_ns: u64,
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
    let (outlets, callers, total) = create_outlets(&generic, &bag, &config, &logger)?;
    let clock = clock_topics_publisher(&node, &config, &outlets, &logger)?;
    let played_topics = outlets.len() + callers.len();
    let sink = Outlets {
        outlets,
        callers,
        requests: config.requests,
        clock,
        logger: logger.clone(),
    };
    let control = Arc::new(Control::new(config.rate, config.start_paused));
    control.total.store(total, std::sync::atomic::Ordering::Relaxed);
    // /clock shows the start of the window until the play starts (after waiting for subscribers, the delay).
    let window = bag.window;
    control.change(|s, wall| s.clock.jump(window.start_ns, wall));
    let done_rx = start_play_thread(&config, bag, sink, generic, &control, running)?;
    if let Some(on_start) = on_start {
        on_start(&Started {
            control: control.clone(),
            total,
            start_ns: window.start_ns,
            end_ns: window.end_ns,
        });
    }
    let bags: Vec<String> = config.bags.iter().map(|b| b.display().to_string()).collect();
    r2r::log_info!(
        &logger,
        "playing {} ({played_topics} topics, {total} messages) at rate {}{}",
        bags.join(", "),
        config.rate,
        if config.start_paused { ", paused" } else { "" }
    );

    let services = crate::services::serve(&node, control.clone())?;
    let clock = clock_task(&node, control, config.clock_hz)?;
    let exit_at_end = config.exit_at_end;
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
                    // The play stopped where a bag could not be read (named in `e`): not what was asked for.
                    return Err(e.into());
                }
            }
            () = services => {}
            () = clock => {}
        }
        Ok(())
    })
}

/// The publishers and the callers of recorded services, by bag topic name.
type PlayedTopics = BTreeMap<String, Outlet>;
type Callers = BTreeMap<String, Caller>;

/// A publisher for every selected topic whose type is installed (others are logged and skipped), under its
/// remapped name, with the recorded or overridden QoS, or a client for the recorded calls sent to live
/// servers; and the number of messages they play. None playable is an error.
fn create_outlets(
    generic: &GenericNode,
    bag: &OpenBag,
    config: &PlayConfig,
    logger: &str,
) -> anyhow::Result<(PlayedTopics, Callers, u64)> {
    let mut outlets = BTreeMap::new();
    let mut callers = BTreeMap::new();
    let mut total = 0;
    for topic in bag.topic_plans() {
        if let Some(note) = &topic.note {
            r2r::log_warn!(logger, "{note}");
        }
        let (bag_name, type_name) = (&topic.bag_name, &topic.type_name);
        if let Some(service) = config.requests.target(&topic.out_name, type_name) {
            match generic.event_client(&service, type_name) {
                Ok(client) => {
                    total += topic.message_count;
                    let caller = Caller {
                        client,
                        service,
                        ready: false,
                        failing: false,
                    };
                    callers.insert(bag_name.clone(), caller);
                }
                Err(e) => r2r::log_warn!(logger, "not calling {service} ({type_name}): {e}"),
            }
            continue;
        }
        match generic.publisher(&topic.out_name, type_name, qos::from_bag(&topic.qos)) {
            Ok(publisher) => {
                total += topic.message_count;
                let name = topic.out_name.clone();
                let outlet = Outlet {
                    publisher,
                    name,
                    failing: false,
                };
                outlets.insert(bag_name.clone(), outlet);
            }
            Err(e) => r2r::log_warn!(logger, "not playing {bag_name} ({type_name}): {e}"),
        }
    }
    anyhow::ensure!(
        !outlets.is_empty() || !callers.is_empty(),
        "none of the selected topics ({}) can be played (see the warnings above)",
        bag.selected.join(", ")
    );
    for warning in bag.unused_overrides(|t| outlets.contains_key(t)) {
        r2r::log_warn!(logger, "{warning}");
    }
    Ok((outlets, callers, total))
}

/// `/clock` for `clock_topics` / `clock_topics_all` (none otherwise), published from the play thread; a
/// listed topic that does not play is a warning (it would never move the clock).
fn clock_topics_publisher(
    node: &SharedNode,
    config: &PlayConfig,
    outlets: &BTreeMap<String, Outlet>,
    logger: &str,
) -> anyhow::Result<Option<r2r::Publisher<Clock>>> {
    if let lockstep_bag_player::ClockTopics::Listed(topics) = &config.clock_topics {
        for topic in topics.iter().filter(|t| !outlets.contains_key(*t)) {
            r2r::log_warn!(
                logger,
                "clock topic {topic} is not a played topic: it publishes no /clock"
            );
        }
    }
    if config.clock_topics.is_off() {
        return Ok(None);
    }
    Ok(Some(
        lock(node)?.create_publisher::<Clock>("/clock", qos::reliable(10))?,
    ))
}

/// Start the read-ahead threads and the play thread (kept in `running`); the receiver tells when the play
/// thread ended, and why a bag could not be read to its end if so.
fn start_play_thread(
    config: &PlayConfig,
    bag: OpenBag,
    sink: Outlets,
    generic: GenericNode,
    control: &Arc<Control>,
    running: &Running,
) -> anyhow::Result<tokio::sync::oneshot::Receiver<Option<String>>> {
    let topics: BTreeSet<String> = sink.outlets.keys().chain(sink.callers.keys()).cloned().collect();
    let bags = (bag.readers.into_iter())
        .map(|(path, reader)| (path.display().to_string(), reader))
        .collect();
    let reader = Merged::start(bags, &topics, config.read_ahead_queue_size, config.message_order)?;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<Option<String>>();
    let plan = Plan {
        bag_start_ns: bag.bag_start_ns,
        bag_end_ns: bag.bag_end_ns,
        window: bag.window,
        looped: config.looped,
        delay_ns: (config.delay_secs * 1e9).round() as u64,
        wait_for_all_acked: Duration::from_millis(config.wait_for_all_acked_ms),
        wait_for_subscribers: config.wait_for_subscribers,
        clock_topics: config.clock_topics.clone(),
    };
    let engine = Engine::new(control.clone(), reader, sink, plan, config.exit_at_end);
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
