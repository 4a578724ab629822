//! `lockstep replay --repeat N`: the same recording replayed N times through the same live modules, and every
//! module whose outputs differ between runs named, with its first differing output. A module that computes
//! only from what it is given gives the same outputs every time; one that reads the wall clock, draws random
//! numbers or races threads does not.
//!
//! The live modules keep running between runs: a module whose state carries over from the end of one run
//! into the start of the next shows as differing too (start it again, or use a suite, whose cases start
//! their modules fresh).

use std::collections::BTreeMap;

use lockstep_replay::lockstep::ReplayOutcome;

/// The first output of a module that differs between the first run and a later one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDifference {
    pub module: String,
    pub channel: String,
    pub sequence_num: u32,
    /// The later run (from 2).
    pub run: usize,
    /// What differs.
    pub reason: String,
}

/// Per module, the first output (in replay order) of `other` (run number `run`) that differs from `first`:
/// a different payload, an output only one of the runs has.
pub fn compare_runs(first: &ReplayOutcome, other: &ReplayOutcome, run: usize) -> Vec<RunDifference> {
    let id = |h: &lockstep_trace_ros::lockstep_trace::TraceHeader| {
        (h.channel_name.clone(), h.epoch, h.sequence_num)
    };
    let before: BTreeMap<_, u64> = (first.outputs.iter())
        .map(|o| (id(&o.header), o.header.payload_digest))
        .collect();
    let after: BTreeMap<_, u64> = (other.outputs.iter())
        .map(|o| (id(&o.header), o.header.payload_digest))
        .collect();
    let mut found: BTreeMap<String, RunDifference> = BTreeMap::new();
    let mut note = |module: &str, channel: &str, sequence_num: u32, reason: String| {
        found.entry(module.to_owned()).or_insert_with(|| RunDifference {
            module: module.to_owned(),
            channel: channel.to_owned(),
            sequence_num,
            run,
            reason,
        });
    };
    for o in &other.outputs {
        let h = &o.header;
        match before.get(&id(h)) {
            Some(&d) if d == h.payload_digest => {}
            Some(&d) => note(
                &h.module_name,
                &h.channel_name,
                h.sequence_num,
                format!(
                    "payload digest {:016x} in run 1, {:016x} in run {run}",
                    d, h.payload_digest
                ),
            ),
            None => note(
                &h.module_name,
                &h.channel_name,
                h.sequence_num,
                format!("only run {run} has it"),
            ),
        }
    }
    for o in first
        .outputs
        .iter()
        .filter(|o| !after.contains_key(&id(&o.header)))
    {
        let h = &o.header;
        note(
            &h.module_name,
            &h.channel_name,
            h.sequence_num,
            format!("run {run} does not have it"),
        );
    }
    found.into_values().collect()
}

/// The `repeat` section of `report.json`.
pub fn to_json(runs: usize, differences: &[RunDifference]) -> serde_json::Value {
    serde_json::json!({
        "runs": runs,
        "deterministic": differences.is_empty(),
        "nondeterministic": differences.iter().map(|d| serde_json::json!({
            "module": d.module,
            "channel": d.channel,
            "sequence_num": d.sequence_num,
            "run": d.run,
            "reason": d.reason,
        })).collect::<Vec<_>>(),
    })
}
