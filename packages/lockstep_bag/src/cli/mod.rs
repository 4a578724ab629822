//! `lockstep bag ...`: inspect, repair and convert rosbag2 bags (feature `cli`).
//!
//! `info` and `convert` only read their input bag (sqlite3 bags are opened read-only and immutable,
//! see [`crate::reader`]); `reindex` is the one command that writes into a bag directory.
//!
//! Error contexts name the step that failed ("cannot open bag"); the library error after them names
//! the file, so the path is not repeated.

mod echo;
mod reindex;

pub use echo::{echo, EchoOptions};

use crate::{
    BagCompression, BagReader, BagWriter, ChunkCompression, MessageDefinition, MessageDefinitions,
    ReadOptions, TopicSpec, WriterOptions,
};
use anyhow::{bail, Context, Result};
use lockstep_ranges::{int_arg, real_arg, Int, Real};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Arguments of `lockstep bag`.
#[derive(Debug, clap::Args)]
pub struct BagArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: BagCommand,
}

/// Offsets into a bag: up to about 300 years of recording.
const START_OFFSET_S: Real = Real::closed(0.0, 1e10, "s");
/// A file of the bag: from 1 KiB (one file per few messages) to 1 PiB.
const SPLIT_SIZE_BYTES: Int = Int::closed(1024, 1 << 50, "bytes");
/// A file's span of messages: from 1 ms to about 115 days.
const SPLIT_DURATION_S: Real = Real::closed(0.001, 1e7, "s");

/// The `lockstep bag` verbs.
#[derive(Debug, clap::Subcommand)]
pub enum BagCommand {
    /// Print a bag's files, size, duration, topics and Lockstep extra data (like `ros2 bag info`).
    /// Only reads: nothing is written into the bag directory.
    Info {
        /// Bag directory, or a single MCAP or sqlite3 file.
        bag: PathBuf,
        /// Also read every message back (CRCs, decompression), so that a damaged chunk under an intact
        /// summary is found. Without it, info reads the summaries and checks that they fit the file
        /// (instant on any bag; a file cut short is still found).
        #[arg(long)]
        verify: bool,
    },
    /// Repair a bag whose recorder was killed or whose files are damaged: salvage every chunk that
    /// reads back intact into a new bag (default `<bag>.reindexed`), or in place with --in-place.
    Reindex(reindex::ReindexArgs),
    /// Print a topic's messages as YAML, like `ros2 topic echo`, decoded with the message definition the
    /// bag holds (or the installed .msg files when it holds none).
    Echo {
        /// Bag directory, or a single MCAP or sqlite3 file.
        bag: PathBuf,
        /// The topic.
        topic: String,
        /// Print at most this many messages.
        #[arg(long)]
        limit: Option<u64>,
        /// Print only this field (`pose.position`).
        #[arg(long)]
        field: Option<String>,
        /// Skip the first this many seconds of the bag.
        #[arg(long, default_value_t = 0.0, value_parser = real_arg(START_OFFSET_S))]
        start_offset: f64,
    },
    /// Copy any readable bag (sqlite3 or MCAP) into a new MCAP bag written by this library. The
    /// input is only read.
    Convert {
        /// Input bag directory or file.
        input: PathBuf,
        /// Output bag directory (must not exist or be empty).
        output: PathBuf,
        /// MCAP chunk compression.
        #[arg(long, value_enum, default_value = "none")]
        compression: CompressionArg,
        /// Start a new file when the current one exceeds this many bytes.
        #[arg(long, value_parser = int_arg::<u64>(SPLIT_SIZE_BYTES))]
        max_bag_size_bytes: Option<u64>,
        /// Start a new file when a message is this many seconds after the file's first one.
        #[arg(long, value_parser = real_arg(SPLIT_DURATION_S))]
        max_bag_duration_secs: Option<f64>,
    },
}

/// `--compression` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompressionArg {
    /// Uncompressed chunks.
    None,
    /// zstd chunks.
    Zstd,
}

/// Runs a `lockstep bag` command, printing to stdout.
pub fn run(args: BagArgs) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.command {
        BagCommand::Info { bag, verify } => info_with(&bag, verify, &mut out),
        BagCommand::Echo {
            bag,
            topic,
            limit,
            field,
            start_offset,
        } => {
            let opts = EchoOptions {
                limit,
                field,
                start_offset_secs: start_offset,
            };
            echo(&bag, &topic, &opts, &mut out).map(|_| ())
        }
        BagCommand::Reindex(args) => reindex::run(&args, &mut out),
        BagCommand::Convert {
            input,
            output,
            compression,
            max_bag_size_bytes,
            max_bag_duration_secs,
        } => {
            let mut opts = WriterOptions {
                compression: match compression {
                    CompressionArg::None => ChunkCompression::None,
                    CompressionArg::Zstd => ChunkCompression::Zstd,
                },
                max_bag_size_bytes,
                ..WriterOptions::default()
            };
            if let Some(secs) = max_bag_duration_secs {
                if !(secs.is_finite() && secs > 0.0) {
                    bail!("--max-bag-duration-secs must be a positive number of seconds, got {secs}");
                }
                opts.max_bag_duration_ns = Some((secs * 1e9) as u64);
            }
            let prefixes = std::env::var("AMENT_PREFIX_PATH").unwrap_or_default();
            let mut defs = MessageDefinitions::from_prefix_path(&prefixes);
            let n = convert(&input, &output, opts, &mut defs, &mut std::io::stderr())?;
            writeln!(
                out,
                "converted {n} messages from {} to {}",
                input.display(),
                output.display()
            )?;
            Ok(())
        }
    }
}

/// Copies every topic, message, attachment and metadata record (except rosbag2's own) of `input`
/// into a new MCAP bag at `output`. Definitions missing from the input are looked up in `defs`, then
/// left empty. Progress goes to `progress`. Returns the number of messages copied.
pub fn convert(
    input: &Path,
    output: &Path,
    opts: WriterOptions,
    defs: &mut MessageDefinitions,
    progress: &mut dyn Write,
) -> Result<u64> {
    let reader = BagReader::open(input).context("cannot open input bag")?;
    if output.exists()
        && std::fs::read_dir(output)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        bail!(
            "{}: output exists and is not an empty directory",
            output.display()
        );
    }
    if let Some(ext) = output.extension() {
        if ext == "mcap" || ext == "db3" {
            bail!(
                "{}: the output is a bag directory, not a storage file",
                output.display()
            );
        }
    }
    let mut writer = BagWriter::create(output, opts).context("cannot create output bag")?;
    let mut ids = HashMap::new();
    for topic in reader.topics() {
        let definition = match &topic.definition {
            Some(d) if !d.text.is_empty() && (d.encoding == "ros2msg" || d.encoding == "ros2idl") => {
                d.clone()
            }
            _ => match defs.resolve(&topic.metadata.type_name) {
                Ok(d) => d,
                Err(_) => MessageDefinition::empty(),
            },
        };
        let m = &topic.metadata;
        let spec = TopicSpec::new(&m.name, &m.type_name)
            .with_serialization_format(&m.serialization_format)
            .with_qos(m.offered_qos_profiles.clone())
            .with_type_hash(&m.type_description_hash)
            .with_definition(definition);
        let id = writer
            .add_topic(spec)
            .with_context(|| format!("cannot add topic {}", m.name))?;
        ids.insert(m.name.clone(), id);
    }
    let total = reader.message_count();
    let started = Instant::now();
    let mut last_report = Instant::now();
    let mut n = 0u64;
    for message in reader.messages_with(ReadOptions::default()) {
        let message = message.context("cannot read a message")?;
        let Some(&id) = ids.get(&*message.topic) else {
            bail!(
                "{}: message on topic `{}` that the bag does not declare",
                input.display(),
                message.topic
            );
        };
        writer
            .write_id(id, message.log_time_ns, message.publish_time_ns, &message.data)
            .context("cannot write a message")?;
        n += 1;
        if last_report.elapsed() >= Duration::from_secs(2) {
            last_report = Instant::now();
            let _ = writeln!(
                progress,
                "converted {n} / {total} messages ({:.0?})",
                started.elapsed()
            );
        }
    }
    for a in reader.attachments().context("cannot read attachments")? {
        writer.attach(&a.name, &a.media_type, a.log_time_ns, a.create_time_ns, &a.data)?;
    }
    for r in reader
        .metadata_records()
        .context("cannot read metadata records")?
    {
        if r.name != crate::writer::ROSBAG2_METADATA_NAME {
            writer.write_metadata_record(&r.name, &r.entries)?;
        }
    }
    writer.finish().context("cannot finish output bag")?;
    Ok(n)
}

/// Prints `ros2 bag info`-style text about a bag from its summaries, checked against the file.
pub fn info(bag: &Path, out: &mut dyn Write) -> Result<()> {
    info_with(bag, false, out)
}

/// Prints `ros2 bag info`-style text about a bag; with `verify`, also reads every message back. Fails
/// (after printing what it could count) when a storage file is damaged: cut short, a summary that
/// does not fit the file, or (with `verify`) a chunk that does not read back.
pub fn info_with(bag: &Path, verify: bool, out: &mut dyn Write) -> Result<()> {
    let reader = BagReader::open(bag).context("cannot open bag")?;
    let md = reader.metadata();
    let files: Vec<String> = reader
        .file_paths()
        .iter()
        .map(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let (start, end) = reader
        .time_range()
        .unwrap_or((md.starting_time_ns, md.end_time_ns()));
    let label = |s: &str| format!("{s:<19}");
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
    let mut first = true;
    for t in reader.topics() {
        let line = format!(
            "Topic: {} | Type: {} | Count: {} | Serialization Format: {}",
            t.metadata.name, t.metadata.type_name, t.message_count, t.metadata.serialization_format
        );
        writeln!(
            out,
            "{}{}",
            if first {
                label("Topic information:")
            } else {
                label("")
            },
            line
        )?;
        first = false;
    }
    if first {
        writeln!(out, "{}(none)", label("Topic information:"))?;
    }
    let attachments = reader.attachments().context("cannot read attachments")?;
    let records: Vec<_> = reader
        .metadata_records()
        .context("cannot read metadata records")?
        .into_iter()
        .filter(|r| r.name != crate::writer::ROSBAG2_METADATA_NAME)
        .collect();
    writeln!(out, "Lockstep extra data:")?;
    writeln!(out, "  Attachments:      {}", attachments.len())?;
    for a in &attachments {
        writeln!(
            out,
            "    {} ({}, {} bytes, in {})",
            a.name,
            a.media_type,
            a.data.len(),
            files.get(a.file_index).map_or("?", |s| s)
        )?;
    }
    // The module topology a Lockstep recorder stored (record `lockstep_topology`, one entry per module:
    // `reads=a,b;writes=c`), shown as the wiring it is; and the ROS graph it saw (record `lockstep_graph`,
    // one entry per recorded topic: `writers=/node,...;readers=/node,...`).
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
    // The modules' parameters as the recorder read them when it first saw each module (records
    // `lockstep_parameters`: `<module>/<name>` -> typed value), and how many changes it saw while recording.
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
    writeln!(
        out,
        "  Topology source:  {}",
        topology_source(&records, reader.topics())
    )?;
    writeln!(out, "  Metadata records: {}", records.len())?;
    for r in &records {
        let keys: Vec<&str> = r.entries.keys().map(String::as_str).collect();
        writeln!(
            out,
            "    {} (keys: {}; in {})",
            r.name,
            keys.join(", "),
            files.get(r.file_index).map_or("?", |s| s)
        )?;
    }
    // A damaged file: what was counted above is only what could be read; say so and fail.
    let mut damage = reader.damage();
    // A file already known damaged is not read again: its error would only repeat.
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
    for d in &damage {
        writeln!(out, "DAMAGED: {d}")?;
    }
    match damage.as_slice() {
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
