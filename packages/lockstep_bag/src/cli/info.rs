//! `lockstep bag info`: the `ros2 bag info`-style text about a bag, with the Lockstep extra data
//! (attachments, module topology, ROS graph, parameters, nodes traced by interception, metadata records) and
//! any damage found.

use crate::carries::{action_type, carries, service_type, Carries, SERVICE_EVENT_SUFFIX};
use crate::{AttachmentRecord, BagCompression, BagReader, MetadataRecord};
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::Path;

/// Prints `ros2 bag info`-style text about a bag from its summaries, checked against the file.
pub fn info(bag: &Path, out: &mut dyn Write) -> Result<()> {
    info_with(bag, false, out)
}

/// Prints `ros2 bag info`-style text about a bag; with `verify`, also reads every message back. Fails
/// (after printing what it could count) when a storage file is damaged: cut short, a summary that
/// does not fit the file, or (with `verify`) a chunk that does not read back.
pub fn info_with(bag: &Path, verify: bool, out: &mut dyn Write) -> Result<()> {
    let reader = BagReader::open(bag).context("cannot open bag")?;
    let files = file_names(&reader);
    write_overview(&reader, &files, out)?;
    write_topics(&reader, out)?;
    let attachments = reader.attachments().context("cannot read attachments")?;
    let records: Vec<_> = reader
        .metadata_records()
        .context("cannot read metadata records")?
        .into_iter()
        .filter(|r| r.name != crate::writer::ROSBAG2_METADATA_NAME)
        .collect();
    writeln!(out, "Lockstep extra data:")?;
    write_attachments(&attachments, &files, out)?;
    write_wiring(&records, out)?;
    write_parameters(&records, out)?;
    writeln!(
        out,
        "  Topology source:  {}",
        topology_source(&records, reader.topics())
    )?;
    crate::traced::traced_nodes(&reader).write_text(out)?;
    write_records(&records, &files, out)?;
    let damage = find_damage(&reader, verify, out)?;
    report_damage(&damage, out)
}

/// The bare file names of the bag's storage files, in order (records name their file by index).
fn file_names(reader: &BagReader) -> Vec<String> {
    reader
        .file_paths()
        .iter()
        .map(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect()
}

/// A left column label padded to the width `ros2 bag info` uses (a longer one gets one space).
fn label(s: &str) -> String {
    if s.len() >= 19 {
        format!("{s} ")
    } else {
        format!("{s:<19}")
    }
}

/// The first block: files, size, storage, compression, distro, metadata version, times and count.
fn write_overview(reader: &BagReader, files: &[String], out: &mut dyn Write) -> Result<()> {
    let md = reader.metadata();
    let (start, end) = reader
        .time_range()
        .unwrap_or((md.starting_time_ns, md.end_time_ns()));
    writeln!(out, "{}{}", label("Files:"), files.join("\n                   "))?;
    writeln!(out, "{}{}", label("Bag size:"), human_size(reader.size_bytes()))?;
    writeln!(out, "{}{}", label("Storage id:"), reader.storage().identifier())?;
    let compression = reader.compression();
    if compression != BagCompression::None {
        writeln!(
            out,
            "{}{} ({})",
            label("Compression:"),
            compression.format(),
            compression.mode()
        )?;
    }
    writeln!(
        out,
        "{}{}",
        label("ROS Distro:"),
        if md.ros_distro.is_empty() {
            "unknown"
        } else {
            &md.ros_distro
        }
    )?;
    writeln!(
        out,
        "{}{}",
        label("Metadata version:"),
        if reader.has_metadata_file() {
            md.version.to_string()
        } else {
            "none (built from files)".into()
        }
    )?;
    writeln!(
        out,
        "{}{:.9}s",
        label("Duration:"),
        end.saturating_sub(start) as f64 / 1e9
    )?;
    writeln!(out, "{}{}", label("Start:"), timestamp(start))?;
    writeln!(out, "{}{}", label("End:"), timestamp(end))?;
    writeln!(out, "{}{}", label("Messages:"), reader.message_count())?;
    Ok(())
}

/// One line per topic, the first under the `Topic information:` label (`(none)` for a bag without), then the
/// services and actions whose topics the bag holds, as rosbag2 Kilted shows them: a service's introspection
/// events with their count, an action with its topics and service events.
fn write_topics(reader: &BagReader, out: &mut dyn Write) -> Result<()> {
    let mut topics = Vec::new();
    let mut services = Vec::new();
    let mut actions: std::collections::BTreeMap<String, (String, u64, u64, u64)> = Default::default();
    for t in reader.topics() {
        let (name, type_name) = (&t.metadata.name, &t.metadata.type_name);
        match carries(name, type_name) {
            Carries::Topic => topics.push(format!(
                "Topic: {name} | Type: {type_name} | Count: {} | Serialization Format: {}",
                t.message_count, t.metadata.serialization_format
            )),
            Carries::Service(service) => services.push(format!(
                "Service: {service} | Type: {} | Event Count: {} | Serialization Format: {}",
                service_type(type_name),
                t.message_count,
                t.metadata.serialization_format
            )),
            Carries::Action(action) => {
                let entry = actions.entry(action).or_default();
                if let Some(action_type) = action_type(type_name) {
                    entry.0 = action_type.to_owned();
                }
                let service = name.ends_with(SERVICE_EVENT_SUFFIX);
                entry.1 += u64::from(!service);
                entry.2 += u64::from(service);
                entry.3 += t.message_count;
            }
        }
    }
    write_block(out, "Topic information:", &topics, true)?;
    if !services.is_empty() {
        writeln!(out, "{}{}", label("Services:"), services.len())?;
        write_block(out, "Service information:", &services, false)?;
    }
    if !actions.is_empty() {
        let lines: Vec<String> = (actions.iter())
            .map(|(action, (action_type, topics, services, count))| {
                let action_type = if action_type.is_empty() { "unknown" } else { action_type };
                format!(
                    "Action: {action} | Type: {action_type} | Topics: {topics} | Service events: {services} | \
                     Count: {count} | Serialization Format: cdr"
                )
            })
            .collect();
        writeln!(out, "{}{}", label("Actions:"), lines.len())?;
        write_block(out, "Action information:", &lines, false)?;
    }
    Ok(())
}

/// `lines`, the first after `title`, the others under it; `(none)` after it when there are none and `none` says.
fn write_block(out: &mut dyn Write, title: &str, lines: &[String], none: bool) -> Result<()> {
    for (i, line) in lines.iter().enumerate() {
        writeln!(out, "{}{line}", label(if i == 0 { title } else { "" }))?;
    }
    if lines.is_empty() && none {
        writeln!(out, "{}(none)", label(title))?;
    }
    Ok(())
}

/// The attachments: count, then name, media type, size and file of each.
fn write_attachments(attachments: &[AttachmentRecord], files: &[String], out: &mut dyn Write) -> Result<()> {
    writeln!(out, "  Attachments:      {}", attachments.len())?;
    for a in attachments {
        writeln!(
            out,
            "    {} ({}, {} bytes, in {})",
            a.name,
            a.media_type,
            a.data.len(),
            files.get(a.file_index).map_or("?", |s| s)
        )?;
    }
    Ok(())
}

/// The module topology a Lockstep recorder stored (record `lockstep_topology`, one entry per module:
/// `reads=a,b;writes=c`), shown as the wiring it is; and the ROS graph it saw (record `lockstep_graph`,
/// one entry per recorded topic: `writers=/node,...;readers=/node,...`).
fn write_wiring(records: &[MetadataRecord], out: &mut dyn Write) -> Result<()> {
    let check = records.iter().find(|r| r.name == "lockstep_topology_check");
    for r in records.iter().filter(|r| r.name == "lockstep_topology") {
        writeln!(out, "  Module topology:")?;
        for (module, wiring) in &r.entries {
            let (reads, writes) = (list_field(wiring, "reads="), list_field(wiring, "writes="));
            writeln!(out, "    {module}: [{reads}] -> [{writes}]")?;
        }
        // The recorder's check (record `lockstep_topology_check`): lock-step replay needs a DAG.
        match check.and_then(|c| c.entries.get("result")).map(String::as_str) {
            Some("acyclic") => writeln!(out, "    (a DAG: replayable in lock-step)")?,
            Some(_) => writeln!(
                out,
                "    NOT A DAG, lock-step replay refuses it: {}",
                check.and_then(|c| c.entries.get("detail")).map_or("?", |d| d)
            )?,
            None => writeln!(out, "    (not checked when recorded)")?,
        }
    }
    for r in records.iter().filter(|r| r.name == "lockstep_graph") {
        writeln!(out, "  ROS graph (nodes per recorded topic):")?;
        for (topic, wiring) in &r.entries {
            let (writers, readers) = (list_field(wiring, "writers="), list_field(wiring, "readers="));
            writeln!(out, "    {topic}: writers [{writers}] readers [{readers}]")?;
        }
    }
    Ok(())
}

/// The modules' parameters as the recorder read them when it first saw each module (records
/// `lockstep_parameters`: `<module>/<name>` -> typed value), and how many changes it saw while recording.
fn write_parameters(records: &[MetadataRecord], out: &mut dyn Write) -> Result<()> {
    let parameters: std::collections::BTreeMap<&str, &str> = (records.iter())
        .filter(|r| r.name == "lockstep_parameters")
        .flat_map(|r| r.entries.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .collect();
    if !parameters.is_empty() {
        writeln!(out, "  Module parameters (when recording started):")?;
        for (name, value) in &parameters {
            writeln!(out, "    {name} = {}", value.escape_debug())?;
        }
    }
    let changes: usize = (records.iter())
        .filter(|r| r.name == "lockstep_parameter_changes")
        .map(|r| r.entries.len())
        .sum();
    if changes > 0 {
        writeln!(
            out,
            "    and {changes} changes while recording (record lockstep_parameter_changes)"
        )?;
    }
    Ok(())
}

/// The metadata records: count, then name, keys and file of each.
fn write_records(records: &[MetadataRecord], files: &[String], out: &mut dyn Write) -> Result<()> {
    writeln!(out, "  Metadata records: {}", records.len())?;
    for r in records {
        let keys: Vec<&str> = r.entries.keys().map(String::as_str).collect();
        writeln!(
            out,
            "    {} (keys: {}; in {})",
            r.name,
            keys.join(", "),
            files.get(r.file_index).map_or("?", |s| s)
        )?;
    }
    Ok(())
}

/// The damage the reader found in its files; with `verify` and none found yet, also what reading every
/// message back finds (and, when all read back, a line saying so). A file already known damaged is not
/// read again: its error would only repeat.
fn find_damage(reader: &BagReader, verify: bool, out: &mut dyn Write) -> Result<Vec<String>> {
    let mut damage = reader.damage();
    if verify && damage.is_empty() {
        let mut read = 0u64;
        for message in reader.messages() {
            match message {
                Ok(_) => read += 1,
                Err(e) => {
                    damage.push(format!(
                        "{} (after {read} messages read back)",
                        crate::error_chain(&e)
                    ));
                    break;
                }
            }
        }
        if damage.is_empty() {
            writeln!(out, "Verified:          all {read} messages read back")?;
        }
    }
    Ok(damage)
}

/// A damaged file: what was counted above is only what could be read; say so and fail.
fn report_damage(damage: &[String], out: &mut dyn Write) -> Result<()> {
    for d in damage {
        writeln!(out, "DAMAGED: {d}")?;
    }
    match damage {
        [] => Ok(()),
        [one] => bail!("{one}"),
        [first, rest @ ..] => bail!("{first} (and {} more damaged files)", rest.len()),
    }
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// `YYYY-MM-DD hh:mm:ss.nnnnnnnnn UTC (secs.nanos)`.
fn timestamp(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let nanos = ns % 1_000_000_000;
    let t = crate::utc::UtcTime::from_unix_secs(secs);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{nanos:09} UTC ({secs}.{nanos:09})",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// Where lock-step replay takes the module topology of this bag from: the recorder's records, or when the
/// bag holds none (a copy written by another tool, `ros2 bag record`, a cut recording), the dependency
/// headers on its `<channel>/lockstep_header` topics; with neither, it cannot replay the bag.
fn topology_source(records: &[crate::MetadataRecord], topics: &[crate::BagTopic]) -> String {
    let stored: std::collections::BTreeSet<&str> = records
        .iter()
        .map(|r| r.name.as_str())
        .filter(|n| *n == "lockstep_topology" || *n == "lockstep_topology_update")
        .collect();
    if !stored.is_empty() {
        let names: Vec<&str> = stored.into_iter().collect();
        return format!("the recorder's record ({})", names.join(", "));
    }
    let sidecars = topics
        .iter()
        .filter(|t| t.metadata.name.ends_with("/lockstep_header") && t.message_count > 0)
        .count();
    match sidecars {
        0 => "none (no topology record and no dependency header topic: lock-step replay cannot use this bag)"
            .to_owned(),
        n => format!(
            "rebuilt from {n} dependency header topic{} (no topology record in the bag)",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// The `key=` list of a `key=a,b;other=c` record value, as `a, b`.
fn list_field(wiring: &str, key: &str) -> String {
    wiring
        .split(';')
        .find_map(|part| part.strip_prefix(key))
        .map(|list| list.replace(',', ", "))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_times_and_sizes() {
        assert_eq!(
            timestamp(1_585_866_235_112_411_371),
            "2020-04-02 22:23:55.112411371 UTC (1585866235.112411371)"
        );
        assert_eq!(timestamp(0), "1970-01-01 00:00:00.000000000 UTC (0.000000000)");
        assert_eq!(human_size(2048), "2.0 KiB");
        assert_eq!(human_size(12), "12 B");
    }
}
