//! The inference: from the calls a process makes into rcl, which node took, published, fired and served
//! what, and from which inputs each output was computed.
//!
//! The rule, per thread: the message a thread took last (since its last `rcl_wait`) is what the callback
//! running on it consumed, so an output published on that thread was computed from it, and from the latest
//! message of every other subscription of the node (its state). An output of a timer callback names the
//! latest message of every subscription. Timers belong to no node in rcl: a timer event goes to the node of
//! the first output its callback publishes, else to the process's first node.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use lockstep_trace::{duration_to_ns_u32, Component, TraceHeader};

use crate::events::{Event, EventKind, EventLog};
use crate::names::{is_infrastructure_service, is_infrastructure_topic};
use crate::output::{PendingInput, PendingOutput, Taken};

mod callbacks;
pub mod grants;

/// An rcl handle's address: what the interceptor keys nodes, publishers, subscriptions, services, clients
/// and timers by.
pub type Handle = usize;

/// The time of a call: wall clock (header stamps), the node's ROS time (the event log) and a monotonic
/// instant (processing times).
#[derive(Debug, Clone, Copy)]
pub struct Now {
    pub wall_ns: i64,
    pub ros_ns: i64,
    pub mono: Instant,
}

/// What a message taken carried, as rmw reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub digest: u64,
    pub publisher_gid: Vec<u8>,
    pub publication_sequence_number: i64,
    /// Whether the topic has a publisher of dependency headers (the upstream is traced): its header is
    /// waited for before the output naming it is published.
    pub traced_upstream: bool,
}

#[derive(Debug)]
struct Node {
    module: String,
    /// The node publishes its own headers (an instrumented module): no inferred headers or wiring.
    instrumented: bool,
    log: EventLog,
    callback_threads: BTreeSet<u32>,
    /// The wiring last announced, to announce it again only when it changed.
    announced: Option<Component>,
}

#[derive(Debug)]
struct Sub {
    node: Handle,
    topic: String,
    infrastructure: bool,
    arrivals: u32,
    latest: Option<Taken>,
}

#[derive(Debug)]
struct Pub {
    node: Handle,
    topic: String,
    infrastructure: bool,
    next_sequence: u32,
}

#[derive(Debug)]
struct Endpoint {
    node: Handle,
    name: String,
    infrastructure: bool,
}

/// What the callback running on a thread started from.
#[derive(Debug, Clone)]
enum Trigger {
    Take {
        sub: Handle,
        taken: Taken,
        mono: Instant,
    },
    Other {
        wall_ns: i64,
        mono: Instant,
    },
}

#[derive(Debug, Default)]
struct Thread {
    trigger: Option<Trigger>,
    /// A timer event not yet given to a node.
    pending_timer: Option<Event>,
    /// Clock reads of that timer's callback, given to the same node.
    pending_clock: Vec<Event>,
    /// The node whose callback runs on the thread, once known.
    callback_node: Option<Handle>,
}

/// Every node, endpoint and thread of one process, and what they did.
#[derive(Debug)]
pub struct Tracker {
    epoch: u64,
    nodes: BTreeMap<Handle, Node>,
    /// Nodes in creation order (the first is where unattributed timer events go).
    node_order: Vec<Handle>,
    subs: BTreeMap<Handle, Sub>,
    pubs: BTreeMap<Handle, Pub>,
    services: BTreeMap<Handle, Endpoint>,
    clients: BTreeMap<Handle, Endpoint>,
    timers: BTreeMap<Handle, i64>,
    next_timer: i64,
    threads: BTreeMap<u32, Thread>,
}

impl Tracker {
    /// A tracker whose headers carry `epoch` (the process's, see `DependencyHeader.epoch`).
    pub fn new(epoch: u64) -> Self {
        Self {
            epoch,
            nodes: BTreeMap::new(),
            node_order: Vec::new(),
            subs: BTreeMap::new(),
            pubs: BTreeMap::new(),
            services: BTreeMap::new(),
            clients: BTreeMap::new(),
            timers: BTreeMap::new(),
            next_timer: 0,
            threads: BTreeMap::new(),
        }
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A node was created; `module` is its fully qualified name without the leading slash.
    pub fn add_node(&mut self, node: Handle, module: &str) {
        self.nodes.insert(
            node,
            Node {
                module: module.to_owned(),
                instrumented: false,
                log: EventLog::default(),
                callback_threads: BTreeSet::new(),
                announced: None,
            },
        );
        self.node_order.retain(|&n| n != node);
        self.node_order.push(node);
    }

    /// A node is finalized: its endpoints and its log go with it (send its last batch before).
    pub fn remove_node(&mut self, node: Handle) {
        self.node_order.retain(|&n| n != node);
        self.subs.retain(|_, s| s.node != node);
        self.pubs.retain(|_, p| p.node != node);
        self.services.retain(|_, e| e.node != node);
        self.clients.retain(|_, e| e.node != node);
        self.nodes.remove(&node);
    }

    /// The module name of a node the tracker knows.
    pub fn module(&self, node: Handle) -> Option<&str> {
        self.nodes.get(&node).map(|n| n.module.as_str())
    }

    /// Whether the node publishes its own dependency headers.
    pub fn is_instrumented(&self, node: Handle) -> bool {
        self.nodes.get(&node).is_some_and(|n| n.instrumented)
    }

    /// A subscription was created. `intra_process`: its options ignore local publications (rclcpp's
    /// intra-process communication), so messages from this process reach it outside rcl.
    pub fn add_subscription(&mut self, sub: Handle, node: Handle, topic: &str, intra_process: bool) {
        let infrastructure = is_infrastructure_topic(topic);
        if intra_process && !infrastructure {
            self.warn(
                node,
                format!(
                    "the subscription to {topic} uses intra-process communication: messages published in \
                     this process reach it without rcl, so they are neither logged nor named as inputs"
                ),
            );
        }
        self.subs.insert(
            sub,
            Sub {
                node,
                topic: topic.to_owned(),
                infrastructure,
                arrivals: 0,
                latest: None,
            },
        );
    }

    /// A publisher was created. Returns true when this makes the node an instrumented module (it publishes
    /// dependency headers or its topology itself): the interceptor then leaves its headers to it.
    pub fn add_publisher(&mut self, publisher: Handle, node: Handle, topic: &str) -> bool {
        let declares = topic.ends_with(lockstep_trace::names::HEADER_TOPIC_SUFFIX)
            || topic.starts_with(lockstep_trace::names::TOPOLOGY_TOPIC_PREFIX);
        self.pubs.insert(
            publisher,
            Pub {
                node,
                topic: topic.to_owned(),
                infrastructure: is_infrastructure_topic(topic),
                next_sequence: 0,
            },
        );
        match self.nodes.get_mut(&node) {
            Some(n) if declares && !n.instrumented => {
                n.instrumented = true;
                true
            }
            _ => false,
        }
    }

    pub fn add_service(&mut self, service: Handle, node: Handle, name: &str) {
        let endpoint = Endpoint {
            node,
            name: name.to_owned(),
            infrastructure: is_infrastructure_service(name),
        };
        self.services.insert(service, endpoint);
    }

    pub fn add_client(&mut self, client: Handle, node: Handle, name: &str) {
        let endpoint = Endpoint {
            node,
            name: name.to_owned(),
            infrastructure: is_infrastructure_service(name),
        };
        self.clients.insert(client, endpoint);
    }

    /// A timer was created: it gets the next number of this process.
    pub fn add_timer(&mut self, timer: Handle) {
        self.timers.insert(timer, self.next_timer);
        self.next_timer += 1;
    }

    /// An endpoint or timer is finalized.
    pub fn remove(&mut self, handle: Handle) {
        self.subs.remove(&handle);
        self.pubs.remove(&handle);
        self.services.remove(&handle);
        self.clients.remove(&handle);
        self.timers.remove(&handle);
    }

    /// The subscription's node and topic.
    pub fn subscription(&self, sub: Handle) -> Option<(Handle, &str)> {
        self.subs.get(&sub).map(|s| (s.node, s.topic.as_str()))
    }

    /// The publisher's node and topic.
    pub fn publisher(&self, publisher: Handle) -> Option<(Handle, &str)> {
        self.pubs.get(&publisher).map(|p| (p.node, p.topic.as_str()))
    }

    /// Data topics a node reads, for header subscriptions.
    pub fn is_data_subscription(&self, sub: Handle) -> bool {
        self.subs.get(&sub).is_some_and(|s| !s.infrastructure)
    }

    fn warn(&mut self, node: Handle, warning: String) {
        if let Some(n) = self.nodes.get_mut(&node) {
            n.log.warn(warning);
        }
    }

    fn log(&mut self, node: Handle, event: Event) {
        if let Some(n) = self.nodes.get_mut(&node) {
            n.log.push(event);
        }
    }

    /// A message was taken from `sub` on `thread`.
    pub fn on_take(&mut self, sub: Handle, thread: u32, now: Now, received: Received) {
        self.settle_timer(thread, None);
        let Some(s) = self.subs.get_mut(&sub) else { return };
        let taken = Taken {
            channel: s.topic.clone(),
            digest: received.digest,
            arrival: s.arrivals,
            wall_ns: now.wall_ns,
            traced_upstream: received.traced_upstream,
        };
        s.arrivals = s.arrivals.wrapping_add(1);
        let (node, infrastructure) = (s.node, s.infrastructure);
        if !infrastructure {
            s.latest = Some(taken.clone());
        }
        let event = Event {
            kind: EventKind::Take,
            ros_time_ns: now.ros_ns,
            thread,
            name: s.topic.clone(),
            infrastructure,
            gid: received.publisher_gid,
            sequence_number: received.publication_sequence_number,
            payload_digest: received.digest,
        };
        self.log(node, event);
        if !infrastructure {
            self.callback_on(node, thread);
            let trigger = Trigger::Take {
                sub,
                taken,
                mono: now.mono,
            };
            let t = self.threads.entry(thread).or_default();
            t.trigger = Some(trigger);
            t.callback_node = Some(node);
        }
    }

    /// A service or client event on `thread` (`endpoint` is a service for requests taken and responses
    /// sent, a client for requests sent and responses taken).
    pub fn on_service_event(
        &mut self,
        kind: EventKind,
        endpoint: Handle,
        thread: u32,
        now: Now,
        call: ServiceCall,
    ) {
        self.settle_timer(thread, None);
        let table = match kind {
            EventKind::RequestTaken | EventKind::ResponseSent => &self.services,
            _ => &self.clients,
        };
        let Some(e) = table.get(&endpoint) else { return };
        let (node, name, infrastructure) = (e.node, e.name.clone(), e.infrastructure);
        let event = Event {
            kind,
            ros_time_ns: now.ros_ns,
            thread,
            name,
            infrastructure,
            gid: call.gid,
            sequence_number: call.sequence_number,
            payload_digest: call.digest,
        };
        self.log(node, event);
        if !infrastructure && matches!(kind, EventKind::RequestTaken | EventKind::ResponseTaken) {
            self.callback_on(node, thread);
            let trigger = Trigger::Other {
                wall_ns: now.wall_ns,
                mono: now.mono,
            };
            let t = self.threads.entry(thread).or_default();
            t.trigger = Some(trigger);
            t.callback_node = Some(node);
        }
    }

    /// A message was published on `publisher` from `thread`: logged, and for a data topic of a node that
    /// does not trace itself, the output whose header the interceptor publishes once its inputs' headers
    /// are known.
    pub fn on_publish(
        &mut self,
        publisher: Handle,
        thread: u32,
        now: Now,
        digest: u64,
    ) -> Option<PendingOutput> {
        let (node, topic, infrastructure, sequence) = {
            let p = self.pubs.get_mut(&publisher)?;
            let sequence = p.next_sequence;
            p.next_sequence = p.next_sequence.wrapping_add(1);
            (p.node, p.topic.clone(), p.infrastructure, sequence)
        };
        if !infrastructure {
            self.settle_timer(thread, Some(node));
        }
        let event = Event {
            kind: EventKind::Publish,
            ros_time_ns: now.ros_ns,
            thread,
            name: topic.clone(),
            infrastructure,
            gid: Vec::new(),
            sequence_number: i64::from(sequence),
            payload_digest: digest,
        };
        self.log(node, event);
        if infrastructure || self.is_instrumented(node) {
            return None;
        }
        let trigger = self.threads.get(&thread).and_then(|t| t.trigger.clone());
        let header = self.output_header(node, &topic, sequence, digest, trigger.as_ref(), now)?;
        let inputs = self.inputs_of(node, trigger.as_ref());
        if trigger.is_none() {
            self.check_foreign_thread(node, thread, &topic);
        }
        Some(PendingOutput { header, inputs })
    }

    fn output_header(
        &self,
        node: Handle,
        topic: &str,
        sequence: u32,
        digest: u64,
        trigger: Option<&Trigger>,
        now: Now,
    ) -> Option<TraceHeader> {
        let (start_ns, started) = match trigger {
            Some(Trigger::Take { taken, mono, .. }) => (taken.wall_ns, *mono),
            Some(Trigger::Other { wall_ns, mono }) => (*wall_ns, *mono),
            None => (now.wall_ns, now.mono),
        };
        let process_time = now.mono.checked_duration_since(started).unwrap_or(Duration::ZERO);
        Some(TraceHeader {
            module_name: self.nodes.get(&node)?.module.clone(),
            channel_name: topic.to_owned(),
            sequence_num: sequence,
            epoch: self.epoch,
            start_time_ns: start_ns,
            process_time_ns: duration_to_ns_u32(process_time),
            payload_digest: digest,
            inputs: Vec::new(),
        })
    }

    /// The message the callback took (if it belongs to `node`), then the latest of every other data
    /// subscription of the node, by topic.
    fn inputs_of(&self, node: Handle, trigger: Option<&Trigger>) -> Vec<PendingInput> {
        let mut inputs = Vec::new();
        let mut first = None;
        if let Some(Trigger::Take { sub, taken, .. }) = trigger {
            if self.subs.get(sub).is_some_and(|s| s.node == node) {
                inputs.push(PendingInput::from(taken.clone()));
                first = Some(*sub);
            }
        }
        let mut state: Vec<(&str, Handle, &Taken)> = self
            .subs
            .iter()
            .filter(|(h, s)| s.node == node && Some(**h) != first && !s.infrastructure)
            .filter_map(|(h, s)| s.latest.as_ref().map(|t| (s.topic.as_str(), *h, t)))
            .collect();
        state.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        inputs.extend(state.into_iter().map(|(_, _, t)| PendingInput::from(t.clone())));
        inputs
    }

    /// An output published where no callback of its node was seen running, on a thread other than the
    /// node's callback threads: a thread of the node's own, or a callback rcl never saw (intra-process).
    fn check_foreign_thread(&mut self, node: Handle, thread: u32, topic: &str) {
        let Some(n) = self.nodes.get(&node) else { return };
        if n.callback_threads.is_empty() || n.callback_threads.contains(&thread) {
            return;
        }
        self.warn(
            node,
            format!(
                "outputs on {topic} were published on a thread where no callback of this node was seen (a \
                 thread of the node's own, or a callback fed outside rcl): their inputs are the latest \
                 message of every subscription"
            ),
        );
    }

    /// The node's wiring when it changed since the last call (nothing for an instrumented module).
    pub fn take_wiring_change(&mut self, node: Handle) -> Option<Component> {
        let readers: Vec<&str> = self
            .subs
            .values()
            .filter(|s| s.node == node && !s.infrastructure)
            .map(|s| s.topic.as_str())
            .collect();
        let writers: Vec<&str> = self
            .pubs
            .values()
            .filter(|p| p.node == node && !p.infrastructure)
            .map(|p| p.topic.as_str())
            .collect();
        let n = self.nodes.get_mut(&node)?;
        if n.instrumented {
            return None;
        }
        let component = Component::new(&n.module, readers, writers);
        if n.announced.as_ref() == Some(&component) {
            return None;
        }
        n.announced = Some(component.clone());
        Some(component)
    }

    /// Mutable access to a node's log (batches, warnings).
    pub fn log_of(&mut self, node: Handle) -> Option<(&str, &mut EventLog)> {
        self.nodes.get_mut(&node).map(|n| (n.module.as_str(), &mut n.log))
    }

    /// Every node, in creation order.
    pub fn node_handles(&self) -> Vec<Handle> {
        self.node_order.clone()
    }
}

/// What a service event carried.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceCall {
    pub gid: Vec<u8>,
    pub sequence_number: i64,
    pub digest: u64,
}
