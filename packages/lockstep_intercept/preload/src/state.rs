//! The interceptor's state for the whole process, behind one lock: the tracker, the type supports of every
//! endpoint (to digest their messages), the interceptor's own publishers and subscriptions per node, the
//! outputs waiting for their inputs' headers, and the ROS clocks.

use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use lockstep_intercept::cdr;
use lockstep_intercept::events::MAX_BATCH_EVENTS;
use lockstep_intercept::names::{events_topic, grant_topics};
use lockstep_intercept::output::{HeaderStore, Waiting};
use lockstep_intercept::pacer::Pacer;
use lockstep_intercept::timers::TimerClocks;
use lockstep_intercept::tracker::{Handle, Now, Tracker};
use lockstep_trace::names::{header_topic, topology_topic};
use r2r_rcl::*;

use crate::key::key;
use crate::own::{Kind, OwnPublisher, OwnSubscription};

/// How often waiting work goes out at the latest while the node keeps calling rcl (events, late headers).
pub const SERVICE_PERIOD: std::time::Duration = std::time::Duration::from_millis(50);

/// What the interceptor made on one traced node, with a copy of the node's handle (the caller's may move).
pub struct NodeOwn {
    node: rcl_node_t,
    events: Option<OwnPublisher>,
    topology: Option<OwnPublisher>,
    headers: BTreeMap<String, OwnPublisher>,
    header_subs: BTreeMap<String, OwnSubscription>,
    /// The requests and responses of the node's services and clients, on `<service>/lockstep_request` and
    /// `<service>/lockstep_response` (what a replay delivers to it again).
    calls: BTreeMap<String, OwnPublisher>,
    /// Replay mode: the replay's grants to the node, and the answers.
    pub grants: Option<OwnSubscription>,
    pub done: Option<OwnPublisher>,
}

// SAFETY: rcl entities may be used from any thread; the state's lock serialises their use.
unsafe impl Send for NodeOwn {}

/// A copy of a ROS clock's handle (the caller's may move; its `data` stays until `rcl_clock_fini`).
#[derive(Clone, Copy)]
pub struct RosClock(pub rcl_clock_t);

// SAFETY: rcl_clock_get_now reads the clock's state atomically; the copy is used under the state's lock.
unsafe impl Send for RosClock {}

pub struct State {
    pub tracker: Tracker,
    /// Type support per publisher and subscription (message), request/response per service and client.
    pub type_supports: BTreeMap<Handle, usize>,
    pub service_types: BTreeMap<Handle, (usize, usize)>,
    pub own: BTreeMap<Handle, NodeOwn>,
    waiting: Waiting,
    store: HeaderStore,
    /// ROS clocks created in the process (rcl_clock_t addresses), oldest first.
    pub ros_clocks: Vec<RosClock>,
    /// Which timers are the nodes' and which an executor's time-outs.
    pub timer_clocks: TimerClocks,
    last_service: Instant,
    /// Replay mode: the event granted now.
    pub pacer: Pacer,
    /// Replay mode: per client, the sequence numbers of the requests it sent that wait for a response.
    pub requests: BTreeMap<Handle, std::collections::VecDeque<i64>>,
}

/// The process's state, created on first use.
pub fn lock() -> MutexGuard<'static, State> {
    static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| Mutex::new(State::new()));
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

fn wall_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl State {
    fn new() -> Self {
        Self {
            tracker: Tracker::new(u64::try_from(wall_ns()).unwrap_or(1).max(1)),
            type_supports: BTreeMap::new(),
            service_types: BTreeMap::new(),
            own: BTreeMap::new(),
            waiting: Waiting::with_wait(lockstep_intercept::output::header_wait(
                std::env::var("LOCKSTEP_INTERCEPT_HEADER_WAIT_MS").ok().as_deref(),
            )),
            store: HeaderStore::default(),
            ros_clocks: Vec::new(),
            timer_clocks: TimerClocks::default(),
            last_service: Instant::now(),
            pacer: Pacer::default(),
            requests: BTreeMap::new(),
        }
    }

    /// Now, with the ROS time of the process's first ROS clock (the simulated time under use_sim_time).
    pub fn now(&self) -> Now {
        let wall = wall_ns();
        let mut ros = wall;
        if let Some(&RosClock(mut clock)) = self.ros_clocks.first() {
            let mut value: rcl_time_point_value_t = 0;
            // SAFETY: the clock's data is alive (removed from the list by the rcl_clock_fini hook before it
            // goes); a copy of the handle reads the same data.
            if unsafe { rcl_clock_get_now(&mut clock, &mut value) } == RCL_RET_OK as rcl_ret_t {
                ros = value;
            }
        }
        Now {
            wall_ns: wall,
            ros_ns: ros,
            mono: Instant::now(),
        }
    }

    /// A traced node: its event log and wiring publishers (recording), or its wiring and the replay's grants
    /// (replaying).
    pub fn add_node(&mut self, node: *const rcl_node_t, module: &str) {
        let Some(&copy) = (unsafe { node.as_ref() }) else {
            return;
        };
        let handle = key(node);
        self.tracker.add_node(handle, module);
        let replaying = crate::replaying();
        let own = NodeOwn {
            node: copy,
            events: (!replaying)
                .then(|| OwnPublisher::new(node, Kind::Events, &events_topic(module), 100, false))
                .flatten(),
            topology: OwnPublisher::new(node, Kind::Topology, &topology_topic(module), 1, true),
            headers: BTreeMap::new(),
            header_subs: BTreeMap::new(),
            calls: BTreeMap::new(),
            grants: None,
            done: None,
        };
        self.own.insert(handle, own);
    }

    /// Publish a request (`request`) or response of data service or client `endpoint`, serialized, on
    /// `<service>/lockstep_request` or `<service>/lockstep_response` (type `ts`): the recording keeps them, and
    /// a replay delivers them to the node again.
    pub fn publish_call(
        &mut self,
        endpoint: Handle,
        request: bool,
        ts: *const rosidl_message_type_support_t,
        bytes: &[u8],
    ) {
        let Some((node, name, infrastructure)) = self.tracker.endpoint(endpoint) else {
            return;
        };
        if infrastructure || ts.is_null() {
            return;
        }
        let topic = lockstep_intercept::names::call_topic(name, request);
        let Some(own) = self.own.get_mut(&node) else {
            return;
        };
        if !own.calls.contains_key(&topic) {
            let node_ptr = &own.node as *const rcl_node_t;
            match OwnPublisher::of_type(node_ptr, ts, &topic, 1000, false) {
                Some(p) => {
                    own.calls.insert(topic.clone(), p);
                }
                None => return,
            }
        }
        if let Some(publisher) = own.calls.get(&topic) {
            publisher.publish(bytes);
        }
    }

    /// Send the answer to a replay's grant on its node's done topic.
    pub fn send_done(&self, done: &lockstep_intercept::pacer::Done) {
        if let Some(publisher) = self.own.get(&done.node).and_then(|o| o.done.as_ref()) {
            publisher.publish(&cdr::encode_done(done));
        }
    }

    /// Replay mode: the grant subscription and answer publisher of every node that has none yet. Made when
    /// the node first waits (its executor spins: the node has made its subscriptions, publishers and timers),
    /// so that the replay, which finds the node by its grant subscription, reads its whole wiring.
    pub fn open_grants(&mut self) {
        let modules: Vec<(Handle, String)> = (self.own.iter())
            .filter(|(_, o)| o.grants.is_none())
            .filter_map(|(&h, _)| Some((h, self.tracker.module(h)?.to_owned())))
            .collect();
        for (handle, module) in modules {
            let (grant_topic, done_topic) = grant_topics(&module);
            let Some(own) = self.own.get_mut(&handle) else {
                continue;
            };
            let node = &own.node as *const rcl_node_t;
            own.done = OwnPublisher::new(node, Kind::Done, &done_topic, 100, true);
            own.grants = OwnSubscription::new(node, Kind::Grant, &grant_topic);
        }
    }

    /// Subscribe to the headers of `topic` for `node` (once per topic).
    pub fn follow_headers(&mut self, node: Handle, topic: &str) {
        if crate::replaying() {
            return;
        }
        let Some(own) = self.own.get_mut(&node) else {
            return;
        };
        if !own.header_subs.contains_key(topic) {
            if let Some(sub) =
                OwnSubscription::new(&own.node as *const rcl_node_t, Kind::Header, &header_topic(topic))
            {
                own.header_subs.insert(topic.to_owned(), sub);
            }
        }
    }

    /// Whether `node`'s input `topic` has a traced publisher.
    pub fn traced_upstream(&self, node: Handle, topic: &str) -> bool {
        self.own
            .get(&node)
            .and_then(|o| o.header_subs.get(topic))
            .is_some_and(OwnSubscription::has_publishers)
    }

    /// Announce the node's wiring if it changed.
    pub fn announce_wiring(&mut self, node: Handle) {
        if let Some(component) = self.tracker.take_wiring_change(node) {
            if let Some(publisher) = self.own.get(&node).and_then(|o| o.topology.as_ref()) {
                publisher.publish(&cdr::encode_topology(&component));
            }
        }
    }

    /// Queue an output whose header waits for its inputs' headers.
    /// An output: its header goes out now when every input can be named, else it waits for their headers.
    pub fn push_output(&mut self, output: lockstep_intercept::output::PendingOutput, now: Instant) {
        if let Some(header) = self.waiting.push(&self.store, now, output) {
            if !crate::skip().headers {
                self.publish_header(&header);
            }
        }
    }

    /// Send what waits: headers that arrived, output headers now complete, events. Everything with `flush`;
    /// otherwise events only once a batch is full or [`SERVICE_PERIOD`] passed.
    pub fn service(&mut self, flush: bool) {
        let now = Instant::now();
        let periodic = flush || now.duration_since(self.last_service) >= SERVICE_PERIOD;
        // Headers of inputs are taken when an output waits for one, and periodically so none pile up.
        if periodic || !self.waiting.is_empty() {
            self.take_headers();
        }
        if self.waiting.is_empty() && !periodic {
            return;
        }
        for header in self.waiting.ready(&self.store, now, flush) {
            if !crate::skip().headers {
                self.publish_header(&header);
            }
        }
        for node in self.tracker.node_handles() {
            self.send_events(node, periodic);
        }
        if periodic {
            self.last_service = now;
        }
    }

    /// Whether something waits to be sent (outputs' headers, events).
    pub fn has_work(&mut self) -> bool {
        if !self.waiting.is_empty() {
            return true;
        }
        self.tracker
            .node_handles()
            .into_iter()
            .any(|n| self.tracker.log_of(n).is_some_and(|(_, log)| log.queued() > 0))
    }

    fn take_headers(&mut self) {
        for own in self.own.values_mut() {
            for (topic, sub) in own.header_subs.iter_mut() {
                while let Some(bytes) = sub.take() {
                    match cdr::decode_header(&bytes) {
                        Ok(header) => self.store.push(topic, header),
                        Err(e) => {
                            crate::say_once(topic, &format!("a header on {topic}/lockstep_header: {e}"))
                        }
                    }
                }
            }
        }
    }

    /// Create the header publisher of `node`'s output `topic` now, so a recorder discovers it before the
    /// first output.
    pub fn ensure_header_publisher(&mut self, node: Handle, topic: &str) {
        if crate::replaying() {
            return;
        }
        let Some(own) = self.own.get_mut(&node) else {
            return;
        };
        if !own.headers.contains_key(topic) {
            let sidecar = header_topic(topic);
            if let Some(publisher) = OwnPublisher::new(
                &own.node as *const rcl_node_t,
                Kind::Header,
                &sidecar,
                1000,
                false,
            ) {
                own.headers.insert(topic.to_owned(), publisher);
            }
        }
    }

    /// The node turned out to publish its own headers and topology (an instrumented module): the
    /// interceptor's header and wiring publishers go (with the wiring it may have latched already).
    pub fn leave_to_module(&mut self, node: Handle) {
        if let Some(own) = self.own.get_mut(&node) {
            let node_ptr = &mut own.node as *mut rcl_node_t;
            let headers = std::mem::take(&mut own.headers).into_values();
            for publisher in headers.chain(own.topology.take()) {
                publisher.fini(node_ptr);
            }
        }
    }

    fn publish_header(&mut self, header: &lockstep_trace::TraceHeader) {
        let Some(node) = self.node_of_module(&header.module_name) else {
            return;
        };
        self.ensure_header_publisher(node, &header.channel_name);
        let Some(own) = self.own.get(&node) else { return };
        if let Some(publisher) = own.headers.get(&header.channel_name) {
            publisher.publish(&cdr::encode_header(header));
        }
    }

    fn node_of_module(&self, module: &str) -> Option<Handle> {
        self.tracker
            .node_handles()
            .into_iter()
            .find(|&n| self.tracker.module(n) == Some(module))
    }

    /// Send the node's events: all of them when `all`, else only full batches. Warnings are said on stderr.
    fn send_events(&mut self, node: Handle, all: bool) {
        let epoch = self.tracker.epoch();
        let Some(own) = self.own.get(&node) else { return };
        let Some((module, log)) = self.tracker.log_of(node) else {
            return;
        };
        for warning in log.take_unsaid() {
            crate::say(&format!("{module}: {warning}"));
        }
        let module = module.to_owned();
        while all || log.queued() >= MAX_BATCH_EVENTS {
            let Some(batch) = log.next_batch(&module, epoch) else {
                break;
            };
            match &own.events {
                Some(publisher) if !crate::skip().events => publisher.publish(&cdr::encode_events(&batch)),
                _ => {}
            }
        }
    }

    /// A node goes: send what it has, finalize what the interceptor made on it.
    pub fn remove_node(&mut self, node: *mut rcl_node_t) {
        let handle = key(node);
        self.service(true);
        if let Some(done) = self.pacer.node_gone(handle) {
            self.send_done(&done);
        }
        self.tracker.remove_node(handle);
        if let Some(own) = self.own.remove(&handle) {
            for publisher in (own.events.into_iter())
                .chain(own.topology)
                .chain(own.done)
                .chain(own.headers.into_values())
                .chain(own.calls.into_values())
            {
                publisher.fini(node);
            }
            for sub in own.header_subs.into_values().chain(own.grants) {
                sub.fini(node);
            }
        }
    }
}
