//! `lockstep bag echo <bag> <topic>`: a topic's messages decoded with the bag's own message definition
//! and printed as YAML, like `ros2 topic echo` (each message followed by `---`).

use crate::cdr::{Schema, Value};
use crate::{BagReader, MessageDefinitions, ReadOptions};
use anyhow::{anyhow, bail, Context, Result};
use std::io::Write;
use std::path::Path;

/// What `echo` prints.
#[derive(Debug, Clone, Default)]
pub struct EchoOptions {
    /// At most this many messages (all when `None`).
    pub limit: Option<u64>,
    /// Only this field (`pose.position`), like `ros2 topic echo --field`.
    pub field: Option<String>,
    /// Skip messages before this many seconds after the bag's start.
    pub start_offset_secs: f64,
}

/// The decoding schema of `topic`: the bag's `ros2msg` definition, else the installed `.msg` files of
/// `AMENT_PREFIX_PATH`.
fn schema_of(reader: &BagReader, topic: &str) -> Result<(Schema, &'static str)> {
    let Some(t) = reader.topics().iter().find(|t| t.metadata.name == topic) else {
        let names: Vec<&str> = reader.topics().iter().map(|t| t.metadata.name.as_str()).collect();
        // In a damaged file the topic may lie past the damage: say so rather than only "not there".
        let damage = reader.damage();
        bail!(
            "topic `{topic}` is not in the bag (its topics: {}){}",
            names.join(", "),
            damage
                .first()
                .map(|d| format!("; the bag is damaged: {d}"))
                .unwrap_or_default()
        );
    };
    let type_name = &t.metadata.type_name;
    let from_bag = t
        .definition
        .as_ref()
        .filter(|d| d.encoding == crate::msgdefs::ROS2MSG && !d.text.trim().is_empty());
    let (text, source) = match from_bag {
        Some(d) => (d.text.clone(), "stored in the bag"),
        None => {
            let prefixes = std::env::var("AMENT_PREFIX_PATH").unwrap_or_default();
            let installed = MessageDefinitions::from_prefix_path(&prefixes)
                .resolve(type_name)
                .with_context(|| {
                    format!("the bag holds no ros2msg definition of {type_name} (topic {topic}) and none is installed")
                })?;
            (installed.text, "installed on this machine")
        }
    };
    let schema = Schema::parse(type_name, &text)
        .with_context(|| format!("cannot read the definition of {type_name}"))?;
    Ok((schema, source))
}

/// The value at `path` (`a.b.c`) inside `value`.
fn select<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(value, |v, name| v.field(name))
}

/// Prints the messages of `topic` in `bag`; returns how many were printed.
pub fn echo(bag: &Path, topic: &str, opts: &EchoOptions, out: &mut dyn Write) -> Result<u64> {
    let reader = BagReader::open(bag).context("cannot open bag")?;
    let (schema, source) = schema_of(&reader, topic)?;
    if let Some(field) = &opts.field {
        // Check the path against the type before reading any message.
        let mut ty = schema.root();
        for (i, name) in field.split('.').enumerate() {
            let f = ty.fields.iter().find(|f| f.name == name).ok_or_else(|| {
                let names: Vec<&str> = ty.fields.iter().map(|f| f.name.as_str()).collect();
                anyhow!(
                    "--field {field}: {} has no field `{name}` (it has: {})",
                    ty.name,
                    names.join(", ")
                )
            })?;
            let last = i + 1 == field.split('.').count();
            match (&f.ty, f.array) {
                (crate::cdr::FieldType::Message(m), crate::cdr::ArrayKind::Single) => {
                    ty = schema
                        .get(m)
                        .ok_or_else(|| anyhow!("--field {field}: type {m} is not defined"))?;
                }
                _ if last => {}
                _ => bail!("--field {field}: `{name}` is not a message, it has no fields"),
            }
        }
    }
    let start = reader.time_range().map_or(0, |(s, _)| s);
    let options = ReadOptions {
        topics: Some([topic.to_string()].into_iter().collect()),
        start_ns: Some(start.saturating_add((opts.start_offset_secs.max(0.0) * 1e9) as u64)),
        end_ns: None,
    };
    let mut printed = 0;
    for (index, message) in reader.messages_with(options).enumerate() {
        if opts.limit.is_some_and(|l| printed >= l) {
            break;
        }
        let message = message.context("cannot read bag")?;
        let value = schema.decode(&message.data).with_context(|| {
            format!(
                "message {index} of {topic} (log time {}.{:09} s) does not match the definition {source}",
                message.log_time_ns / 1_000_000_000,
                message.log_time_ns % 1_000_000_000
            )
        })?;
        let shown = match &opts.field {
            Some(path) => {
                select(&value, path).ok_or_else(|| anyhow!("--field {path}: not in message {index}"))?
            }
            None => &value,
        };
        // A closed pipe (`| head`) ends the output quietly.
        if out
            .write_all(shown.to_yaml().as_bytes())
            .and_then(|()| out.write_all(b"---\n"))
            .is_err()
        {
            break;
        }
        printed += 1;
    }
    Ok(printed)
}
