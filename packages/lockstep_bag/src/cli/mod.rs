//! `lockstep bag ...`: inspect, repair and convert rosbag2 bags (feature `cli`).
//!
//! `info` and `convert` only read their input bag (sqlite3 bags are opened read-only and immutable,
//! see [`crate::reader`]); `reindex` is the one command that writes into a bag directory.
//!
//! Error contexts name the step that failed ("cannot open bag"); the library error after them names
//! the file, so the path is not repeated.

mod echo;
mod info;
mod reindex;

pub use echo::{echo, EchoOptions};
pub use info::{info, info_with};

use crate::{
    BagReader, BagWriter, ChunkCompression, MessageDefinition, MessageDefinitions, ReadOptions, TopicId,
    TopicSpec, WriterOptions,
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
    /// Print a bag's files, size, duration, topics and Lockstep extra data (like `ros2 bag info`), with the
    /// nodes traced by interception (`lockstep trace`) when the bag has their event topics.
    /// Only reads: nothing is written into the bag directory.
    Info {
        /// Bag directory, or a single MCAP or sqlite3 file.
        bag: PathBuf,
        /// Also read every message back (CRCs, decompression), so that a damaged chunk under an intact
        /// summary is found. Without it, info reads the summaries and checks that they fit the file
        /// (instant on any bag; a file cut short is still found), and only the messages of the nodes'
        /// event topics (`lockstep_interfaces/msg/NodeEvents`) when the bag has any.
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
    check_output(output)?;
    let mut writer = BagWriter::create(output, opts).context("cannot create output bag")?;
    let ids = copy_topics(&reader, &mut writer, defs)?;
    let n = copy_messages(input, &reader, &mut writer, &ids, progress)?;
    copy_extra_records(&reader, &mut writer)?;
    writer.finish().context("cannot finish output bag")?;
    Ok(n)
}

/// Refuses an output that already holds something, or that names a storage file instead of a bag
/// directory.
fn check_output(output: &Path) -> Result<()> {
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
    Ok(())
}

/// Declares every topic of `reader` in `writer`, with the input's message definition when it has a
/// usable one, else the one `defs` resolves, else an empty one. Returns the writer's id per topic name.
fn copy_topics(
    reader: &BagReader,
    writer: &mut BagWriter,
    defs: &mut MessageDefinitions,
) -> Result<HashMap<String, TopicId>> {
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
    Ok(ids)
}

/// Copies every message in log-time order, reporting progress every 2 s. Returns how many it copied.
fn copy_messages(
    input: &Path,
    reader: &BagReader,
    writer: &mut BagWriter,
    ids: &HashMap<String, TopicId>,
    progress: &mut dyn Write,
) -> Result<u64> {
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
    Ok(n)
}

/// Copies the attachments and the metadata records, except rosbag2's own (the writer writes its own).
fn copy_extra_records(reader: &BagReader, writer: &mut BagWriter) -> Result<()> {
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
    Ok(())
}
