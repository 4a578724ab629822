//! Lock-step replay over DDS: the orchestration of `lockstep_replay::lockstep` driving live module processes
//! through the step protocol (`lockstep_interfaces/srv/Step`, served by modules in step mode).
//!
//! Setup, before anything is published: find which modules of the recorded topology are live (their step
//! service and latched topology answer within the discovery time), compare their live wiring with the
//! recorded one (a live module reading a channel that neither the recording nor a live module has is an
//! error naming both), and create a publisher for every channel the live modules read that no live module
//! produces (external inputs, outputs of modules not running), with the QoS it was recorded with, waiting
//! until each has matched its live readers. Then each frame: publish the recorded inputs it names (once per
//! message), grant the step, and take the module's output from its answer; live upstream modules deliver
//! their simulated outputs to downstream modules themselves, over DDS.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{mpsc, Arc, Mutex};

use crate::intercepted::InterceptedNode;
use crate::remote_module::{Feeds, RemoteModule};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use futures::StreamExt as _;
use lockstep_bag_player::playback_qos;
pub use lockstep_replay::lockstep::WiringDrift;
use lockstep_replay::lockstep::{
    compare_wiring, fed_channels, live_readers, new_module_wiring, Module, NewModule, Recording,
};
use lockstep_ros::generic::GenericNode;
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_trace_ros::lockstep_trace::Component;
use lockstep_trace_ros::step::step_service_name;
use lockstep_trace_ros::{topology_from_msg, topology_topic, DependencyHeader, ModuleTopology};
use r2r::lockstep_interfaces::srv::Step;
use r2r::rosgraph_msgs::msg::Clock;

/// The replay node's name.
pub const NODE_NAME: &str = "lockstep_replay";

/// Longest wait for the replay's publishers to match the live modules' subscriptions.
const MATCH_TIMEOUT: Duration = Duration::from_secs(10);

/// How the DDS replay waits.
#[derive(Debug, Clone, Copy)]
pub struct DdsOptions {
    /// Longest wait for one step's answer (the module's own wait for inputs is this too).
    pub step_timeout: Duration,
    /// How long to look for live modules and for publishers to match them.
    pub discovery: Duration,
    /// Longest wait for an unmodified node to finish one granted event.
    pub event_timeout: Duration,
}

/// The live side of a DDS replay: one [`Module`] per live module process.
pub struct LiveModules {
    /// The modules, in recorded-topology order.
    pub modules: Vec<Box<dyn Module>>,
    /// How the live wiring differs from the recording.
    pub drift: WiringDrift,
    /// Channels whose recorded data this replay publishes.
    pub fed_channels: Vec<String>,
    /// Per live module: the channels it reads now (from its latched topology).
    pub live_reads: BTreeMap<String, BTreeSet<String>>,
    /// The live modules the recording does not have, with what they write.
    pub new_modules: Vec<NewModule>,
    // Keeps the node spinning and the publishers alive while the modules are used.
    _runtime: Runtime,
}

struct Runtime {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    handle: tokio::runtime::Handle,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Start the node, find the live modules (`expected`, or every module of the recording if empty, plus the
/// modules the recording does not have, each `(name, trigger channel)`) and prepare the feeds (nothing is
/// published yet).
pub fn connect(
    recording: &Recording,
    expected: &[String],
    new_modules: &[(String, String)],
    options: DdsOptions,
) -> anyhow::Result<LiveModules> {
    let node: SharedNode = Arc::new(Mutex::new(lockstep_ros::create_node(NODE_NAME, "")?));
    let runtime = start_runtime(node.clone())?;
    let handle = runtime.handle.clone();

    let found = discover(&node, &handle, recording, expected, new_modules, options)?;
    let live_wiring: BTreeMap<String, Component> =
        found.iter().map(|(m, (_, c))| (m.clone(), c.clone())).collect();
    let drift = compare_wiring(recording, &live_wiring).map_err(anyhow::Error::msg)?;
    let mut new_modules =
        new_module_wiring(recording, new_modules, &live_wiring).map_err(anyhow::Error::msg)?;
    add_new_module_types(&node, &mut new_modules)?;
    // What an unmodified node reads is what its recorded events deliver: only instrumented modules get
    // the latest message of a channel their recorded frame does not name.
    let live_reads = live_wiring
        .iter()
        .filter(|(m, _)| matches!(found.get(*m), Some((Live::Step(_), _))))
        .map(|(m, c)| (m.clone(), c.reader_channels.iter().cloned().collect()))
        .collect();
    let clock = lock(&node)?.create_publisher::<Clock>("/clock", qos::reliable(10))?;

    let readers = live_readers(recording, &live_wiring);
    let mut feeds = create_feeds(&node, recording, &readers)?;
    wait_for_matches(&feeds, options)?;
    feeds.headers = recording
        .frames
        .iter()
        .filter(|f| readers.contains_key(&f.header.channel_name))
        .map(|f| {
            let h = &f.header;
            ((h.channel_name.clone(), h.payload_digest), h.clone())
        })
        .collect();
    let fed_channels = fed_channels(&readers, &live_wiring);
    feeds.clock = Some(clock);
    let feeds = Arc::new(Mutex::new(feeds));
    let modules = found
        .into_iter()
        .map(|(name, (live, _))| match live {
            Live::Step(client) => Box::new(RemoteModule {
                name,
                client,
                handle: handle.clone(),
                feeds: feeds.clone(),
                timeout: options.step_timeout,
                last_process_time_ns: None,
            }) as Box<dyn Module>,
            Live::Intercepted(node) => Box::new(node) as Box<dyn Module>,
        })
        .collect::<Vec<_>>();
    Ok(LiveModules {
        modules,
        drift,
        fed_channels,
        live_reads,
        new_modules,
        _runtime: runtime,
    })
}

/// How a live module is driven: an instrumented module through its step service, an unmodified node through
/// the interceptor's grants.
enum Live {
    Step(r2r::Client<Step::Service>),
    Intercepted(InterceptedNode),
}

/// A live module found: how it is driven and the component its latched topology describes.
type Found = BTreeMap<String, (Live, Component)>;

type Answer = std::pin::Pin<Box<dyn std::future::Future<Output = r2r::Result<()>> + Send>>;

/// Look for the recorded modules (those `expected`, or all) and the new ones, every module with the same
/// deadline: a module is live when its step service (or, for a node the recording traced by interception,
/// the interceptor's grant subscription) and its latched topology answer in time.
fn discover(
    node: &SharedNode,
    handle: &tokio::runtime::Handle,
    recording: &Recording,
    expected: &[String],
    new_modules: &[(String, String)],
    options: DdsOptions,
) -> anyhow::Result<Found> {
    let recorded: Vec<String> = recording
        .topology
        .components
        .iter()
        .map(|c| c.module_name.clone())
        .filter(|m| expected.is_empty() || expected.contains(m))
        .chain(new_modules.iter().map(|(name, _)| name.clone()))
        .collect();
    let mut clients = Vec::new();
    {
        let mut n = lock(node)?;
        for module in &recorded {
            let client = n
                .create_client::<Step::Service>(&step_service_name(module), qos::reliable(10))
                .with_context(|| format!("creating the step client of {module}"))?;
            let available: Answer = Box::pin(r2r::Node::is_available(&client)?);
            let intercepted = if recording.has_event_log(module) {
                let (node, matched) = InterceptedNode::create(&mut n, handle, module, options.event_timeout)
                    .with_context(|| format!("creating the grant publisher of {module}"))?;
                Some((node, Box::pin(matched) as Answer))
            } else {
                None
            };
            let topology = n.subscribe::<ModuleTopology>(&topology_topic(module), qos::latched())?;
            clients.push((module.clone(), client, available, intercepted, topology));
        }
    }
    // Discover every module at once: each has the same deadline.
    let deadline = tokio::time::Instant::now() + options.discovery;
    let mut found = BTreeMap::new();
    for (module, client, available, intercepted, mut topology) in clients {
        let (intercepted, matched): (Option<InterceptedNode>, Answer) = match intercepted {
            Some((node, matched)) => (Some(node), matched),
            None => (None, Box::pin(futures::future::pending())),
        };
        let live = handle.block_on(async {
            let stepped = tokio::time::timeout_at(deadline, async {
                tokio::select! {
                    r = available => r.ok().map(|()| true),
                    r = matched => r.ok().map(|()| false),
                }
            })
            .await
            .ok()??;
            let msg = tokio::time::timeout_at(deadline, topology.next()).await.ok()??;
            Some((
                stepped,
                topology_from_msg(&msg)
                    .into_iter()
                    .find(|c| c.module_name == module),
            ))
        });
        match (live, intercepted) {
            (Some((true, Some(component))), _) => {
                found.insert(module, (Live::Step(client), component));
            }
            (Some((false, Some(component))), Some(node)) => {
                found.insert(module, (Live::Intercepted(node), component));
            }
            (Some((_, None)), _) => {
                bail!("module `{module}` answers but its latched topology does not describe it")
            }
            _ => {}
        }
    }
    Ok(found)
}

/// The type of each channel a new module writes, from the ROS graph (empty where the graph has none yet).
fn add_new_module_types(node: &SharedNode, new_modules: &mut [NewModule]) -> anyhow::Result<()> {
    let n = lock(node)?;
    let types = n.get_topic_names_and_types().unwrap_or_default();
    for m in new_modules {
        m.types = m
            .writes
            .iter()
            .map(|c| {
                (
                    c.clone(),
                    types.get(c).and_then(|t| t.first()).cloned().unwrap_or_default(),
                )
            })
            .collect();
    }
    Ok(())
}

/// A data and a header publisher for every recorded channel live modules read, with the QoS it was
/// recorded with.
fn create_feeds(
    node: &SharedNode,
    recording: &Recording,
    readers: &BTreeMap<String, usize>,
) -> anyhow::Result<Feeds> {
    let generic = GenericNode::new(NODE_NAME, "/")?;
    let mut feeds = Feeds::default();
    for (channel, count) in readers {
        let recorded = &recording.channels[channel];
        let chosen = playback_qos(channel, &recorded.offered_qos, None);
        let publisher = generic
            .publisher(channel, &recorded.type_name, qos::from_bag(&chosen.profile))
            .with_context(|| format!("cannot publish the recorded {channel}"))?;
        let header = lock(node)?.create_publisher::<DependencyHeader>(
            &format!("{channel}{}", lockstep_trace_ros::HEADER_TOPIC_SUFFIX),
            qos::reliable(100),
        )?;
        feeds
            .publishers
            .insert(channel.clone(), (publisher, header, *count));
    }
    feeds.node = Some(generic); // dropped after the publishers (field order)
    Ok(feeds)
}

/// Wait until every feed has matched its live readers. The readers exist (their modules answered):
/// matching them only takes DDS time, so the wait is generous.
fn wait_for_matches(feeds: &Feeds, options: DdsOptions) -> anyhow::Result<()> {
    let match_limit = options.discovery.max(MATCH_TIMEOUT);
    let started = Instant::now();
    for (channel, (publisher, _, count)) in &feeds.publishers {
        while publisher.subscription_count() < *count {
            if started.elapsed() > match_limit {
                bail!(
                    "{channel}: {} of its {count} live reader(s) matched the replay's publisher within {} ms",
                    publisher.subscription_count(),
                    match_limit.as_millis()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    Ok(())
}

/// The node spinning on its own thread (a current-thread runtime), until dropped.
fn start_runtime(node: SharedNode) -> anyhow::Result<Runtime> {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (sender, receiver) = mpsc::channel();
    let keep_waiting = lockstep_ros::idle_timer(&node)?;
    let thread = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("replay-spin".into())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                    return;
                };
                let _ = sender.send(runtime.handle().clone());
                let _keep_waiting = keep_waiting;
                runtime.block_on(async move {
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        match node.lock() {
                            Ok(mut n) => n.spin_once(lockstep_ros::SPIN_TIMEOUT),
                            Err(_) => return,
                        }
                        tokio::task::yield_now().await;
                    }
                });
            })?
    };
    let handle = receiver
        .recv()
        .context("the replay node's runtime did not start")?;
    Ok(Runtime {
        stop,
        thread: Some(thread),
        handle,
    })
}
