//! Shared by the lock-step tests and the in-process benchmark: a recording of an external channel /in, a
//! module `double` (/in -> /mid: the text twice) and a module `count` (/mid -> /out: its length), with
//! dependency headers made by lockstep_trace's Tracer and stored as the recorder stores them (CDR of the
//! repository's DependencyHeader definition, topology in the `lockstep_topology` record).
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_bag::cdr::{Schema, Value};
use lockstep_bag::{BagWriter, MessageDefinition, TopicSpec, WriterOptions};
use lockstep_replay::lockstep::{header_to_value, Module, StepInput};
use lockstep_trace::{digest, TraceHeader, Tracer};

const STRING: &str = "std_msgs/msg/String";
const HEADER: &str = "lockstep_interfaces/msg/DependencyHeader";

pub fn header_definition() -> String {
    let msg = |name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../../msg/msg/{name}.msg")),
        )
        .unwrap()
    };
    let sep = "=".repeat(80);
    format!(
        "{}\n{sep}\nMSG: lockstep_interfaces/InputHeader\n{}\n{sep}\nMSG: lockstep_interfaces/DependencySource\n{}",
        msg("DependencyHeader"),
        msg("InputHeader"),
        msg("DependencySource")
    )
}

fn string_schema() -> Schema {
    Schema::parse(STRING, "string data\n").unwrap()
}

/// A std_msgs/String as CDR (through lockstep_bag's encoder).
pub fn cdr_string(s: &str) -> Vec<u8> {
    string_schema()
        .encode(&Value::Message(vec![("data".into(), Value::String(s.into()))]))
        .unwrap()
}

/// The text of a std_msgs/String.
pub fn text_of(data: &[u8]) -> String {
    match string_schema().decode(data).unwrap().field("data") {
        Some(Value::String(s)) => s.clone(),
        other => panic!("not a string: {other:?}"),
    }
}

pub fn double(text: &str) -> String {
    format!("{text}{text}")
}

pub fn count(text: &str, extra: usize) -> String {
    (text.len() + extra).to_string()
}

/// Writes the recording; `skip_first_input` leaves out the first /in message (a recording started late),
/// `topology` overrides the stored wiring.
/// Where a recording is cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Nothing missing.
    None,
    /// The first /in message was not recorded (the recording began after it).
    FirstInput,
    /// The last /out message was recorded, its header was not (the recording ended between the two).
    LastHeader,
}

pub fn record(dir: &Path, frames: u64, cut: Cut, topology: Option<BTreeMap<String, String>>) {
    record_with_offset(dir, frames, cut, topology, 0);
}

/// [`record`] with `count` on a host whose clock reads `count_offset_ns` off the others' (its start stamps
/// move; log times, the recorder's clock, do not).
pub fn record_with_offset(
    dir: &Path,
    frames: u64,
    cut: Cut,
    topology: Option<BTreeMap<String, String>>,
    count_offset_ns: i64,
) {
    let mut w = BagWriter::create(dir, WriterOptions::default()).unwrap();
    let string = MessageDefinition {
        encoding: "ros2msg".into(),
        text: "string data\n".into(),
    };
    let header_def = MessageDefinition {
        encoding: "ros2msg".into(),
        text: header_definition(),
    };
    let schema = Schema::parse(HEADER, &header_def.text).unwrap();
    for t in ["/in", "/mid", "/out"] {
        w.add_topic(TopicSpec::new(t, STRING).with_definition(string.clone()))
            .unwrap();
    }
    for t in ["/mid", "/out"] {
        w.add_topic(
            TopicSpec::new(format!("{t}/lockstep_header"), HEADER).with_definition(header_def.clone()),
        )
        .unwrap();
    }
    let put_header = |w: &mut BagWriter, t: u64, h: &TraceHeader| {
        let bytes = schema.encode(&header_to_value(h, &schema)).unwrap();
        w.write(&format!("{}/lockstep_header", h.channel_name), t, &bytes)
            .unwrap();
    };
    let mut m_double = Tracer::with_epoch("double", 100);
    let mut m_count = Tracer::with_epoch("count", 200);
    for k in 0..frames {
        let t = 1_000_000_000 + k * 10_000_000;
        let input = cdr_string(&format!("in{k}"));
        if !(cut == Cut::FirstInput && k == 0) {
            w.write("/in", t, &input).unwrap();
        }
        let ext = TraceHeader::external("/in", k as u32, t as i64, digest(&input));
        let mid = cdr_string(&double(&format!("in{k}")));
        let token = m_double.begin_at(t as i64 + 1);
        let h_mid = m_double.finish_with_process_time(
            token,
            std::time::Duration::from_nanos(50),
            "/mid",
            &mid,
            &[&ext],
        );
        w.write("/mid", t + 1, &mid).unwrap();
        put_header(&mut w, t + 1, &h_mid);
        let out = cdr_string(&count(&double(&format!("in{k}")), 0));
        let token = m_count.begin_at(t as i64 + 2 + count_offset_ns);
        let h_out = m_count.finish_with_process_time(
            token,
            std::time::Duration::from_nanos(70),
            "/out",
            &out,
            &[&h_mid],
        );
        w.write("/out", t + 2, &out).unwrap();
        if !(cut == Cut::LastHeader && k + 1 == frames) {
            put_header(&mut w, t + 2, &h_out);
        }
    }
    let topology = topology.unwrap_or_else(|| {
        [
            ("count".to_owned(), "reads=/mid;writes=/out".to_owned()),
            ("double".to_owned(), "reads=/in;writes=/mid".to_owned()),
        ]
        .into()
    });
    w.write_metadata_record("lockstep_topology", &topology).unwrap();
    w.finish().unwrap();
}

pub struct Double;
pub struct Count {
    pub extra: usize,
}

impl Module for Double {
    fn name(&self) -> &str {
        "double"
    }
    fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        Ok(cdr_string(&double(&text_of(inputs[0].data))))
    }
}

impl Module for Count {
    fn name(&self) -> &str {
        "count"
    }
    fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        Ok(cdr_string(&count(&text_of(inputs[0].data), self.extra)))
    }
}

pub fn modules(extra: usize) -> Vec<Box<dyn Module>> {
    vec![Box::new(Double), Box::new(Count { extra })]
}
