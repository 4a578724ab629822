//! The graph to the WebSocket server: every `period` the node looks at the ROS graph; each topic the
//! selection matches (and that has a publisher, whose QoS the subscription adapts to) is advertised with its
//! `ros2msg` schema; a topic gone from the graph is unadvertised. A topic is subscribed (through
//! `lockstep_ros::generic`, so every installed type works) when a client first subscribes to its channel, and
//! unsubscribed when its last client leaves it or it leaves the graph (no DDS reader while no one looks). With `sim_time`, `/clock` drives the
//! protocol's time messages and stamps every relayed message; otherwise messages carry their receive time.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use lockstep_bag::MessageDefinitions;
use lockstep_recorder::{adapt_qos, TopicSelection};
use lockstep_ros::generic::{GenericNode, SubscriptionId};
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_view::graph::{first_types, time_ns, vanished, wall_ns, DropWatch};
use lockstep_view::{Event, Server, ServerOptions};
use r2r::rosgraph_msgs::msg::Clock;

use crate::access::Access;
use crate::params::Parameters;
use crate::services::{self, Services};

/// How long one parameter service call may take (a node that does not answer is reported, not waited on).
const PARAMETER_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a relayed service call may take.
const SERVICE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the view serves and how.
#[derive(Debug, Clone)]
pub struct ViewOptions {
    /// Where to listen.
    pub address: SocketAddr,
    /// Which topics to offer.
    pub selection: TopicSelection,
    /// How often to look at the graph.
    pub period: Duration,
    /// Data messages kept per client before its oldest are dropped.
    pub queue_len: usize,
    /// Offer `/clock` as the protocol's time and stamp messages with it.
    pub sim_time: bool,
    /// Offer the nodes' parameters (`getParameters` / `setParameters`).
    pub parameters: bool,
    /// Offer the graph's services (calls in JSON).
    pub services: bool,
    /// Allowlists, token, TLS.
    pub access: Access,
}

/// One advertised topic.
struct Topic {
    type_name: String,
    channel_id: u32,
    /// The relaying subscription, while some client looks at the channel.
    subscription: Option<SubscriptionId>,
}

/// Serves the graph until the node stops.
pub async fn run(node: SharedNode, options: ViewOptions) -> anyhow::Result<()> {
    let logger = lockstep_ros::logger_name(&node)?;
    let server_options = ServerOptions {
        data_queue_len: options.queue_len,
        time: options.sim_time,
        parameters: options.parameters,
        services: options.services,
        allow_topics: options.access.allow_topics.clone(),
        allow_services: options.access.allow_services.clone(),
        allow_parameters: options.access.allow_parameters.clone(),
        token: options.access.token.clone(),
        tls: options.access.tls.clone(),
        ..ServerOptions::default()
    };
    let (server, mut events) = serve_on_own_thread(options.address, server_options)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", options.address))?;
    let scheme = if options.access.tls.is_some() { "wss" } else { "ws" };
    r2r::log_info!(
        &logger,
        "live view on {scheme}://{} (in Foxglove: Open connection, Foxglove WebSocket, this URL)",
        server.address()
    );
    r2r::log_info!(&logger, "{}", options.access.summary(server.address()));
    let generic = GenericNode::new("lockstep_view", "/")?;
    let parameters = Arc::new(Parameters::new(
        node.clone(),
        generic.graph_probe(),
        PARAMETER_TIMEOUT,
    ));
    let service_probe = generic.graph_probe();
    let mut services = Services::default();
    let prefix_path = std::env::var("AMENT_PREFIX_PATH").unwrap_or_default();
    let mut definitions = MessageDefinitions::from_prefix_path(&prefix_path);
    let clock_ns = Arc::new(AtomicU64::new(0));
    let mut clock = if options.sim_time {
        Some(lock(&node)?.subscribe::<Clock>("/clock", qos::sensor_data())?)
    } else {
        None
    };
    let mut topics: BTreeMap<String, Topic> = BTreeMap::new();
    let mut skipped: BTreeMap<String, String> = BTreeMap::new();
    let mut drops = DropWatch::default();
    let mut ticker = tokio::time::interval(options.period);
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                refresh(&node, &generic, &server, &options, &mut definitions, &mut topics, &mut skipped, &logger)?;
                if options.services {
                    match service_probe.services() {
                        Ok(graph) => services.refresh(&graph, &server, &mut definitions, &logger),
                        Err(e) => r2r::log_warn!(&logger, "cannot read the graph's services: {e}"),
                    }
                }
                for line in drops.news(&server.client_stats()) {
                    r2r::log_warn!(&logger, "{line}");
                }
            }
            Some(event) = events.recv() => match event {
                Event::GetParameters { .. } | Event::SetParameters { .. } => {
                    tokio::spawn(answer_parameters(event, parameters.clone(), server.clone()));
                }
                Event::ServiceCall { client, service, type_name, call } => {
                    let clients = services.clients();
                    let what = (service, type_name, call);
                    tokio::spawn(services::call(node.clone(), clients, server.clone(), client, what, SERVICE_TIMEOUT));
                }
                event => handle(event, &generic, &node, &server, &options, &clock_ns, &mut topics, &logger),
            },
            Some(msg) = async { match clock.as_mut() { Some(c) => c.next().await, None => std::future::pending().await } } => {
                let ns = time_ns(msg.clock.sec, msg.clock.nanosec);
                clock_ns.store(ns, Ordering::Relaxed);
                server.broadcast_time(ns);
            }
        }
    }
}

/// Starts the server on a thread and tokio runtime of its own, for the life of the process. The node's runtime
/// blocks in `spin_once` for up to a millisecond at a time; client writers there would wait for it, and every
/// relayed message would gain that much latency.
async fn serve_on_own_thread(
    address: SocketAddr,
    options: ServerOptions,
) -> std::io::Result<(Server, tokio::sync::mpsc::UnboundedReceiver<Event>)> {
    let (started, bound) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("view-server".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = started.send(Err(e));
                    return;
                }
            };
            runtime.block_on(async move {
                let _ = started.send(Server::bind(address, options).await);
                std::future::pending::<()>().await;
            });
        })?;
    bound
        .await
        .map_err(|_| std::io::Error::other("the server thread ended before it listened"))?
}

/// Advertises new topics and unadvertises vanished ones.
#[allow(clippy::too_many_arguments)]
fn refresh(
    node: &SharedNode,
    generic: &GenericNode,
    server: &Server,
    options: &ViewOptions,
    definitions: &mut MessageDefinitions,
    topics: &mut BTreeMap<String, Topic>,
    skipped: &mut BTreeMap<String, String>,
    logger: &str,
) -> anyhow::Result<()> {
    let graph: Vec<(String, Vec<String>)> = lock(node)?.get_topic_names_and_types()?.into_iter().collect();
    let now = first_types(&graph);
    let gone = vanished(topics.iter().map(|(name, t)| (name, t.type_name.as_str())), &now);
    for topic in gone {
        if let Some(t) = topics.remove(&topic) {
            if let Some(id) = t.subscription {
                generic.unsubscribe(id);
            }
            server.remove_channel(t.channel_id);
            r2r::log_info!(logger, "{topic} is gone: unadvertised");
        }
    }
    for (&topic, &type_name) in &now {
        if topics.contains_key(topic) || !options.selection.matches(topic) || !server.topic_allowed(topic) {
            continue;
        }
        let schema = match definitions.resolve(type_name) {
            Ok(d) => d.text,
            Err(e) => {
                if skipped.insert(topic.to_owned(), type_name.to_owned()).as_deref() != Some(type_name) {
                    r2r::log_warn!(logger, "not offering {topic} ({type_name}): {e}");
                }
                continue;
            }
        };
        let Some(channel_id) = server.add_channel(topic, type_name, &schema) else {
            continue;
        };
        topics.insert(
            topic.to_owned(),
            Topic {
                type_name: type_name.to_owned(),
                channel_id,
                subscription: None,
            },
        );
    }
    Ok(())
}

/// A channel got its first client (subscribe to the topic) or lost its last.
#[allow(clippy::too_many_arguments)]
fn handle(
    event: Event,
    generic: &GenericNode,
    node: &SharedNode,
    server: &Server,
    options: &ViewOptions,
    clock_ns: &Arc<AtomicU64>,
    topics: &mut BTreeMap<String, Topic>,
    logger: &str,
) {
    match event {
        Event::Subscribed { channel_id, topic } => {
            let Some(t) = topics.get_mut(&topic).filter(|t| t.channel_id == channel_id) else {
                return;
            };
            if t.subscription.is_some() {
                return;
            }
            let offered: Vec<lockstep_bag::QosProfile> = lock(node)
                .ok()
                .and_then(|n| n.get_publishers_info_by_topic(&topic, false).ok())
                .unwrap_or_default()
                .iter()
                .map(|p| qos::to_bag(&p.qos_profile))
                .collect();
            let wanted = adapt_qos(&offered);
            let mut profile = qos::reliable(1000);
            if !wanted.reliable {
                profile = profile.best_effort();
            }
            if wanted.transient_local {
                profile = profile.transient_local();
                // Clients that subscribe later get what this reader takes now (the publishers' history).
                let depth = offered.iter().map(|q| q.depth).max().unwrap_or(1).clamp(1, 100);
                server.set_latched(channel_id, usize::try_from(depth).unwrap_or(1));
            }
            let (relay, clock, sim_time) = (server.clone(), clock_ns.clone(), options.sim_time);
            let made = generic.subscribe_with(&topic, &t.type_name, profile, move |cdr| {
                let stamp = if sim_time {
                    clock.load(Ordering::Relaxed)
                } else {
                    wall_ns()
                };
                relay.publish(channel_id, stamp, &cdr);
            });
            match made {
                Ok(id) => {
                    t.subscription = Some(id);
                    r2r::log_info!(logger, "relaying {topic} ({})", t.type_name);
                }
                Err(e) => {
                    let text = format!("cannot subscribe to {topic}: {e}");
                    r2r::log_warn!(logger, "{text}");
                    server.broadcast_status(lockstep_view::Level::Error, &text);
                }
            }
        }
        Event::GetParameters { .. } | Event::SetParameters { .. } | Event::ServiceCall { .. } => {}
        Event::Unsubscribed { channel_id, topic } => {
            let Some(t) = topics.get_mut(&topic).filter(|t| t.channel_id == channel_id) else {
                return;
            };
            if let Some(id) = t.subscription.take() {
                generic.unsubscribe(id);
                // The next reader gets the publishers' history again.
                server.set_latched(channel_id, 0);
                r2r::log_info!(logger, "no client looks at {topic}: unsubscribed");
            }
        }
    }
}

/// Answers one parameter request: the values, and a warning status per problem.
async fn answer_parameters(event: Event, parameters: Arc<Parameters>, server: Server) {
    let (client, (values, problems), id) = match event {
        Event::GetParameters { client, names, id } => (client, parameters.get(&names).await, id),
        Event::SetParameters {
            client,
            parameters: wanted,
            id,
        } => (client, parameters.set(&wanted).await, id),
        _ => return,
    };
    for problem in &problems {
        server.send_status(client, lockstep_view::Level::Warning, problem);
    }
    server.send_parameters(client, &values, id.as_deref());
}
