//! The evaluation of a replay (the comparison of simulated with recorded outputs): per channel the
//! counts, the exact-match ratio, the first difference and, decoded through the bag's own message
//! definitions, the numeric differences field by field; per module the recorded and simulated processing
//! times and how many frames consumed exactly the recorded inputs.

use std::collections::BTreeMap;

use super::recording::Recording;
use super::types::{ReplayOutcome, Simulated};

/// Max and mean absolute difference of one numeric field (or of all of them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Difference {
    /// Largest absolute difference.
    pub max_abs: f64,
    /// Mean absolute difference over every value compared.
    pub mean_abs: f64,
    /// Values compared.
    pub compared: u64,
}

#[derive(Debug, Default)]
struct Accumulator {
    max_abs: f64,
    sum_abs: f64,
    compared: u64,
}

impl Accumulator {
    fn add(&mut self, diff: f64) {
        self.max_abs = self.max_abs.max(diff);
        self.sum_abs += diff;
        self.compared += 1;
    }

    fn done(&self) -> Difference {
        Difference {
            max_abs: self.max_abs,
            mean_abs: if self.compared > 0 {
                self.sum_abs / self.compared as f64
            } else {
                0.0
            },
            compared: self.compared,
        }
    }
}

/// The evaluation of one output channel.
#[derive(Debug, Clone, Default)]
pub struct ChannelEvaluation {
    /// Messages recorded on it.
    pub recorded: u64,
    /// Outputs simulated.
    pub simulated: u64,
    /// Outputs equal to the recording (same payload digest).
    pub exact: u64,
    /// The first simulated output that differs: (module, sequence number, epoch, log time ns).
    pub first_difference: Option<(String, u32, u64, u64)>,
    /// Over every numeric field of every output compared.
    pub numeric: Difference,
    /// Per numeric field (array indices folded: `poses[].position.x`), sorted by path.
    pub fields: BTreeMap<String, Difference>,
    /// Outputs whose recorded or simulated bytes could not be decoded (no definition, or bad data).
    pub undecodable: u64,
    /// (log time ns, largest absolute difference of the output) for every output compared, in replay
    /// order: the curve of the plot.
    pub over_time: Vec<(u64, f64)>,
}

impl ChannelEvaluation {
    /// Exact outputs / simulated outputs (0 when none).
    pub fn exact_ratio(&self) -> f64 {
        if self.simulated > 0 {
            self.exact as f64 / self.simulated as f64
        } else {
            0.0
        }
    }
}

/// The evaluation of one live module.
#[derive(Debug, Clone, Default)]
pub struct ModuleEvaluation {
    /// Frames it computed.
    pub frames: u64,
    /// Steps granted: computations (one with outputs on several channels is one step).
    pub steps: u64,
    /// Frames whose inputs were all exactly the recorded ones.
    pub inputs_as_recorded: u64,
    /// Mean recorded processing time, nanoseconds.
    pub recorded_process_time_ns: f64,
    /// Mean processing time in this replay, nanoseconds.
    pub simulated_process_time_ns: f64,
}

/// The evaluation of a replay.
#[derive(Debug, Clone, Default)]
pub struct Evaluation {
    /// Per output channel.
    pub channels: BTreeMap<String, ChannelEvaluation>,
    /// Per live module.
    pub modules: BTreeMap<String, ModuleEvaluation>,
}

/// `poses[3].position.x` -> `poses[].position.x`: one name for a field of every element of an array.
pub fn fold_indices(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

/// Compares every simulated output of `outcome` with its recorded counterpart.
pub fn evaluate(recording: &Recording, outcome: &ReplayOutcome) -> Evaluation {
    let mut channels: BTreeMap<String, ChannelEvaluation> = BTreeMap::new();
    let mut fields: BTreeMap<String, BTreeMap<String, Accumulator>> = BTreeMap::new();
    let mut totals: BTreeMap<String, Accumulator> = BTreeMap::new();
    let mut modules: BTreeMap<String, (ModuleEvaluation, f64, f64)> = BTreeMap::new();
    let recorded_headers: BTreeMap<(String, u64, u32), &lockstep_trace::TraceHeader> =
        recording.frames.iter().map(|f| (f.id(), &f.header)).collect();
    for output in &outcome.outputs {
        let h = &output.header;
        let entry = channels.entry(h.channel_name.clone()).or_default();
        entry.simulated += 1;
        if output.exact {
            entry.exact += 1;
        } else if entry.first_difference.is_none() {
            entry.first_difference = Some((
                h.module_name.clone(),
                h.sequence_num,
                h.epoch,
                output.data_log_time_ns,
            ));
        }
        let recorded = recorded_headers.get(&(h.channel_name.clone(), h.epoch, h.sequence_num));
        match recorded.and_then(|r| numeric_diff(recording, output, r.payload_digest)) {
            Some(diffs) => {
                let by_field = fields.entry(h.channel_name.clone()).or_default();
                let total = totals.entry(h.channel_name.clone()).or_default();
                let mut largest = 0.0_f64;
                for (path, diff) in diffs {
                    by_field.entry(fold_indices(&path)).or_default().add(diff);
                    total.add(diff);
                    largest = largest.max(diff);
                }
                entry.over_time.push((output.data_log_time_ns, largest));
            }
            None => entry.undecodable += 1,
        }
        let m = modules.entry(h.module_name.clone()).or_default();
        m.0.frames += 1;
        m.0.steps += u64::from(output.first_of_step);
        m.0.inputs_as_recorded += u64::from(output.inputs_as_recorded);
        m.1 += f64::from(recorded.map_or(h.process_time_ns, |r| r.process_time_ns));
        m.2 += f64::from(output.process_time_ns);
    }
    for (channel, entry) in &mut channels {
        entry.recorded = recording.channels.get(channel).map_or(0, |c| c.count);
        entry.numeric = totals.get(channel).map(Accumulator::done).unwrap_or_default();
        entry.fields = fields
            .get(channel)
            .map(|f| f.iter().map(|(k, a)| (k.clone(), a.done())).collect())
            .unwrap_or_default();
    }
    let modules = modules
        .into_iter()
        .map(|(name, (mut m, recorded_sum, simulated_sum))| {
            let n = m.frames.max(1) as f64;
            m.recorded_process_time_ns = recorded_sum / n;
            m.simulated_process_time_ns = simulated_sum / n;
            (name, m)
        })
        .collect();
    Evaluation { channels, modules }
}

/// Absolute differences of every numeric leaf between `output` and the recorded message with `digest`;
/// `None` if either cannot be decoded or their shapes differ (a leaf missing on one side counts as NaN
/// difference, reported as infinite).
fn numeric_diff(recording: &Recording, output: &Simulated, digest: u64) -> Option<Vec<(String, f64)>> {
    let channel = recording.channels.get(&output.header.channel_name)?;
    let schema = channel.schema.as_ref()?;
    let recorded = recording.payload(&output.header.channel_name, digest).ok()?;
    let before = schema.decode(&recorded).ok()?.numeric_leaves();
    let after = schema.decode(&output.data).ok()?.numeric_leaves();
    let after: BTreeMap<String, f64> = after.into_iter().collect();
    Some(
        before
            .into_iter()
            .map(|(path, a)| {
                let diff = match after.get(&path) {
                    Some(b) if a == *b => 0.0,
                    Some(b) => (a - b).abs(),
                    None => f64::INFINITY,
                };
                (path, if diff.is_nan() { f64::INFINITY } else { diff })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::fold_indices;

    #[test]
    fn array_indices_fold_into_one_field() {
        assert_eq!(fold_indices("poses[3].position.x"), "poses[].position.x");
        assert_eq!(fold_indices("a[1][22].b"), "a[][].b");
        assert_eq!(fold_indices("linear.x"), "linear.x");
    }
}
