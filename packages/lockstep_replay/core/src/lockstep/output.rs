//! The simulated run as a bag: the outputs and their headers, in the recorder's format.

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_bag::{BagWriter, MessageDefinition, TopicSpec, WriterOptions};

use super::header::header_to_value;
use super::recording::{Recording, HEADER_SUFFIX};
use super::replay::ReplayOutcome;
use super::{LockstepError, Result};

/// Writes `outcome` into a new bag at `dir`: per output channel the data topic (type and definition as
/// recorded) and its `/lockstep_header` sidecar, every message at its recorded log time (ties in replay
/// order, data before its header), and the recorded topology. Nothing depends on the wall clock, so one
/// outcome always gives the same bytes.
pub fn write_bag(recording: &Recording, outcome: &ReplayOutcome, dir: &Path) -> Result<()> {
    let (header_type, header_definition, header_schema) =
        recording
            .header_type
            .as_ref()
            .ok_or_else(|| LockstepError::Encode {
                what: "headers".into(),
                reason: "the recording holds no header type definition".into(),
            })?;
    let mut writer = BagWriter::create(dir, WriterOptions::default())?;
    let channels: Vec<&str> = {
        let mut c: Vec<&str> = outcome
            .outputs
            .iter()
            .map(|o| o.header.channel_name.as_str())
            .collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    for channel in &channels {
        let recorded = recording.channels.get(*channel);
        let type_name = recorded.map_or("", |c| c.type_name.as_str());
        let definition = recorded
            .and_then(|c| c.definition.clone())
            .unwrap_or_else(MessageDefinition::empty);
        writer.add_topic(TopicSpec::new(*channel, type_name).with_definition(definition))?;
        writer.add_topic(
            TopicSpec::new(format!("{channel}{HEADER_SUFFIX}"), header_type.as_str())
                .with_definition(header_definition.clone()),
        )?;
    }
    let mut messages = Vec::with_capacity(outcome.outputs.len() * 2);
    for (i, o) in outcome.outputs.iter().enumerate() {
        let header = header_schema
            .encode(&header_to_value(&o.header, header_schema))
            .map_err(|e| LockstepError::Encode {
                what: format!(
                    "the header of {} #{}",
                    o.header.channel_name, o.header.sequence_num
                ),
                reason: e.to_string(),
            })?;
        messages.push((
            (o.data_log_time_ns, i, 0),
            o.header.channel_name.clone(),
            o.data.clone(),
        ));
        messages.push((
            (o.header_log_time_ns, i, 1),
            format!("{}{HEADER_SUFFIX}", o.header.channel_name),
            header,
        ));
    }
    messages.sort_by_key(|m| m.0);
    for ((log_time_ns, _, _), topic, data) in messages {
        writer.write(&topic, log_time_ns, &data)?;
    }
    let topology: BTreeMap<String, String> = recording
        .topology
        .components
        .iter()
        .map(|c| {
            let list =
                |s: &std::collections::BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(",");
            (
                c.module_name.clone(),
                format!(
                    "reads={};writes={}",
                    list(&c.reader_channels),
                    list(&c.writer_channels)
                ),
            )
        })
        .collect();
    writer.write_metadata_record("lockstep_topology", &topology)?;
    writer.finish()?;
    Ok(())
}
