//! One case's outputs against its baseline, frame by frame: a frame of the new run is paired with the
//! baseline's frame of the same module output (channel, epoch, sequence number), and passes when its message
//! is byte-identical or, where the suite gives tolerances, when every field is within them.

use std::collections::{BTreeMap, BTreeSet};

use lockstep_bag::cdr::{Leaf, Schema};
use lockstep_replay::lockstep::{Frame, Recording};

pub use lockstep_replay::lockstep::fold_indices;

use crate::suite::{ChannelExpect, Tolerance};

/// Where a channel first differs (as the case report holds it).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FirstDifference {
    /// The module that computed the frame.
    pub module: String,
    /// The frame's sequence number on the channel.
    pub sequence_num: u32,
    /// The producing process's epoch.
    pub epoch: u64,
    /// The log time of the frame's data message in the new run, nanoseconds (as recorded: the output bag
    /// keeps each output at the log time of its recorded data message).
    pub log_time_ns: u64,
    /// The first field out of tolerance (`twist.linear.x`), when the messages could be decoded.
    pub field: Option<String>,
    /// Its baseline value.
    pub baseline: Option<String>,
    /// Its new value.
    pub new: Option<String>,
}

impl std::fmt::Display for FirstDifference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "frame #{} of {}", self.sequence_num, self.module)?;
        match (&self.field, &self.baseline, &self.new) {
            (Some(field), Some(b), Some(n)) => write!(f, ", field {field}: {b} in the baseline, {n} now"),
            (Some(field), _, _) => write!(f, ", field {field}"),
            _ => write!(f, " (bytes differ)"),
        }
    }
}

/// Largest absolute difference of one field (array indices folded) and how many values were out of
/// tolerance.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FieldDifference {
    /// Largest |new - baseline| (infinite where a value is missing on one side).
    pub max_abs: f64,
    /// Values out of tolerance.
    pub out_of_tolerance: u64,
}

/// One channel of a case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChannelResult {
    /// Frames of the new run paired with a baseline frame.
    pub compared: u64,
    /// Of those, byte-identical.
    pub identical: u64,
    /// Of those, out of the channel's expectation.
    pub differing: u64,
    /// Baseline frames the new run did not produce.
    pub baseline_only: u64,
    /// Frames of the new run the baseline does not have.
    pub new_only: u64,
    /// Frames whose messages could not be decoded where a tolerance needed their fields.
    pub undecodable: u64,
    /// The first differing frame.
    pub first_difference: Option<FirstDifference>,
    /// Per field, where any value differs.
    pub fields: BTreeMap<String, FieldDifference>,
    /// (log time ns, largest |difference| of the frame) for every compared frame, in log-time order.
    pub over_time: Vec<(u64, f64)>,
    /// The fraction allowed to differ.
    pub max_differing_fraction: f64,
}

impl ChannelResult {
    /// Differing / compared (0 when nothing was compared).
    pub fn differing_fraction(&self) -> f64 {
        if self.compared == 0 {
            0.0
        } else {
            self.differing as f64 / self.compared as f64
        }
    }

    /// Whether the channel meets its expectation.
    pub fn passed(&self) -> bool {
        self.compared > 0 && self.differing_fraction() <= self.max_differing_fraction
    }

    /// Why it failed, in one line (`None` when it passed).
    pub fn failure(&self, channel: &str) -> Option<String> {
        if self.passed() {
            return None;
        }
        if self.compared == 0 {
            return Some(format!(
                "{channel}: no output could be paired with the baseline ({} new, {} in the baseline)",
                self.new_only, self.baseline_only
            ));
        }
        let first = self
            .first_difference
            .as_ref()
            .map_or_else(String::new, |d| format!(": first at {d}"));
        Some(format!(
            "{channel}: {} of {} outputs differ (allowed {:.1} %){first}",
            self.differing,
            self.compared,
            self.max_differing_fraction * 100.0
        ))
    }
}

/// Per channel, every channel the new run has outputs on.
pub type Comparison = BTreeMap<String, ChannelResult>;

type FrameKey<'a> = (&'a str, u64, u32);

fn key(frame: &Frame) -> FrameKey<'_> {
    (
        &frame.header.channel_name,
        frame.header.epoch,
        frame.header.sequence_num,
    )
}

/// Compares every frame of `new` with the frame of `baseline` for the same output.
pub fn compare(
    baseline: &Recording,
    new: &Recording,
    expect: &BTreeMap<String, ChannelExpect>,
) -> Comparison {
    let exact = ChannelExpect::default();
    let baseline_frames: BTreeMap<FrameKey<'_>, &Frame> =
        baseline.frames.iter().map(|f| (key(f), f)).collect();
    let mut paired: BTreeSet<FrameKey<'_>> = BTreeSet::new();
    let mut out: Comparison = BTreeMap::new();
    for frame in &new.frames {
        let channel = frame.header.channel_name.as_str();
        let expectation = expect.get(channel).unwrap_or(&exact);
        let result = out.entry(channel.to_owned()).or_insert_with(|| ChannelResult {
            max_differing_fraction: expectation.max_differing_fraction,
            ..ChannelResult::default()
        });
        let Some(base) = baseline_frames.get(&key(frame)) else {
            result.new_only += 1;
            continue;
        };
        paired.insert(key(base));
        result.compared += 1;
        // The data message's log time, what the bag tools show for it (its header is logged after it).
        let t = new.data_log_time_ns(frame);
        if base.header.payload_digest == frame.header.payload_digest {
            result.identical += 1;
            result.over_time.push((t, 0.0));
            continue;
        }
        let verdict = judge(baseline, new, base, frame, expectation);
        let largest = verdict.differences.iter().map(|d| d.1).fold(0.0, f64::max);
        result.over_time.push((t, largest));
        for (field, diff, within) in &verdict.differences {
            let entry = result.fields.entry(fold_indices(field)).or_default();
            entry.max_abs = entry.max_abs.max(*diff);
            entry.out_of_tolerance += u64::from(!within);
        }
        result.undecodable += u64::from(verdict.undecodable);
        if verdict.differs {
            result.differing += 1;
            if result.first_difference.is_none() {
                result.first_difference = Some(FirstDifference {
                    module: frame.header.module_name.clone(),
                    sequence_num: frame.header.sequence_num,
                    epoch: frame.header.epoch,
                    log_time_ns: t,
                    field: verdict.first.as_ref().map(|f| f.0.clone()),
                    baseline: verdict.first.as_ref().map(|f| f.1.clone()),
                    new: verdict.first.as_ref().map(|f| f.2.clone()),
                });
            }
        }
    }
    for frame in &baseline.frames {
        if let Some(result) = out.get_mut(frame.header.channel_name.as_str()) {
            if !paired.contains(&key(frame)) {
                result.baseline_only += 1;
            }
        }
    }
    for result in out.values_mut() {
        result.over_time.sort_by_key(|p| p.0);
    }
    out
}

/// The verdict on one pair of messages whose bytes differ.
#[derive(Debug, Default)]
struct Verdict {
    /// Out of the expectation.
    differs: bool,
    /// Could not decode (then it differs).
    undecodable: bool,
    /// (field path, |difference|, within tolerance) of every leaf that is not equal.
    differences: Vec<(String, f64, bool)>,
    /// The first leaf out of tolerance: (path, baseline, new).
    first: Option<(String, String, String)>,
}

impl Verdict {
    /// A leaf at `path` that is not equal: `diff` apart, `within` its tolerance or not; the first one
    /// out of tolerance is kept with both values (`bv` in the baseline, `nv` in the new output).
    fn note(&mut self, path: &str, diff: f64, within: bool, bv: String, nv: String) {
        self.differences.push((path.to_owned(), diff, within));
        if !within {
            self.differs = true;
            if self.first.is_none() {
                self.first = Some((path.to_owned(), bv, nv));
            }
        }
    }
}

/// The tolerance for the leaf at `path`: its field's, else the channel's default, else `exact`.
fn tolerance_for<'t>(expect: &'t ChannelExpect, path: &str, exact: &'t Tolerance) -> &'t Tolerance {
    if expect.is_exact() {
        exact
    } else {
        expect
            .fields
            .get(&fold_indices(path))
            .or(expect.default.as_ref())
            .unwrap_or(exact)
    }
}

fn decoded(recording: &Recording, frame: &Frame) -> Option<lockstep_bag::cdr::Value> {
    let channel = recording.channels.get(&frame.header.channel_name)?;
    let schema: &Schema = channel.schema.as_ref()?;
    let data = recording
        .payload(&frame.header.channel_name, frame.header.payload_digest)
        .ok()?;
    schema.decode(&data).ok()
}

fn judge(
    baseline: &Recording,
    new: &Recording,
    base: &Frame,
    frame: &Frame,
    expect: &ChannelExpect,
) -> Verdict {
    let (Some(b), Some(n)) = (decoded(baseline, base), decoded(new, frame)) else {
        return Verdict {
            differs: true,
            undecodable: true,
            ..Verdict::default()
        };
    };
    let exact = Tolerance::default();
    let (b, n) = (b.leaves(), n.leaves());
    let mut verdict = Verdict::default();
    let new_by_path: BTreeMap<&str, &Leaf<'_>> = n.iter().map(|(p, l)| (p.as_str(), l)).collect();
    let base_paths: std::collections::BTreeSet<&str> = b.iter().map(|(p, _)| p.as_str()).collect();
    for (path, leaf) in &b {
        let tolerance = tolerance_for(expect, path, &exact);
        match (leaf, new_by_path.get(path.as_str())) {
            (Leaf::Number(x), Some(Leaf::Number(y))) => {
                if x != y && !(x.is_nan() && y.is_nan()) {
                    let diff = if x.is_nan() || y.is_nan() {
                        f64::INFINITY
                    } else {
                        (y - x).abs()
                    };
                    verdict.note(path, diff, tolerance.admits(*x, *y), x.to_string(), y.to_string());
                }
            }
            (Leaf::Text(x), Some(Leaf::Text(y))) if x == y => {}
            (_, found) => {
                let shown = found.map_or_else(|| "(missing)".to_owned(), |l| show(l));
                verdict.note(path, f64::INFINITY, false, show(leaf), shown);
            }
        }
    }
    for (path, leaf) in &n {
        if !base_paths.contains(path.as_str()) {
            verdict.note(path, f64::INFINITY, false, "(missing)".into(), show(leaf));
        }
    }
    if verdict.differences.is_empty() {
        // Bytes differ but no field does (padding, or a field the decoder does not show): as exact as it gets.
        verdict.differs = expect.is_exact();
    }
    verdict
}

fn show(leaf: &Leaf<'_>) -> String {
    match leaf {
        Leaf::Number(x) => x.to_string(),
        Leaf::Text(s) => format!("{s:?}"),
    }
}
