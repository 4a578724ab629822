//! What a replay is asked to do ([`ReplayOptions`]) and what it did ([`ReplayOutcome`], one [`Simulated`]
//! per output): plain data shared by the planning, the input resolution, the evaluation and the output bag,
//! so none of them needs the module that runs the replay.

use std::collections::{BTreeMap, BTreeSet};

use lockstep_trace::TraceHeader;

/// Which frames to replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FrameSelection {
    /// Every recorded frame of every live module.
    #[default]
    All,
    /// The frames of one module and the frames of live modules they depend on.
    Module(String),
}

/// What a frame gets when the output it names on a live module's channel was not simulated (the upstream
/// frame precedes the recording, or was skipped).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MissingUpstream {
    /// The recorded message, as a backup input (counted per channel).
    #[default]
    Recorded,
    /// Nothing: the frame is skipped, and so are the frames that depend on it.
    Skip,
    /// The replay stops with an error naming the frame.
    Error,
}

/// A live module the recording does not have: stepped once per arrival of its trigger input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewModule {
    /// Its name.
    pub name: String,
    /// The channel whose every message (recorded, or simulated where a live module produces it) triggers a
    /// step.
    pub trigger: String,
    /// The channels it writes: each step is one computation with one output per channel.
    pub writes: Vec<String>,
    /// The ROS type of each channel it writes (for the output bag; the recording does not have them).
    pub types: BTreeMap<String, String>,
}

/// Options of a replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Which frames.
    pub frames: FrameSelection,
    /// A frame that cannot be replayed is an error instead of skipped.
    pub strict: bool,
    /// What a frame gets when an upstream output it names was not simulated.
    pub missing_upstream: MissingUpstream,
    /// Per live module, the channels it reads now (a live module's own wiring). A channel it reads that
    /// its recorded frames do not name gets, in each step, the latest message at or before the frame's
    /// start. A module not listed reads what it read when recorded.
    pub live_reads: BTreeMap<String, BTreeSet<String>>,
    /// Live modules absent from the recording (what they read is in `live_reads`).
    pub new_modules: Vec<NewModule>,
}

/// One simulated output.
#[derive(Debug, Clone)]
pub struct Simulated {
    /// Its header: the recorded one with the simulated payload digest (and simulated input digests).
    pub header: TraceHeader,
    /// Its serialized message.
    pub data: Vec<u8>,
    /// Log time of the recorded header.
    pub header_log_time_ns: u64,
    /// Log time of the recorded data message (the header's when the data was not recorded).
    pub data_log_time_ns: u64,
    /// Whether it equals the recorded output (same payload digest).
    pub exact: bool,
    /// Whether every input it was computed from equals the recorded input (digest for digest); false when
    /// an upstream module's simulated output differs from its recording.
    pub inputs_as_recorded: bool,
    /// How long the module computed it in this replay, nanoseconds (the header keeps the recorded time).
    pub process_time_ns: u32,
    /// Output of a live module the recording does not have (nothing recorded to compare with).
    pub new_module: bool,
    /// The first output of its step (a computation with several outputs is one step).
    pub first_of_step: bool,
    /// An unmodified node's output: the recorded event whose callback published it ("the take of /raw at
    /// 12.345678901 s", "timer 0 at ...").
    pub event: Option<String>,
}

/// A frame that was not replayed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFrame {
    /// Its module.
    pub module: String,
    /// Its output channel.
    pub channel: String,
    /// Its sequence number (`None`: a recorded output with no header, so no sequence number is known).
    pub sequence_num: Option<u32>,
    /// Why.
    pub reason: String,
}

/// What a replay did.
#[derive(Debug, Clone, Default)]
pub struct ReplayOutcome {
    /// Simulated outputs, in replay order.
    pub outputs: Vec<Simulated>,
    /// Frames selected: the recorded outputs of the replayed modules, with or without a dependency header, so
    /// that every selected frame is either replayed or skipped.
    pub selected: usize,
    /// Frames not replayed.
    pub skipped: Vec<SkippedFrame>,
    /// Modules of the recorded topology with no live module: their recorded outputs were used.
    pub not_live: Vec<String>,
    /// Per channel: frames that got the recorded message as a backup input on it.
    pub backup_inputs: BTreeMap<String, u64>,
    /// Per (module, channel): frames that got the latest message on a channel the module reads now but did
    /// not read when recorded.
    pub added_inputs: BTreeMap<(String, String), u64>,
    /// Per live module absent from the recording: steps granted.
    pub new_module_steps: BTreeMap<String, u64>,
    /// The ROS type of each channel only a new module writes.
    pub new_channel_types: BTreeMap<String, String>,
    /// Per unmodified node: recorded events reproduced (messages taken, timers fired, calls taken).
    pub events_granted: BTreeMap<String, u64>,
    /// Per (unmodified node, channel): outputs its reproduced callbacks published beyond the recorded ones.
    pub extra_outputs: BTreeMap<(String, String), u64>,
    /// Per (unmodified node, channel): recorded outputs its reproduced callback did not publish.
    pub missing_outputs: BTreeMap<(String, String), u64>,
}

impl ReplayOutcome {
    /// Per output channel: (simulated, equal to the recorded output).
    pub fn exact_by_channel(&self) -> BTreeMap<String, (u64, u64)> {
        let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for o in &self.outputs {
            let e = out.entry(o.header.channel_name.clone()).or_default();
            e.0 += 1;
            e.1 += u64::from(o.exact);
        }
        out
    }

    /// The first output (in replay order) of each channel that differs from the recording.
    pub fn first_differences(&self) -> BTreeMap<String, &Simulated> {
        let mut out = BTreeMap::new();
        for o in self.outputs.iter().filter(|o| !o.exact) {
            out.entry(o.header.channel_name.clone()).or_insert(o);
        }
        out
    }
}
