//! What a replay reports: `report.json` (per channel counts, exact ratio, first difference and numeric
//! differences; per module processing times and input alignment; skipped frames; wiring drift; timing of
//! the run) and the few lines a person reads at the end.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::lockstep::{Difference, Evaluation, ReplayOutcome, WiringDrift};

/// The plot of differences over time, beside `report.json` in the output directory.
pub const PLOT_FILE: &str = "differences.png";

fn pairs(list: &[(String, String)]) -> Vec<Value> {
    list.iter()
        .map(|(m, c)| json!({"module": m, "channel": c}))
        .collect()
}

fn difference_json(d: &Difference) -> Value {
    json!({"max_abs": d.max_abs, "mean_abs": d.mean_abs, "compared": d.compared})
}

/// The evaluation as JSON: per channel counts, exact ratio, first difference and numeric differences; per
/// module processing times and input alignment; skipped frames; wiring drift (`drift`: a replay over DDS);
/// `fed`: the channels published from the recording; timing of the run.
pub fn report_json(
    outcome: &ReplayOutcome,
    evaluation: &Evaluation,
    drift: Option<&WiringDrift>,
    fed: &[String],
    wall: Duration,
) -> Value {
    let skipped: Vec<Value> = outcome
        .skipped
        .iter()
        .map(|s| {
            json!({
                "module": s.module, "channel": s.channel, "sequence_num": s.sequence_num, "reason": s.reason,
            })
        })
        .collect();
    let frames = outcome.outputs.len().max(1) as f64;
    let module_ns: f64 = outcome.outputs.iter().map(|o| f64::from(o.process_time_ns)).sum();
    json!({
        "mode": if drift.is_some() { "dds" } else { "in-process" },
        "frames_selected": outcome.selected,
        "frames_replayed": outcome.outputs.len(),
        "frames_skipped": skipped,
        "modules_not_live": outcome.not_live,
        "channels_published_from_recording": fed,
        "backup_inputs": outcome.backup_inputs,
        "channels": channels_json(evaluation, outcome),
        "unmodified_nodes": {
            "events_granted": outcome.events_granted,
            "extra_outputs": pairs_json(&outcome.extra_outputs),
            "missing_outputs": pairs_json(&outcome.missing_outputs),
        },
        "modules": modules_json(evaluation),
        "wiring": drift.map(|d| wiring_json(outcome, d)),
        "plot": PLOT_FILE,
        "timing": {
            "wall_s": wall.as_secs_f64(),
            "frames_per_s": outcome.outputs.len() as f64 / wall.as_secs_f64().max(1e-9),
            "overhead_per_frame_ms": (wall.as_secs_f64() * 1e9 - module_ns).max(0.0) / frames / 1e6,
        },
    })
}

/// `[{"module", "channel", "count"}]` of per (module, channel) counts.
fn pairs_json(counts: &std::collections::BTreeMap<(String, String), u64>) -> Vec<Value> {
    counts
        .iter()
        .map(|((module, channel), n)| json!({"module": module, "channel": channel, "count": n}))
        .collect()
}

/// Per channel: counts, exact ratio, first difference (with, for an unmodified node, the recorded event
/// whose callback published it), numeric differences overall and per field.
fn channels_json(evaluation: &Evaluation, outcome: &ReplayOutcome) -> Map<String, Value> {
    let events = outcome.first_differences();
    evaluation
        .channels
        .iter()
        .map(|(channel, e)| {
            let event = events.get(channel).and_then(|o| o.event.clone());
            let first = e
                .first_difference
                .as_ref()
                .map(|(module, seq, epoch, log_time_ns)| {
                    json!({"module": module, "sequence_num": seq, "epoch": epoch, "log_time_ns": log_time_ns,
                       "event": event})
                });
            let fields: Map<String, Value> = e
                .fields
                .iter()
                .map(|(k, d)| (k.clone(), difference_json(d)))
                .collect();
            let entry = json!({
                "recorded": e.recorded,
                "simulated": e.simulated,
                "exact": e.exact,
                "exact_ratio": e.exact_ratio(),
                "first_difference": first,
                "numeric": difference_json(&e.numeric),
                "fields": fields,
                "undecodable": e.undecodable,
            });
            (channel.clone(), entry)
        })
        .collect()
}

/// Per module: frames, steps, input alignment, recorded and replayed processing time.
fn modules_json(evaluation: &Evaluation) -> Map<String, Value> {
    evaluation
        .modules
        .iter()
        .map(|(name, m)| {
            let entry = json!({
                "frames": m.frames,
                "steps": m.steps,
                "inputs_as_recorded": m.inputs_as_recorded,
                "recorded_process_time_ns": m.recorded_process_time_ns,
                "simulated_process_time_ns": m.simulated_process_time_ns,
            });
            (name.clone(), entry)
        })
        .collect()
}

/// The wiring drift of a replay over DDS, with the inputs served that the recording did not name.
fn wiring_json(outcome: &ReplayOutcome, d: &WiringDrift) -> Value {
    let served: Vec<Value> = outcome
        .added_inputs
        .iter()
        .map(|((m, c), n)| json!({"module": m, "channel": c, "frames": n}))
        .collect();
    json!({
        "inputs_served": served,
        "new_modules": outcome.new_module_steps,
        "new_inputs": pairs(&d.new_inputs),
        "missing_inputs": pairs(&d.missing_inputs),
        "new_outputs": pairs(&d.new_outputs),
        "missing_outputs": pairs(&d.missing_outputs),
    })
}

/// A few lines a person reads at the end of a replay.
pub fn summary(
    bag: &Path,
    output: &Path,
    outcome: &ReplayOutcome,
    evaluation: &Evaluation,
    drift: Option<&WiringDrift>,
    wall: Duration,
) -> String {
    let mut out = format!(
        "replayed {} of {} frames of {} in lock-step ({} skipped, {}) in {:.2} s into {}\n",
        outcome.outputs.len(),
        outcome.selected,
        bag.display(),
        outcome.skipped.len(),
        if drift.is_some() {
            "live modules over DDS"
        } else {
            "in-process"
        },
        wall.as_secs_f64(),
        output.display()
    );
    summarize_evaluation(&mut out, evaluation, outcome);
    summarize_inputs(&mut out, outcome);
    if let Some(d) = drift {
        summarize_drift(&mut out, d);
    }
    out.push_str(&format!(
        "  report: {}, plot: {}\n",
        output.join("report.json").display(),
        output.join(PLOT_FILE).display()
    ));
    out
}

/// One line per channel (equal outputs, first difference) and per module (frames, processing time).
fn summarize_evaluation(out: &mut String, evaluation: &Evaluation, outcome: &ReplayOutcome) {
    let events = outcome.first_differences();
    for (channel, e) in &evaluation.channels {
        out.push_str(&format!(
            "  {channel}: {}/{} equal to the recording ({:.1} %)",
            e.exact,
            e.simulated,
            100.0 * e.exact_ratio()
        ));
        if let Some((module, seq, _, _)) = &e.first_difference {
            out.push_str(&format!(
                ", first difference: {module} #{seq}, max |diff| {:.4}",
                e.numeric.max_abs
            ));
            if let Some(event) = events.get(channel).and_then(|o| o.event.as_ref()) {
                out.push_str(&format!(" (published for {event})"));
            }
        }
        out.push('\n');
    }
    for (name, m) in &evaluation.modules {
        out.push_str(&format!(
            "  {name}: {} frames, {} with exactly the recorded inputs; processing {:.3} ms recorded, {:.3} ms now\n",
            m.frames,
            m.inputs_as_recorded,
            m.recorded_process_time_ns / 1e6,
            m.simulated_process_time_ns / 1e6
        ));
    }
}

/// Where inputs came from other than as recorded: modules not live, backup inputs, inputs added, new modules.
fn summarize_inputs(out: &mut String, outcome: &ReplayOutcome) {
    if !outcome.not_live.is_empty() {
        out.push_str(&format!(
            "  recorded outputs used for: {}\n",
            outcome.not_live.join(", ")
        ));
    }
    for (channel, n) in &outcome.backup_inputs {
        out.push_str(&format!(
            "  backup inputs: {n} frames got the recorded {channel} (its upstream frame was not simulated)\n"
        ));
    }
    for ((module, channel), n) in &outcome.added_inputs {
        out.push_str(&format!(
            "  {module} reads {channel}, not read when recorded: served the latest message to {n} frames\n"
        ));
    }
    for (module, n) in &outcome.new_module_steps {
        out.push_str(&format!("  {module} (not in the recording): {n} steps\n"));
    }
    for ((module, channel), n) in &outcome.extra_outputs {
        out.push_str(&format!(
            "  {module} published {n} more output(s) on {channel} than recorded (kept out of the output bag)\n"
        ));
    }
    for ((module, channel), n) in &outcome.missing_outputs {
        out.push_str(&format!(
            "  {module} did not publish {n} recorded output(s) on {channel}\n"
        ));
    }
}

/// The live wiring's differences from the recorded one.
fn summarize_drift(out: &mut String, d: &WiringDrift) {
    for (what, list) in [("reads", &d.new_inputs), ("writes", &d.new_outputs)] {
        for (m, c) in list {
            out.push_str(&format!("  wiring: {m} now {what} {c} (not in the recording)\n"));
        }
    }
    for (what, list) in [("reads", &d.missing_inputs), ("writes", &d.missing_outputs)] {
        for (m, c) in list {
            out.push_str(&format!("  wiring: {m} no longer {what} {c}\n"));
        }
    }
}
