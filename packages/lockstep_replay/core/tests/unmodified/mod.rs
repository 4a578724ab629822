//! Recordings of an unmodified node as the rcl interceptor records it, and an in-process stand-in for the node
//! replayed through the interceptor.
//!
//! The node `filter` subscribes to /raw and publishes /filtered: every message it takes goes into its state
//! (`state = 3 * state + gain * value`, modulo a prime: the order of the takes matters), every second take
//! publishes the state, a take of 100 or more publishes twice, every second firing of its timer publishes,
//! and a service request publishes once. /raw is external, or the output of the ordinary module `scale`
//! (/in -> /raw, the value times a factor). The bag holds what the recorder stores: the data, the inferred
//! dependency headers, the topology and the node's event log (batches encoded by the interceptor's encoder,
//! one sent twice), with infrastructure events in between.
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

use lockstep_bag::cdr::Schema;
use lockstep_bag::{BagWriter, MessageDefinition, TopicSpec, WriterOptions};
use lockstep_intercept::cdr::encode_events;
use lockstep_intercept::events::{Batch, Event, EventKind};
use lockstep_replay::lockstep::{event_kind, header_to_value, EventOutput, GrantEvent, Module, StepInput};
use lockstep_trace::{digest, InputRecord, TraceHeader};

use super::common::{cdr_string, header_definition, text_of};

const STRING: &str = "std_msgs/msg/String";
const HEADER: &str = "lockstep_interfaces/msg/DependencyHeader";
const NODE_EVENTS: &str = "lockstep_interfaces/msg/NodeEvents";
pub const EVENTS_TOPIC: &str = "/lockstep/events/filter";
/// The interceptor's epoch in the node's process (its headers' epoch).
pub const EPOCH: u64 = 777;
const SCALE_EPOCH: u64 = 300;
/// The node's executor thread, a thread of its own, and the thread of its parameter services.
const EXECUTOR: u32 = 7;
const OWN_THREAD: u32 = 9;
const PARAMETERS: u32 = 8;
/// The recorded factor of `scale`.
pub const FACTOR: u64 = 2;
const PRIME: u64 = 1_000_003;

/// One thing that happens to the node while recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stimulus {
    /// A /raw message it takes (the value, before `scale` when /raw is its output).
    Take(u64),
    /// A /raw message it takes that the recorder missed (external /raw only).
    Unrecorded(u64),
    /// Its timer fires.
    Timer,
    /// It publishes from a thread of its own, outside any callback.
    Outside,
    /// A request to its service `/filter/reset` (not recorded: the bag holds no requests).
    Request,
}

/// What the node computes: its state and what each callback publishes.
#[derive(Debug, Clone)]
pub struct FilterLogic {
    pub gain: u64,
    state: u64,
    takes: u64,
    timers: u64,
}

impl FilterLogic {
    pub fn new(gain: u64) -> Self {
        FilterLogic {
            gain,
            state: 0,
            takes: 0,
            timers: 0,
        }
    }

    pub fn take(&mut self, value: u64) -> Vec<String> {
        self.state = (3 * self.state + self.gain * value) % PRIME;
        self.takes += 1;
        if value >= 100 {
            vec![self.state.to_string(), format!("{}+", self.state)]
        } else if self.takes % 2 == 0 {
            vec![self.state.to_string()]
        } else {
            Vec::new()
        }
    }

    pub fn timer(&mut self) -> Vec<String> {
        self.timers += 1;
        if self.timers % 2 == 0 {
            vec![format!("t{}", self.state)]
        } else {
            Vec::new()
        }
    }

    pub fn request(&mut self) -> Vec<String> {
        vec![format!("r{}", self.state)]
    }
}

/// The ROS time (and log time) of stimulus `i`: 1 s + i * 10 ms.
pub fn time_of(i: usize) -> i64 {
    1_000_000_000 + i as i64 * 10_000_000
}

/// A recorded callback of the node: (kind, name, ROS time, text of what it took).
pub type Callback = (u8, String, i64, String);

/// What was recorded, for the tests to compare with.
#[derive(Debug, Default)]
pub struct Recorded {
    /// Every callback of the node, in log order.
    pub callbacks: Vec<Callback>,
    /// Every /filtered output: (sequence number, text).
    pub outputs: Vec<(u32, String)>,
}

fn string_definition() -> MessageDefinition {
    MessageDefinition {
        encoding: "ros2msg".into(),
        text: "string data\n".into(),
    }
}

fn node_events_definition() -> String {
    let msg = |name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../../msg/msg/{name}.msg")),
        )
        .unwrap()
    };
    let sep = "=".repeat(80);
    format!(
        "{}\n{sep}\nMSG: lockstep_interfaces/NodeEvent\n{}\n{sep}\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n",
        msg("NodeEvents"),
        msg("NodeEvent")
    )
}

/// The digest a header names for a std_msgs/String (of its canonical CDR).
fn string_digest(data: &[u8]) -> u64 {
    digest(
        &Schema::parse(STRING, "string data\n")
            .unwrap()
            .canonical(data)
            .unwrap(),
    )
}

fn event(
    kind: EventKind,
    ros_time_ns: i64,
    thread: u32,
    name: &str,
    sequence_number: i64,
    digest: u64,
) -> Event {
    Event {
        kind,
        ros_time_ns,
        thread,
        name: name.into(),
        infrastructure: name.starts_with("/parameter_events") || name == "/rosout",
        gid: vec![1; 16],
        sequence_number,
        payload_digest: digest,
    }
}

/// The bag being written: messages kept until the end, then written in log-time order.
struct Bag {
    messages: Vec<(u64, String, Vec<u8>)>,
    header_schema: Schema,
}

impl Bag {
    fn put(&mut self, topic: &str, t: i64, data: Vec<u8>) {
        self.messages.push((t as u64, topic.to_owned(), data));
    }

    fn header(&mut self, t: i64, h: &TraceHeader) {
        let bytes = self
            .header_schema
            .encode(&header_to_value(h, &self.header_schema))
            .unwrap();
        self.put(&format!("{}/lockstep_header", h.channel_name), t, bytes);
    }
}

/// Writes the recording of `stimuli` into `dir`; with `upstream`, /raw is the output of `scale` (/in times
/// [`FACTOR`]), else external.
pub fn record(dir: &Path, stimuli: &[Stimulus], upstream: bool) -> Recorded {
    record_with(dir, stimuli, upstream, true)
}

/// [`record`], with or without the definition of the events topic in the bag (without, its batches cannot
/// be decoded).
pub fn record_with(dir: &Path, stimuli: &[Stimulus], upstream: bool, events_definition: bool) -> Recorded {
    let header_def = MessageDefinition {
        encoding: "ros2msg".into(),
        text: header_definition(),
    };
    let events_def = MessageDefinition {
        encoding: "ros2msg".into(),
        text: node_events_definition(),
    };
    let mut bag = Bag {
        messages: Vec::new(),
        header_schema: Schema::parse(HEADER, &header_def.text).unwrap(),
    };
    let mut logic = FilterLogic::new(1);
    let mut recorded = Recorded::default();
    let mut events: Vec<Event> = Vec::new();
    let mut raw_seq = 0u32;
    let mut out_seq = 0u32;
    let mut latest_raw: Option<InputRecord> = None;
    for (i, s) in stimuli.iter().enumerate() {
        let t = time_of(i);
        let at = t + 2; // when the node's callback runs
        let (trigger, published, thread) = match *s {
            Stimulus::Take(v) | Stimulus::Unrecorded(v) => {
                let value = if upstream { v * FACTOR } else { v };
                let raw = cdr_string(&value.to_string());
                let d = string_digest(&raw);
                let input = if upstream {
                    bag.put("/in", t, cdr_string(&v.to_string()));
                    let ext =
                        TraceHeader::external("/in", raw_seq, t, string_digest(&cdr_string(&v.to_string())));
                    let h = TraceHeader {
                        module_name: "scale".into(),
                        channel_name: "/raw".into(),
                        sequence_num: raw_seq,
                        epoch: SCALE_EPOCH,
                        start_time_ns: t + 1,
                        process_time_ns: 40,
                        payload_digest: d,
                        inputs: vec![ext.as_input()],
                    };
                    bag.put("/raw", t + 1, raw);
                    bag.header(t + 1, &h);
                    h.as_input()
                } else {
                    if matches!(s, Stimulus::Take(_)) {
                        bag.put("/raw", t, raw);
                    }
                    TraceHeader::external("/raw", raw_seq, t, d).as_input()
                };
                events.push(event(
                    EventKind::Take,
                    at,
                    EXECUTOR,
                    "/raw",
                    i64::from(raw_seq) + 1,
                    d,
                ));
                recorded
                    .callbacks
                    .push((event_kind::TAKE, "/raw".into(), at, value.to_string()));
                raw_seq += 1;
                latest_raw = Some(input.clone());
                (vec![input], logic.take(value), EXECUTOR)
            }
            Stimulus::Timer => {
                events.push(event(EventKind::Timer, at, EXECUTOR, "", 0, 0));
                recorded
                    .callbacks
                    .push((event_kind::TIMER, String::new(), at, String::new()));
                (latest_raw.iter().cloned().collect(), logic.timer(), EXECUTOR)
            }
            Stimulus::Request => {
                events.push(event(
                    EventKind::RequestTaken,
                    at,
                    EXECUTOR,
                    "/filter/reset",
                    1,
                    77,
                ));
                recorded.callbacks.push((
                    event_kind::REQUEST_TAKEN,
                    "/filter/reset".into(),
                    at,
                    String::new(),
                ));
                (latest_raw.iter().cloned().collect(), logic.request(), EXECUTOR)
            }
            Stimulus::Outside => (Vec::new(), vec!["outside".to_owned()], OWN_THREAD),
        };
        // A log line inside the callback, and a parameter update on another thread: infrastructure.
        events.push(event(EventKind::Publish, at, thread, "/rosout", 0, 5));
        events.push(event(EventKind::Take, at, PARAMETERS, "/parameter_events", 3, 6));
        for text in published {
            let data = cdr_string(&text);
            let h = TraceHeader {
                module_name: "filter".into(),
                channel_name: "/filtered".into(),
                sequence_num: out_seq,
                epoch: EPOCH,
                start_time_ns: at,
                process_time_ns: 100,
                payload_digest: string_digest(&data),
                inputs: trigger.clone(),
            };
            events.push(event(
                EventKind::Publish,
                at + 1,
                thread,
                "/filtered",
                i64::from(out_seq),
                h.payload_digest,
            ));
            bag.put("/filtered", at + 1, data);
            bag.header(at + 1, &h);
            recorded.outputs.push((out_seq, text));
            out_seq += 1;
        }
    }
    // The log in batches of 3 events, each sent after its events; the first sent again at the end.
    let mut batches = Vec::new();
    for (k, chunk) in events.chunks(3).enumerate() {
        let batch = Batch {
            node_name: "/filter".into(),
            epoch: EPOCH,
            first_index: 3 * k as u64,
            events: chunk.to_vec(),
            warnings: Vec::new(),
        };
        let sent = chunk.iter().map(|e| e.ros_time_ns).max().unwrap() + 5;
        batches.push((sent, encode_events(&batch)));
    }
    let last = batches.last().unwrap().0;
    let again = batches[0].1.clone();
    batches.push((last + 1, again));
    for (t, data) in batches {
        bag.put(EVENTS_TOPIC, t, data);
    }

    let mut w = BagWriter::create(dir, WriterOptions::default()).unwrap();
    let mut topics = vec!["/raw", "/filtered"];
    if upstream {
        topics.push("/in");
    }
    for t in topics {
        w.add_topic(TopicSpec::new(t, STRING).with_definition(string_definition()))
            .unwrap();
    }
    let mut header_topics = vec!["/filtered"];
    if upstream {
        header_topics.push("/raw");
    }
    for t in header_topics {
        w.add_topic(
            TopicSpec::new(format!("{t}/lockstep_header"), HEADER).with_definition(header_def.clone()),
        )
        .unwrap();
    }
    let events_topic = TopicSpec::new(EVENTS_TOPIC, NODE_EVENTS);
    let events_topic = if events_definition {
        events_topic.with_definition(events_def)
    } else {
        events_topic
    };
    w.add_topic(events_topic).unwrap();
    bag.messages.sort_by_key(|(t, ..)| *t);
    for (t, topic, data) in &bag.messages {
        w.write(topic, *t, data).unwrap();
    }
    let mut topology: BTreeMap<String, String> =
        [("filter".to_owned(), "reads=/raw;writes=/filtered".to_owned())].into();
    if upstream {
        topology.insert("scale".into(), "reads=/in;writes=/raw".into());
    }
    w.write_metadata_record("lockstep_topology", &topology).unwrap();
    w.finish().unwrap();
    recorded
}

/// The node replayed through the interceptor, in-process: it runs each granted event's callback on its
/// [`FilterLogic`] and answers what the callback published. It can misbehave on purpose.
pub struct FilterNode {
    pub logic: FilterLogic,
    /// Every publishing callback publishes one output more.
    pub extra: bool,
    /// A callback publishes at most this many outputs.
    pub limit: Option<usize>,
    /// The publishing callbacks (counted from 1) that publish nothing.
    pub mute: Vec<usize>,
    /// Callbacks that published nothing when recorded publish now.
    pub chatty: bool,
    /// Every event granted: (kind, name, ROS time, text of what it delivered).
    pub seen: Rc<RefCell<Vec<Callback>>>,
    publishing: usize,
}

impl FilterNode {
    pub fn new(gain: u64) -> Self {
        FilterNode {
            logic: FilterLogic::new(gain),
            extra: false,
            limit: None,
            mute: Vec::new(),
            chatty: false,
            seen: Rc::default(),
            publishing: 0,
        }
    }

    fn callback(&mut self, e: &GrantEvent<'_>) -> Result<Vec<EventOutput>, String> {
        let text = if e.data.is_empty() {
            String::new()
        } else {
            text_of(e.data)
        };
        (self.seen.borrow_mut()).push((e.kind, e.name.to_owned(), e.ros_time_ns, text.clone()));
        let mut out = match e.kind {
            event_kind::TAKE => self
                .logic
                .take(text.parse().map_err(|_| format!("took {text:?}"))?),
            event_kind::TIMER => self.logic.timer(),
            event_kind::REQUEST_TAKEN => self.logic.request(),
            k => return Err(format!("granted an event of kind {k}")),
        };
        if out.is_empty() {
            if self.chatty {
                out.push("chatter".into());
            }
        } else {
            self.publishing += 1;
            if self.mute.contains(&self.publishing) {
                out.clear();
            } else if self.extra {
                out.push("extra".into());
            }
        }
        out.truncate(self.limit.unwrap_or(usize::MAX));
        Ok(out
            .into_iter()
            .map(|text| EventOutput {
                kind: event_kind::PUBLISH,
                name: "/filtered".into(),
                data: cdr_string(&text),
            })
            .collect())
    }
}

impl Module for FilterNode {
    fn name(&self) -> &str {
        "filter"
    }

    fn step(&mut self, _: &TraceHeader, _: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        Err("`filter` is an unmodified node: it replays its recorded events, not steps".into())
    }

    fn step_events(&mut self, events: &[GrantEvent<'_>]) -> Result<Vec<Vec<EventOutput>>, String> {
        events.iter().map(|e| self.callback(e)).collect()
    }
}

/// The ordinary module `scale`: /in times its factor.
pub struct Scale(pub u64);

impl Module for Scale {
    fn name(&self) -> &str {
        "scale"
    }

    fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        let v: u64 = text_of(inputs[0].data).parse().map_err(|e| format!("{e}"))?;
        Ok(cdr_string(&(v * self.0).to_string()))
    }
}
