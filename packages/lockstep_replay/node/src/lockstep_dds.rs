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
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use futures::StreamExt as _;
use lockstep_bag_player::playback_qos;
use lockstep_replay::lockstep::{Module, NewModule, Recording, StepInput};
use lockstep_ros::generic::{GenericNode, GenericPublisher};
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_trace_ros::lockstep_trace::{Component, TraceHeader};
use lockstep_trace_ros::step::step_service_name;
use lockstep_trace_ros::{
    header_to_msg, topology_from_msg, topology_topic, DependencyHeader, ModuleTopology,
};
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
}

/// The differences between the recorded and the live wiring.
#[derive(Debug, Clone, Default)]
pub struct WiringDrift {
    /// (module, channel) a live module reads that its recorded wiring did not.
    pub new_inputs: Vec<(String, String)>,
    /// (module, channel) the recorded wiring read that the live module no longer does.
    pub missing_inputs: Vec<(String, String)>,
    /// (module, channel) a live module writes that its recorded wiring did not.
    pub new_outputs: Vec<(String, String)>,
    /// (module, channel) the recorded wiring wrote that the live module no longer does.
    pub missing_outputs: Vec<(String, String)>,
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

    let recorded: Vec<String> = recording
        .topology
        .components
        .iter()
        .map(|c| c.module_name.clone())
        .filter(|m| expected.is_empty() || expected.contains(m))
        .chain(new_modules.iter().map(|(name, _)| name.clone()))
        .collect();
    let mut clients = BTreeMap::new();
    {
        let mut n = lock(&node)?;
        for module in &recorded {
            let client = n
                .create_client::<Step::Service>(&step_service_name(module), qos::reliable(10))
                .with_context(|| format!("creating the step client of {module}"))?;
            let available = r2r::Node::is_available(&client)?;
            let topology = n.subscribe::<ModuleTopology>(&topology_topic(module), qos::latched())?;
            clients.insert(module.clone(), (client, available, topology));
        }
    }
    // Discover every module at once: each has the same deadline.
    let deadline = tokio::time::Instant::now() + options.discovery;
    let mut found = BTreeMap::new();
    for (module, (client, available, mut topology)) in clients {
        let live = handle.block_on(async {
            tokio::time::timeout_at(deadline, available).await.ok()?.ok()?;
            let msg = tokio::time::timeout_at(deadline, topology.next()).await.ok()??;
            Some(
                topology_from_msg(&msg)
                    .into_iter()
                    .find(|c| c.module_name == module),
            )
        });
        match live {
            Some(Some(component)) => {
                found.insert(module, (client, component));
            }
            Some(None) => bail!("module `{module}` answers but its latched topology does not describe it"),
            None => {}
        }
    }
    let live_wiring: BTreeMap<String, Component> =
        found.iter().map(|(m, (_, c))| (m.clone(), c.clone())).collect();
    let drift = compare_wiring(recording, &live_wiring)?;
    let mut new_modules = new_module_wiring(recording, new_modules, &live_wiring)?;
    {
        let n = lock(&node)?;
        let types = n.get_topic_names_and_types().unwrap_or_default();
        for m in &mut new_modules {
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
    }
    let live_reads = live_wiring
        .iter()
        .map(|(m, c)| (m.clone(), c.reader_channels.iter().cloned().collect()))
        .collect();
    let clock = lock(&node)?.create_publisher::<Clock>("/clock", qos::reliable(10))?;

    // Channels the live modules read that no live module writes: the replay publishes their recordings.
    let live_written: BTreeSet<&String> = live_wiring.values().flat_map(|c| &c.writer_channels).collect();
    // Channels a live module writes get a publisher too: a frame whose upstream output was not simulated
    // gets the recorded message as its backup input.
    let mut readers: BTreeMap<String, usize> = BTreeMap::new();
    for c in live_wiring.values() {
        for channel in &c.reader_channels {
            if recording.channels.contains_key(channel) {
                *readers.entry(channel.clone()).or_default() += 1;
            }
        }
    }
    let generic = GenericNode::new(NODE_NAME, "/")?;
    let mut feeds = Feeds::default();
    for (channel, count) in &readers {
        let recorded = &recording.channels[channel];
        let chosen = playback_qos(channel, &recorded.offered_qos, None);
        let publisher = generic
            .publisher(channel, &recorded.type_name, qos::from_bag(&chosen.profile))
            .with_context(|| format!("cannot publish the recorded {channel}"))?;
        let header = lock(&node)?.create_publisher::<DependencyHeader>(
            &format!("{channel}{}", lockstep_trace_ros::HEADER_TOPIC_SUFFIX),
            qos::reliable(100),
        )?;
        feeds
            .publishers
            .insert(channel.clone(), (publisher, header, *count));
    }
    // The readers exist (their modules answered): matching them only takes DDS time, so wait generously.
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
    feeds.headers = recording
        .frames
        .iter()
        .filter(|f| readers.contains_key(&f.header.channel_name))
        .map(|f| {
            let h = &f.header;
            ((h.channel_name.clone(), h.payload_digest), h.clone())
        })
        .collect();
    let fed_channels = readers
        .keys()
        .filter(|c| !live_written.contains(c))
        .cloned()
        .collect();
    feeds.clock = Some(clock);
    feeds.node = Some(generic); // dropped after the publishers (field order)
    let feeds = Arc::new(Mutex::new(feeds));
    let modules = found
        .into_iter()
        .map(|(name, (client, _))| {
            Box::new(RemoteModule {
                name,
                client,
                handle: handle.clone(),
                feeds: feeds.clone(),
                timeout: options.step_timeout,
                last_process_time_ns: None,
            }) as Box<dyn Module>
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

/// The recorded data the replay publishes, once per message.
#[derive(Default)]
struct Feeds {
    /// Per channel: data publisher, header publisher, live readers.
    publishers: BTreeMap<String, (GenericPublisher, r2r::Publisher<DependencyHeader>, usize)>,
    /// Recorded headers of fed channels by (channel, digest), published after their data.
    headers: BTreeMap<(String, u64), TraceHeader>,
    published: BTreeSet<(String, u64)>,
    /// `/clock`, with each frame's recorded start time.
    clock: Option<r2r::Publisher<Clock>>,
    node: Option<GenericNode>,
}

impl Feeds {
    fn publish(&mut self, input: &StepInput<'_>) -> Result<(), String> {
        let Some((data, header, _)) = self.publishers.get(input.channel) else {
            return Ok(()); // no live reader of it
        };
        if !self
            .published
            .insert((input.channel.to_owned(), input.payload_digest))
        {
            return Ok(());
        }
        data.publish(input.data)
            .map_err(|e| format!("publishing the recorded {}: {e}", input.channel))?;
        if let Some(h) = self
            .headers
            .get(&(input.channel.to_owned(), input.payload_digest))
        {
            header
                .publish(&header_to_msg(h))
                .map_err(|e| format!("publishing the recorded header of {}: {e}", input.channel))?;
        }
        Ok(())
    }
}

/// A live module process, stepped through its step service.
struct RemoteModule {
    name: String,
    client: r2r::Client<Step::Service>,
    handle: tokio::runtime::Handle,
    feeds: Arc<Mutex<Feeds>>,
    timeout: Duration,
    last_process_time_ns: Option<u32>,
}

impl Module for RemoteModule {
    fn name(&self) -> &str {
        &self.name
    }

    fn step(&mut self, frame: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        // One output: the group of one frame (one request path for both).
        let mut outputs = self.step_group(&[frame], inputs)?;
        outputs.pop().ok_or_else(|| {
            format!(
                "`{}` answered the step of {} without its output",
                self.name,
                frame_id(frame)
            )
        })
    }

    fn step_group(
        &mut self,
        frames: &[&TraceHeader],
        inputs: &[StepInput<'_>],
    ) -> Result<Vec<Vec<u8>>, String> {
        let Some((first, more)) = frames.split_first() else {
            return Ok(Vec::new());
        };
        {
            let mut feeds = self
                .feeds
                .lock()
                .map_err(|_| "the feeds lock is poisoned".to_owned())?;
            for input in inputs.iter().filter(|i| !i.simulated) {
                feeds.publish(input)?;
            }
            // Each frame's recorded start time goes on /clock before its step is granted, so a module
            // running with `use_sim_time` reads the recorded time from `now()`.
            if let Some(clock) = &feeds.clock {
                clock
                    .publish(&clock_at(first.start_time_ns))
                    .map_err(|e| format!("publishing /clock: {e}"))?;
            }
        }
        // Every frame of the computation names the same inputs: each gets the digests the replay wants.
        let wanted = |frame: &TraceHeader| {
            let mut wanted = frame.clone();
            for (record, input) in wanted.inputs.iter_mut().zip(inputs) {
                record.payload_digest = input.payload_digest;
            }
            header_to_msg(&wanted)
        };
        let request = Step::Request {
            frame: wanted(first),
            timeout_ms: u32::try_from(self.timeout.as_millis()).unwrap_or(u32::MAX),
            more_frames: more.iter().map(|f| wanted(f)).collect(),
        };
        let answer = self
            .client
            .request(&request)
            .map_err(|e| format!("sending the step: {e}"))?;
        let (sender, receiver) = mpsc::channel();
        self.handle.spawn(async move {
            let _ = sender.send(answer.await);
        });
        // The module refuses by itself after `timeout`; give its answer time to come back.
        let response = receiver
            .recv_timeout(self.timeout + Duration::from_millis(1000))
            .map_err(|_| format!("no answer within {} ms", self.timeout.as_millis()))?
            .map_err(|e| format!("the step call failed: {e}"))?;
        if !response.success {
            return Err(response.message);
        }
        if response.more_outputs.len() != more.len() {
            return Err(format!(
                "the step of {} named {} output(s), `{}` answered with {}",
                frame_id(first),
                frames.len(),
                self.name,
                1 + response.more_outputs.len()
            ));
        }
        self.last_process_time_ns = Some(response.process_time_ns);
        let mut outputs = Vec::with_capacity(frames.len());
        outputs.push(response.data);
        outputs.extend(response.more_outputs.into_iter().map(|o| o.data));
        Ok(outputs)
    }

    fn last_process_time_ns(&self) -> Option<u32> {
        self.last_process_time_ns
    }
}

/// `/clock` at `ns` since the Unix epoch (times before it are clamped to it).
fn clock_at(ns: i64) -> Clock {
    let ns = ns.max(0);
    Clock {
        clock: r2r::builtin_interfaces::msg::Time {
            sec: i32::try_from(ns / 1_000_000_000).unwrap_or(i32::MAX),
            nanosec: u32::try_from(ns % 1_000_000_000).unwrap_or(0),
        },
    }
}

/// The wiring of the live modules the recording does not have: each must be live, read its trigger and
/// write at least one channel.
fn new_module_wiring(
    recording: &Recording,
    new_modules: &[(String, String)],
    live: &BTreeMap<String, Component>,
) -> anyhow::Result<Vec<NewModule>> {
    let mut out = Vec::new();
    for (name, trigger) in new_modules {
        let Some(component) = live.get(name) else {
            bail!("--new-module {name}:{trigger}: no module `{name}` answered on its step service");
        };
        if !component.reader_channels.contains(trigger) {
            bail!(
                "--new-module {name}:{trigger}: `{name}` does not read {trigger} (it reads {})",
                component
                    .reader_channels
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if !recording.channels.contains_key(trigger) && recording.producer(trigger).is_none() {
            bail!("--new-module {name}:{trigger}: the recording has no {trigger}");
        }
        if component.writer_channels.is_empty() {
            bail!("--new-module {name}:{trigger}: `{name}` writes no channel");
        }
        out.push(NewModule {
            name: name.clone(),
            trigger: trigger.clone(),
            writes: component.writer_channels.iter().cloned().collect(),
            types: BTreeMap::new(), // from the ROS graph, once every module is found
        });
    }
    Ok(out)
}

/// `<channel> #<sequence>`: how messages name a frame.
fn frame_id(frame: &TraceHeader) -> String {
    format!("{} #{}", frame.channel_name, frame.sequence_num)
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

/// Compare the live wiring with the recorded one. A live module reading a channel that the recording lacks
/// and no live module writes is an error naming both; other differences are listed.
fn compare_wiring(recording: &Recording, live: &BTreeMap<String, Component>) -> anyhow::Result<WiringDrift> {
    let live_written: BTreeSet<&String> = live.values().flat_map(|c| &c.writer_channels).collect();
    let mut drift = WiringDrift::default();
    for (module, component) in live {
        let Some(recorded) = recording.topology.component(module) else {
            continue;
        };
        for channel in component.reader_channels.difference(&recorded.reader_channels) {
            if !recording.channels.contains_key(channel) && !live_written.contains(channel) {
                bail!(
                    "live module `{module}` reads {channel}, which the recording lacks and no live module writes: nothing to replay it from"
                );
            }
            drift.new_inputs.push((module.clone(), channel.clone()));
        }
        for channel in recorded.reader_channels.difference(&component.reader_channels) {
            drift.missing_inputs.push((module.clone(), channel.clone()));
        }
        for channel in component.writer_channels.difference(&recorded.writer_channels) {
            drift.new_outputs.push((module.clone(), channel.clone()));
        }
        for channel in recorded.writer_channels.difference(&component.writer_channels) {
            drift.missing_outputs.push((module.clone(), channel.clone()));
        }
    }
    Ok(drift)
}
