//! Dependency headers as stored in a bag (CDR of `lockstep_interfaces/msg/DependencyHeader`), read and
//! written through the bag's own message definition: no generated code, so a bag from any Lockstep version
//! whose definition it holds is read the same way.

use lockstep_bag::cdr::{Schema, Value};
use lockstep_trace::{InputRecord, SourceRef, TraceHeader};

use super::error::{LockstepError, Result};

/// Suffix of the sidecar topic holding a channel's dependency headers.
pub const HEADER_SUFFIX: &str = "/lockstep_header";

fn field<'v>(value: &'v Value, name: &str, what: &str) -> Result<&'v Value> {
    value.field(name).ok_or_else(|| LockstepError::Header {
        what: what.to_owned(),
        reason: format!("no field `{name}`"),
    })
}

fn text(value: &Value, name: &str, what: &str) -> Result<String> {
    match field(value, name, what)? {
        Value::String(s) => Ok(s.clone()),
        other => Err(bad(what, name, other)),
    }
}

fn unsigned(value: &Value, name: &str, what: &str) -> Result<u64> {
    match field(value, name, what)? {
        Value::UInt(u) => Ok(*u),
        Value::Int(i) if *i >= 0 => Ok(*i as u64),
        other => Err(bad(what, name, other)),
    }
}

/// A field that older headers lack (epoch, input digests): 0 when absent.
fn unsigned_or_zero(value: &Value, name: &str, what: &str) -> Result<u64> {
    if value.field(name).is_none() {
        return Ok(0);
    }
    unsigned(value, name, what)
}

fn bad(what: &str, name: &str, got: &Value) -> LockstepError {
    LockstepError::Header {
        what: what.to_owned(),
        reason: format!("field `{name}` is {got:?}"),
    }
}

fn stamp_ns(value: &Value, name: &str, what: &str) -> Result<i64> {
    let stamp = field(value, name, what)?;
    let sec = match field(stamp, "sec", what)? {
        Value::Int(i) => *i,
        other => return Err(bad(what, "sec", other)),
    };
    let nanosec = unsigned(stamp, "nanosec", what)? as i64;
    Ok(sec * 1_000_000_000 + nanosec)
}

fn list<'v>(value: &'v Value, name: &str, what: &str) -> Result<&'v [Value]> {
    match field(value, name, what)? {
        Value::Array(items) => Ok(items),
        other => Err(bad(what, name, other)),
    }
}

fn u32_of(value: &Value, name: &str, what: &str) -> Result<u32> {
    let n = unsigned(value, name, what)?;
    u32::try_from(n).map_err(|_| bad(what, name, &Value::UInt(n)))
}

/// The fields that name a message (module, channel, sequence number, epoch, digest) of a decoded header,
/// input or source; the epoch and digest of headers older than those fields are 0.
fn identity_from(value: &Value, what: &str) -> Result<SourceRef> {
    Ok(SourceRef {
        module_name: text(value, "module_name", what)?,
        channel_name: text(value, "channel_name", what)?,
        sequence_num: u32_of(value, "sequence_num", what)?,
        epoch: unsigned_or_zero(value, "epoch", what)?,
        payload_digest: unsigned_or_zero(value, "payload_digest", what)?,
    })
}

/// A decoded header message as the model's header. `what` names it in errors (topic and index).
pub fn header_from_value(value: &Value, what: &str) -> Result<TraceHeader> {
    let mut inputs = Vec::new();
    for input in list(value, "inputs", what)? {
        let id = identity_from(input, what)?;
        let sources = list(input, "sources", what)?
            .iter()
            .map(|source| identity_from(source, what))
            .collect::<Result<_>>()?;
        inputs.push(InputRecord {
            module_name: id.module_name,
            channel_name: id.channel_name,
            sequence_num: id.sequence_num,
            epoch: id.epoch,
            payload_digest: id.payload_digest,
            start_time_ns: stamp_ns(input, "start_stamp", what)?,
            process_time_ns: u32_of(input, "process_time_ns", what)?,
            sources,
        });
    }
    let id = identity_from(value, what)?;
    Ok(TraceHeader {
        module_name: id.module_name,
        channel_name: id.channel_name,
        sequence_num: id.sequence_num,
        epoch: id.epoch,
        start_time_ns: stamp_ns(value, "start_stamp", what)?,
        process_time_ns: u32_of(value, "process_time_ns", what)?,
        // Every header version has the digest: absent, it is an error.
        payload_digest: unsigned(value, "payload_digest", what)?,
        inputs,
    })
}

fn stamp(ns: i64) -> Value {
    Value::Message(vec![
        ("sec".into(), Value::Int(ns.div_euclid(1_000_000_000))),
        ("nanosec".into(), Value::UInt(ns.rem_euclid(1_000_000_000) as u64)),
    ])
}

fn s(text: &str) -> Value {
    Value::String(text.to_owned())
}

/// The model's header as a message value of the `DependencyHeader` definition `schema` (fields the
/// definition lacks are left out, so an older definition still encodes).
pub fn header_to_value(header: &TraceHeader, schema: &Schema) -> Value {
    let has = |type_name: &str, field: &str| {
        schema
            .get(type_name)
            .is_some_and(|t| t.fields.iter().any(|f| f.name == field))
    };
    let keep = |type_name: &str, fields: Vec<(&str, Value)>| {
        Value::Message(
            fields
                .into_iter()
                .filter(|(name, _)| has(type_name, name))
                .map(|(name, v)| (name.to_owned(), v))
                .collect(),
        )
    };
    let identity = |id: &SourceRef| -> Vec<(&'static str, Value)> {
        vec![
            ("module_name", s(&id.module_name)),
            ("channel_name", s(&id.channel_name)),
            ("sequence_num", Value::UInt(id.sequence_num.into())),
            ("epoch", Value::UInt(id.epoch)),
            ("payload_digest", Value::UInt(id.payload_digest)),
        ]
    };
    let timing = |start_ns: i64, process_ns: u32| {
        [
            ("start_stamp", stamp(start_ns)),
            ("process_time_ns", Value::UInt(process_ns.into())),
        ]
    };
    let inputs = header
        .inputs
        .iter()
        .map(|i| {
            let sources = i
                .sources
                .iter()
                .map(|src| keep("lockstep_interfaces/msg/DependencySource", identity(src)))
                .collect();
            let mut fields = identity(&i.as_source());
            fields.extend(timing(i.start_time_ns, i.process_time_ns));
            fields.push(("sources", Value::Array(sources)));
            keep("lockstep_interfaces/msg/InputHeader", fields)
        })
        .collect();
    let mut fields = identity(&header.as_source());
    fields.extend(timing(header.start_time_ns, header.process_time_ns));
    fields.push(("inputs", Value::Array(inputs)));
    keep(&schema.root().name, fields)
}
