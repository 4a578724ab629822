//! `lockstep bag merge`: a k-way merge of bags by log time into a new bag, reading each input as a stream
//! (one pending message per input), so memory does not grow with the bags.

use super::copy::{
    add_topic, check_output, copy_custom_data, copy_extra_records, installed_definitions, usable,
    write_message, Extra, OutputArgs, Progress,
};
use crate::{BagMessage, BagReader, BagTopic, BagWriter, MessageIter, WriterOptions};
use anyhow::{bail, Context, Result};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `lockstep bag merge`.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeArgs {
    /// Output bag directory (must not exist or be empty).
    pub output: PathBuf,
    /// The bags to merge (directories, or single MCAP or sqlite3 files), two or more. Messages with equal
    /// log times come in the order of the bags here, then in each bag's own order.
    #[arg(required = true, num_args = 2..)]
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Runs `lockstep bag merge`, printing what it wrote to `out`.
pub(super) fn run(args: &MergeArgs, out: &mut dyn Write, progress: &mut dyn Write) -> Result<()> {
    let n = merge(&args.output, &args.inputs, args.out.writer_options()?, progress)?;
    writeln!(
        out,
        "merged {n} messages from {} bags into {}",
        args.inputs.len(),
        args.output.display()
    )?;
    Ok(())
}

/// Merges `inputs` by log time into the new bag `output` and returns the number of messages written.
/// Equal log times keep the order of `inputs`, then each input's own order (its files, then the position
/// in the file). Topics of one name become one topic; one name with two types is refused before the output
/// is created. Attachments and metadata records of every input are copied, one identical to an earlier
/// input's only once; metadata.yaml's `custom_data` is joined (the first input's value for a shared key).
pub fn merge(
    output: &Path,
    inputs: &[PathBuf],
    opts: WriterOptions,
    progress: &mut dyn Write,
) -> Result<u64> {
    if inputs.len() < 2 {
        bail!("merge needs two or more input bags, got {}", inputs.len());
    }
    let readers = inputs
        .iter()
        .map(|p| BagReader::open(p).context("cannot open input bag"))
        .collect::<Result<Vec<_>>>()?;
    let topics = unified_topics(&readers)?;
    let paths: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    check_output(output, &paths)?;
    let mut writer = BagWriter::create(output, opts).context("cannot create output bag")?;
    let mut defs = installed_definitions();
    let mut ids = HashMap::new();
    for topic in &topics {
        ids.insert(
            topic.metadata.name.clone(),
            add_topic(&mut writer, topic, &mut defs)?,
        );
    }
    let total = readers.iter().map(BagReader::message_count).sum();
    let mut copied = Progress::new("merged", total, progress);
    let mut merged = Merged::new(&readers)?;
    while let Some((input, message)) = merged.next_message()? {
        write_message(&mut writer, &ids, &inputs[input], &message)?;
        copied.one();
    }
    copy_unique_extras(&readers, &mut writer)?;
    let all: Vec<&BagReader> = readers.iter().collect();
    copy_custom_data(&all, &mut writer);
    writer.finish().context("cannot finish output bag")?;
    Ok(copied.count)
}

/// One topic per name over all `readers`, in the order they first appear: the first input's declaration
/// (QoS, type hash), with the first usable message definition any input holds for it. A name with two types
/// is an error naming the topic, both types and both bags.
fn unified_topics(readers: &[BagReader]) -> Result<Vec<BagTopic>> {
    let mut topics: Vec<BagTopic> = Vec::new();
    let mut first: HashMap<String, (usize, usize)> = HashMap::new();
    for (input, reader) in readers.iter().enumerate() {
        for topic in reader.topics() {
            let name = &topic.metadata.name;
            let Some(&(at, from)) = first.get(name) else {
                first.insert(name.clone(), (topics.len(), input));
                topics.push(topic.clone());
                continue;
            };
            let known = &mut topics[at];
            if known.metadata.type_name != topic.metadata.type_name {
                bail!(
                    "topic {name} has type {} in {} but type {} in {}: a merged topic has one type",
                    known.metadata.type_name,
                    readers[from].path().display(),
                    topic.metadata.type_name,
                    reader.path().display()
                );
            }
            let has_usable = known.definition.as_ref().is_some_and(usable);
            if !has_usable && topic.definition.as_ref().is_some_and(usable) {
                known.definition.clone_from(&topic.definition);
            }
        }
    }
    Ok(topics)
}

/// The messages of several bags in one log-time order: a heap of (log time, input) over one pending message
/// per input.
struct Merged<'a> {
    iters: Vec<MessageIter<'a>>,
    pending: Vec<Option<BagMessage>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
}

impl<'a> Merged<'a> {
    fn new(readers: &'a [BagReader]) -> Result<Self> {
        let mut merged = Merged {
            iters: readers.iter().map(BagReader::messages).collect(),
            pending: readers.iter().map(|_| None).collect(),
            heap: BinaryHeap::with_capacity(readers.len()),
        };
        for input in 0..readers.len() {
            merged.refill(input)?;
        }
        Ok(merged)
    }

    /// Reads the next message of `input` into its slot, if it has one.
    fn refill(&mut self, input: usize) -> Result<()> {
        match self.iters[input].next() {
            Some(Ok(message)) => {
                self.heap.push(Reverse((message.log_time_ns, input)));
                self.pending[input] = Some(message);
                Ok(())
            }
            Some(Err(e)) => Err(e).context("cannot read a message"),
            None => Ok(()),
        }
    }

    /// The earliest pending message (the lowest input on equal times) and its input's index.
    fn next_message(&mut self) -> Result<Option<(usize, BagMessage)>> {
        let Some(Reverse((_, input))) = self.heap.pop() else {
            return Ok(None);
        };
        let Some(message) = self.pending[input].take() else {
            bail!("internal error: merge input {input} has no pending message");
        };
        self.refill(input)?;
        Ok(Some((input, message)))
    }
}

/// What identifies an attachment or a metadata record for deduplication: its whole content.
#[derive(PartialEq, Eq, Hash)]
enum ExtraKey {
    Attachment(String, String, u64, u64, Vec<u8>),
    Record(String, Vec<(String, String)>),
}

impl ExtraKey {
    fn of(extra: &Extra<'_>) -> Self {
        match extra {
            Extra::Attachment(a) => ExtraKey::Attachment(
                a.name.clone(),
                a.media_type.clone(),
                a.log_time_ns,
                a.create_time_ns,
                a.data.clone(),
            ),
            Extra::Record(r) => ExtraKey::Record(
                r.name.clone(),
                r.entries.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            ),
        }
    }
}

/// Copies the attachments and metadata records of every input, skipping one identical to a record of an
/// earlier input (an input's own repeated records are kept as they are, as `convert` keeps them).
fn copy_unique_extras(readers: &[BagReader], writer: &mut BagWriter) -> Result<()> {
    let mut earlier: HashSet<ExtraKey> = HashSet::new();
    for reader in readers {
        let mut this_input = HashSet::new();
        copy_extra_records(reader, writer, &mut |extra| {
            let key = ExtraKey::of(extra);
            let new = !earlier.contains(&key);
            this_input.insert(key);
            new
        })?;
        earlier.extend(this_input);
    }
    Ok(())
}
