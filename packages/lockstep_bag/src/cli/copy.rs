//! Copying bags into a new MCAP bag: `convert`, and the steps `filter` and `merge` share with it (the
//! output checks and options, a topic declared with its QoS, type hash and definition, messages written with
//! progress, the attachments, metadata records and metadata.yaml `custom_data` carried over).

use crate::{
    BagMessage, BagReader, BagTopic, BagWriter, ChunkCompression, MessageDefinition, MessageDefinitions,
    ReadOptions, TopicId, TopicSpec, WriterOptions,
};
use anyhow::{bail, Context, Result};
use lockstep_ranges::{int_arg, real_arg, Int, Real};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A file of the bag: from 1 KiB (one file per few messages) to 1 PiB.
const SPLIT_SIZE_BYTES: Int = Int::closed(1024, 1 << 50, "bytes");
/// A file's span of messages: from 1 ms to about 115 days.
const SPLIT_DURATION_S: Real = Real::closed(0.001, 1e7, "s");

/// `--compression` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompressionArg {
    /// Uncompressed chunks.
    None,
    /// zstd chunks.
    Zstd,
}

/// How the verbs that write a new bag (`convert`, `filter`, `merge`) write it.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// MCAP chunk compression.
    #[arg(long, value_enum, default_value = "none")]
    pub compression: CompressionArg,
    /// Start a new file when the current one exceeds this many bytes.
    #[arg(long, value_parser = int_arg::<u64>(SPLIT_SIZE_BYTES))]
    pub max_bag_size_bytes: Option<u64>,
    /// Start a new file when a message is this many seconds after the file's first one.
    #[arg(long, value_parser = real_arg(SPLIT_DURATION_S))]
    pub max_bag_duration_secs: Option<f64>,
}

impl OutputArgs {
    /// The writer's options for these arguments.
    pub fn writer_options(&self) -> Result<WriterOptions> {
        let mut opts = WriterOptions {
            compression: match self.compression {
                CompressionArg::None => ChunkCompression::None,
                CompressionArg::Zstd => ChunkCompression::Zstd,
            },
            max_bag_size_bytes: self.max_bag_size_bytes,
            ..WriterOptions::default()
        };
        if let Some(secs) = self.max_bag_duration_secs {
            if !(secs.is_finite() && secs > 0.0) {
                bail!("--max-bag-duration-secs must be a positive number of seconds, got {secs}");
            }
            opts.max_bag_duration_ns = Some((secs * 1e9) as u64);
        }
        Ok(opts)
    }
}

/// The message definitions installed on `AMENT_PREFIX_PATH`, for topics whose bag holds none.
pub(super) fn installed_definitions() -> MessageDefinitions {
    MessageDefinitions::from_prefix_path(&std::env::var("AMENT_PREFIX_PATH").unwrap_or_default())
}

/// Copies every topic, message, attachment, metadata record (except rosbag2's own) and metadata.yaml
/// `custom_data` entry of `input` into a new MCAP bag at `output`. Definitions missing from the input are
/// looked up in `defs`, then left empty. Progress goes to `progress`. Returns the number of messages copied.
pub fn convert(
    input: &Path,
    output: &Path,
    opts: WriterOptions,
    defs: &mut MessageDefinitions,
    progress: &mut dyn Write,
) -> Result<u64> {
    let reader = BagReader::open(input).context("cannot open input bag")?;
    check_output(output, &[input])?;
    let mut writer = BagWriter::create(output, opts).context("cannot create output bag")?;
    let mut ids = HashMap::new();
    for topic in reader.topics() {
        ids.insert(topic.metadata.name.clone(), add_topic(&mut writer, topic, defs)?);
    }
    let mut copied = Progress::new("converted", reader.message_count(), progress);
    copy_and_finish(&reader, writer, &ids, input, ReadOptions::default(), &mut copied)?;
    Ok(copied.count)
}

/// Copy the messages `read` selects, then the attachments, metadata records and `custom_data` of `reader`
/// (from `input`) into `writer`, and finish the bag.
pub(super) fn copy_and_finish(
    reader: &BagReader,
    mut writer: BagWriter,
    ids: &HashMap<String, TopicId>,
    input: &Path,
    read: ReadOptions,
    copied: &mut Progress<'_>,
) -> Result<()> {
    for message in reader.messages_with(read) {
        let message = message.context("cannot read a message")?;
        write_message(&mut writer, ids, input, &message)?;
        copied.one();
    }
    copy_extra_records(reader, &mut writer, &mut |_| true)?;
    copy_custom_data(&[reader], &mut writer);
    writer.finish().context("cannot finish output bag")?;
    Ok(())
}

/// Refuses an output that already holds something, that names a storage file instead of a bag directory,
/// or that lies inside one of the `inputs` (writing there would change an input bag's directory).
pub(super) fn check_output(output: &Path, inputs: &[&Path]) -> Result<()> {
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
    let out = absolute(output);
    for input in inputs {
        let input_dir = absolute(input);
        if input.is_dir() && out.starts_with(&input_dir) {
            bail!(
                "{}: the output lies inside the input bag {}, which is only read",
                output.display(),
                input.display()
            );
        }
    }
    Ok(())
}

/// `path` made absolute with its existing part resolved (symbolic links, `..`), so that two spellings of
/// one directory compare equal; the part that does not exist yet is appended as given.
fn absolute(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = path.to_path_buf();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return missing.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name.to_os_string());
                existing = if parent.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    parent.to_path_buf()
                };
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The spec of `topic` as stored in a bag: name, type, serialization format, QoS, type hash, and the
/// input's message definition when it has a usable one, else the one `defs` resolves, else an empty one.
pub(super) fn topic_spec(topic: &BagTopic, defs: &mut MessageDefinitions) -> TopicSpec {
    let m = &topic.metadata;
    let definition = match &topic.definition {
        Some(d) if usable(d) => d.clone(),
        _ => defs
            .resolve(&m.type_name)
            .unwrap_or_else(|_| MessageDefinition::empty()),
    };
    TopicSpec::new(&m.name, &m.type_name)
        .with_serialization_format(&m.serialization_format)
        .with_qos(m.offered_qos_profiles.clone())
        .with_type_hash(&m.type_description_hash)
        .with_definition(definition)
}

/// Whether a definition stored in a bag can be copied as it is.
pub(super) fn usable(d: &MessageDefinition) -> bool {
    !d.text.is_empty() && (d.encoding == "ros2msg" || d.encoding == "ros2idl")
}

/// Declares `topic` in `writer` (see [`topic_spec`]).
pub(super) fn add_topic(
    writer: &mut BagWriter,
    topic: &BagTopic,
    defs: &mut MessageDefinitions,
) -> Result<TopicId> {
    writer
        .add_topic(topic_spec(topic, defs))
        .with_context(|| format!("cannot add topic {}", topic.metadata.name))
}

/// Writes `message` of bag `input` on the output topic of its name, at its own log and publish times.
pub(super) fn write_message(
    writer: &mut BagWriter,
    ids: &HashMap<String, TopicId>,
    input: &Path,
    message: &BagMessage,
) -> Result<()> {
    let Some(&id) = ids.get(&*message.topic) else {
        bail!(
            "{}: message on topic `{}` that the bag does not declare",
            input.display(),
            message.topic
        );
    };
    writer
        .write_id(id, message.log_time_ns, message.publish_time_ns, &message.data)
        .context("cannot write a message")
}

/// Copies the attachments and the metadata records that `keep` accepts, except rosbag2's own record (the
/// writer writes its own).
pub(super) fn copy_extra_records(
    reader: &BagReader,
    writer: &mut BagWriter,
    keep: &mut dyn FnMut(&Extra<'_>) -> bool,
) -> Result<()> {
    for a in reader.attachments().context("cannot read attachments")? {
        if keep(&Extra::Attachment(&a)) {
            writer.attach(&a.name, &a.media_type, a.log_time_ns, a.create_time_ns, &a.data)?;
        }
    }
    for r in reader
        .metadata_records()
        .context("cannot read metadata records")?
    {
        if r.name != crate::writer::ROSBAG2_METADATA_NAME && keep(&Extra::Record(&r)) {
            writer.write_metadata_record(&r.name, &r.entries)?;
        }
    }
    Ok(())
}

/// Sets every metadata.yaml `custom_data` entry of the `readers` (Lockstep's topology and its check among
/// them); a key more than one has takes the first one's value.
pub(super) fn copy_custom_data(readers: &[&BagReader], writer: &mut BagWriter) {
    let mut merged = std::collections::BTreeMap::new();
    for reader in readers {
        for (key, value) in &reader.metadata().custom_data {
            merged.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    for (key, value) in merged {
        writer.set_custom_data(key, value);
    }
}

/// An attachment or a metadata record offered to [`copy_extra_records`]'s `keep`.
pub(super) enum Extra<'a> {
    /// An MCAP attachment.
    Attachment(&'a crate::AttachmentRecord),
    /// An MCAP metadata record.
    Record(&'a crate::MetadataRecord),
}

/// Counts written messages and reports them every 2 s.
pub(super) struct Progress<'a> {
    verb: &'static str,
    total: u64,
    /// Messages so far.
    pub(super) count: u64,
    started: Instant,
    last_report: Instant,
    out: &'a mut dyn Write,
}

impl<'a> Progress<'a> {
    /// Progress of `total` messages (an upper bound when not all are copied), reported as `<verb> n / total`.
    pub(super) fn new(verb: &'static str, total: u64, out: &'a mut dyn Write) -> Self {
        Progress {
            verb,
            total,
            count: 0,
            started: Instant::now(),
            last_report: Instant::now(),
            out,
        }
    }

    /// One more message.
    pub(super) fn one(&mut self) {
        self.count += 1;
        if self.last_report.elapsed() >= Duration::from_secs(2) {
            self.last_report = Instant::now();
            let (verb, n, total) = (self.verb, self.count, self.total);
            let _ = writeln!(
                self.out,
                "{verb} {n} / {total} messages ({:.0?})",
                self.started.elapsed()
            );
        }
    }
}
