//! `lockstep bag filter`: a new bag with some topics and a time range of another, still a Lockstep recording
//! (see [`super::select`] for what is kept whatever the selection).

use super::copy::{
    add_topic, check_output, copy_and_finish, installed_definitions, write_message, OutputArgs, Progress,
};
use super::select::{latched, seconds_arg, whole_name, TopicSelection};
use crate::{BagMessage, BagReader, BagWriter, ReadOptions};
use anyhow::{bail, Context, Result};
use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `lockstep bag filter`. Times are given in seconds and held in nanoseconds.
#[derive(Debug, Clone, clap::Args)]
pub struct FilterArgs {
    /// Input bag directory, or a single MCAP or sqlite3 file.
    pub input: PathBuf,
    /// Output bag directory (must not exist or be empty).
    pub output: PathBuf,
    /// Keep these topics (with --regex: these and the topics it matches). Neither given: every topic.
    #[arg(long, num_args = 1.., value_name = "TOPIC")]
    pub topics: Vec<String>,
    /// Keep the topics this regular expression matches (anywhere in the name).
    #[arg(short = 'e', long, value_name = "RE")]
    pub regex: Option<String>,
    /// Drop the topics this regular expression matches, except those --topics names. Lockstep's own data
    /// (/lockstep/... topics, the <topic>/lockstep_header of a topic kept) only when the expression holds
    /// the word `lockstep` (e.g. `^/lockstep/events/`).
    #[arg(short = 'x', long, value_name = "RE")]
    pub exclude_regex: Option<String>,
    /// Keep the messages logged at or after this time: seconds since the Unix epoch (1700000000.25).
    #[arg(long, value_name = "SEC", value_parser = seconds_arg, conflicts_with = "start_offset")]
    pub start_time: Option<u64>,
    /// Keep the messages logged before this time: seconds since the Unix epoch.
    #[arg(long, value_name = "SEC", value_parser = seconds_arg, conflicts_with = "end_offset")]
    pub end_time: Option<u64>,
    /// Keep the messages logged at or after this many seconds after the bag's first message.
    #[arg(long, value_name = "SEC", value_parser = seconds_arg)]
    pub start_offset: Option<u64>,
    /// Keep the messages logged before this many seconds after the bag's first message.
    #[arg(long, value_name = "SEC", value_parser = seconds_arg)]
    pub end_offset: Option<u64>,
    /// For the topics kept whose whole name this matches (e.g. `/tf_static|/map`), also keep the last
    /// message before the start of the range, at its own log time, as `mcap filter` does: latched state
    /// survives the cut. The module topologies (/lockstep/topology/...) always are.
    #[arg(long, value_name = "RE")]
    pub last_per_channel_topic_regex: Option<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// What a filter copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterReport {
    /// Messages written, those from before the range included.
    pub messages: u64,
    /// Messages from before the range (the last of a latched topic).
    pub latched: u64,
    /// Topics declared in the output.
    pub topics: usize,
    /// Messages of the input.
    pub input_messages: u64,
}

/// Runs `lockstep bag filter`, printing what it kept to `out`.
pub(super) fn run(args: &FilterArgs, out: &mut dyn Write, progress: &mut dyn Write) -> Result<()> {
    let report = filter(args, progress)?;
    writeln!(
        out,
        "kept {} of {} messages ({} from before the start) on {} topics from {} in {}",
        report.messages,
        report.input_messages,
        report.latched,
        report.topics,
        args.input.display(),
        args.output.display()
    )?;
    Ok(())
}

/// Copies the selected topics and time range of `args.input` into the new bag `args.output`, with the last
/// message before the range of each latched topic, every attachment and metadata record and metadata.yaml's
/// `custom_data`. Every option is checked before the output is created.
pub fn filter(args: &FilterArgs, progress: &mut dyn Write) -> Result<FilterReport> {
    let input = &args.input;
    let reader = BagReader::open(input).context("cannot open input bag")?;
    let selection = TopicSelection::new(&args.topics, args.regex.as_deref(), args.exclude_regex.as_deref())?;
    let last_per_channel = (args.last_per_channel_topic_regex.as_deref())
        .map(|p| whole_name("--last-per-channel-topic-regex", p))
        .transpose()?;
    let names: BTreeSet<&str> = reader.topics().iter().map(|t| t.metadata.name.as_str()).collect();
    let kept = selection
        .kept(&names)
        .with_context(|| input.display().to_string())?;
    let (start_ns, end_ns) = time_range(args, &reader)?;
    check_output(&args.output, &[input])?;
    let opts = args.out.writer_options()?;
    let mut writer = BagWriter::create(&args.output, opts).context("cannot create output bag")?;
    let mut defs = installed_definitions();
    let mut ids = HashMap::new();
    for topic in reader.topics().iter().filter(|t| kept.contains(&t.metadata.name)) {
        ids.insert(
            topic.metadata.name.clone(),
            add_topic(&mut writer, topic, &mut defs)?,
        );
    }
    let mut copied = Progress::new("filtered", reader.message_count(), progress);
    let mut latched_count = 0;
    if let Some(start) = start_ns {
        for message in last_before(&reader, latched(&kept, last_per_channel.as_ref()), start)? {
            write_message(&mut writer, &ids, input, &message)?;
            copied.one();
            latched_count += 1;
        }
    }
    let read = ReadOptions {
        topics: (kept.len() < names.len()).then(|| kept.clone()),
        start_ns,
        end_ns,
    };
    copy_and_finish(&reader, writer, &ids, input, read, &mut copied)?;
    Ok(FilterReport {
        messages: copied.count,
        latched: latched_count,
        topics: ids.len(),
        input_messages: reader.message_count(),
    })
}

/// The range of log times kept (ns, start inclusive, end exclusive; `None`: open), offsets counted from the
/// bag's first message. An empty range is an error naming the bag.
fn time_range(args: &FilterArgs, reader: &BagReader) -> Result<(Option<u64>, Option<u64>)> {
    let first = reader.time_range().map_or(0, |(first, _)| first);
    let at = |time: Option<u64>, offset: Option<u64>| time.or(offset.map(|o| first.saturating_add(o)));
    let start = at(args.start_time, args.start_offset);
    let end = at(args.end_time, args.end_offset);
    if let (Some(s), Some(e)) = (start, end) {
        if e <= s {
            bail!(
                "{}: the time range is empty: its end ({}) is not after its start ({}), in ns since the epoch",
                args.input.display(),
                e,
                s
            );
        }
    }
    Ok((start, end))
}

/// The last message before `start_ns` of each of `topics`, in the bag's order (log time, then write
/// order). Holds one message per topic while it reads (the reader skips the chunks without those topics).
fn last_before(reader: &BagReader, topics: BTreeSet<String>, start_ns: u64) -> Result<Vec<BagMessage>> {
    if topics.is_empty() {
        return Ok(Vec::new());
    }
    let read = ReadOptions {
        topics: Some(topics),
        start_ns: None,
        end_ns: Some(start_ns),
    };
    let mut last: HashMap<Arc<str>, (usize, BagMessage)> = HashMap::new();
    for (i, message) in reader.messages_with(read).enumerate() {
        let message = message.context("cannot read a message")?;
        last.insert(message.topic.clone(), (i, message));
    }
    let mut found: Vec<(usize, BagMessage)> = last.into_values().collect();
    found.sort_by_key(|(i, _)| *i);
    Ok(found.into_iter().map(|(_, m)| m).collect())
}
