//! A lock-step replay's output folder: `lockstep replay <bag> --output DIR` (or the `lockstep_replay` node,
//! or `replay_system.launch.xml replay:=true output:=DIR`) writes the simulated bag there, `report.json` and
//! `differences.png`.
//!
//! report.json holds, per output channel, how many outputs were recorded and simulated, how many are
//! byte-identical to the recording, the first difference and the numeric differences (overall and per
//! field); per module its frames, how many had exactly the recorded inputs and its processing times; the
//! frames skipped and why; the modules fed from the recording; the wiring changes found over DDS; the run's
//! timing; and `plot`, the PNG of the differences over recording time.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::Result;
use crate::files::{parse, png_image, write_page, REPORT_JSON};
use crate::html::{number, Cell, Page};
use crate::types::{Image, Kind, Missing, Rendered};

/// `report.json` of a lock-step replay.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReplayReport {
    /// `dds` (live modules stepped over DDS) or `in-process`.
    #[serde(default)]
    pub mode: String,
    /// Frames the selection asked for.
    #[serde(default)]
    pub frames_selected: u64,
    /// Frames replayed.
    pub frames_replayed: u64,
    /// Frames left out, and why.
    #[serde(default)]
    pub frames_skipped: Vec<SkippedFrame>,
    /// Modules whose outputs came from the recording (not live).
    #[serde(default)]
    pub modules_not_live: Vec<String>,
    /// Channels the replay published from the recording for live modules to read.
    #[serde(default)]
    pub channels_published_from_recording: Vec<String>,
    /// Output channel -> how its outputs compare with the recording.
    pub channels: BTreeMap<String, ChannelReport>,
    /// Module -> its frames and processing times.
    #[serde(default)]
    pub modules: BTreeMap<String, ModuleReport>,
    /// What the live modules read and write now that they did not when recorded (DDS only).
    #[serde(default)]
    pub wiring: Option<Wiring>,
    /// The differences plot, relative to the folder.
    #[serde(default)]
    pub plot: Option<String>,
    /// How long the replay took.
    #[serde(default)]
    pub timing: Option<Timing>,
}

/// One output channel against the recording.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChannelReport {
    /// Outputs in the recording.
    #[serde(default)]
    pub recorded: u64,
    /// Outputs the replay computed.
    #[serde(default)]
    pub simulated: u64,
    /// Of those, byte-identical to their recorded counterpart.
    #[serde(default)]
    pub exact: u64,
    /// The first output that differs.
    #[serde(default)]
    pub first_difference: Option<FirstDifference>,
    /// Over every numeric field (`null` values: not finite).
    #[serde(default)]
    pub numeric: Option<Difference>,
    /// Field -> its differences.
    #[serde(default)]
    pub fields: BTreeMap<String, Difference>,
    /// Outputs that could not be decoded for the numeric comparison.
    #[serde(default)]
    pub undecodable: u64,
}

/// The first output of a channel that differs from the recording.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FirstDifference {
    /// The module that wrote it.
    pub module: String,
    /// Its sequence number.
    pub sequence_num: u64,
    /// The module's run (epoch).
    #[serde(default)]
    pub epoch: u64,
    /// Its recorded log time, nanoseconds.
    #[serde(default)]
    pub log_time_ns: u64,
}

/// Absolute differences of numeric values.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Difference {
    /// Largest.
    #[serde(default)]
    pub max_abs: Option<f64>,
    /// Mean.
    #[serde(default)]
    pub mean_abs: Option<f64>,
    /// Values compared.
    #[serde(default)]
    pub compared: u64,
}

/// One module of the replay.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModuleReport {
    /// Frames it computed.
    #[serde(default)]
    pub frames: u64,
    /// Of those, with exactly the inputs it had when recorded.
    #[serde(default)]
    pub inputs_as_recorded: u64,
    /// Mean processing time when recorded, nanoseconds.
    #[serde(default)]
    pub recorded_process_time_ns: Option<f64>,
    /// Mean processing time in the replay, nanoseconds.
    #[serde(default)]
    pub simulated_process_time_ns: Option<f64>,
}

/// A frame the replay left out.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SkippedFrame {
    /// Its module.
    #[serde(default)]
    pub module: String,
    /// Its output channel.
    #[serde(default)]
    pub channel: String,
    /// Its sequence number (`null`: a recorded output without a dependency header, whose number is unknown).
    #[serde(default)]
    pub sequence_num: Option<u64>,
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// A module and a channel.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModuleChannel {
    /// The module.
    pub module: String,
    /// The channel.
    pub channel: String,
}

/// Wiring of the live modules against the recording.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct Wiring {
    /// Read now, not when recorded.
    #[serde(default)]
    pub new_inputs: Vec<ModuleChannel>,
    /// Read when recorded, not now.
    #[serde(default)]
    pub missing_inputs: Vec<ModuleChannel>,
    /// Written now, not when recorded.
    #[serde(default)]
    pub new_outputs: Vec<ModuleChannel>,
    /// Written when recorded, not now.
    #[serde(default)]
    pub missing_outputs: Vec<ModuleChannel>,
}

/// How long the replay took.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Timing {
    /// Wall time, seconds.
    #[serde(default)]
    pub wall_s: Option<f64>,
    /// Frames a second.
    #[serde(default)]
    pub frames_per_s: Option<f64>,
    /// Wall time per frame beyond the modules' own processing, milliseconds.
    #[serde(default)]
    pub overhead_per_frame_ms: Option<f64>,
}

/// The plot's file when report.json names none.
pub const PLOT_FILE: &str = "differences.png";
const PLOT_KEY: &str = "replay_differences";
const PLOT_TITLE: &str = "Simulated against recorded outputs";
const PLOT_CAPTION: &str = "Per output channel, the largest numeric difference between each replayed message and \
                            its recorded counterpart over recording time (0 everywhere: byte-identical outputs).";

/// Whether a parsed report.json is a lock-step replay's: it has `channels` and `frames_replayed`.
pub fn recognises(report: &serde_json::Value) -> bool {
    report.get("channels").is_some_and(serde_json::Value::is_object)
        && report
            .get("frames_replayed")
            .is_some_and(serde_json::Value::is_u64)
}

/// Reads `<dir>/report.json`.
pub fn load(dir: &Path) -> Result<ReplayReport> {
    parse(&dir.join(REPORT_JSON))
}

/// Renders `<dir>/report.json` and the differences plot into `<dir>/report.html`.
pub fn render(dir: &Path) -> Result<Rendered> {
    let report = load(dir)?;
    let file = report.plot.clone().unwrap_or_else(|| PLOT_FILE.to_owned());
    let mut images = Vec::new();
    let mut missing = Vec::new();
    if dir.join(&file).is_file() {
        images.push(png_image(dir, &file, PLOT_KEY, PLOT_TITLE, PLOT_CAPTION)?);
    } else {
        missing.push(Missing {
            key: PLOT_KEY.to_owned(),
            why: format!("{file} is not in the folder"),
        });
    }
    let html = write_page(dir, page(dir, &report, &images))?;
    Ok(Rendered {
        kind: Kind::Replay,
        html,
        plots: images.into_iter().map(|i| i.file).collect(),
        missing,
    })
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "n/a".to_owned();
    }
    format!("{:.1} %", 100.0 * part as f64 / whole as f64)
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// The key figures of the run.
fn summary(report: &ReplayReport) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    let mut row = |name: &str, value: String, ok: Option<bool>| {
        rows.push(vec![Cell::text(name), Cell::text(value), Cell::Verdict(ok)]);
    };
    let mode = match report.mode.as_str() {
        "dds" => "live modules stepped over DDS".to_owned(),
        "in-process" => "the pipeline's modules in the replay's process".to_owned(),
        other => other.to_owned(),
    };
    row("replayed by", mode, None);
    row(
        "frames replayed",
        format!(
            "{} of {} selected",
            report.frames_replayed, report.frames_selected
        ),
        None,
    );
    let (exact, simulated) = report
        .channels
        .values()
        .fold((0, 0), |(e, s), c| (e + c.exact, s + c.simulated));
    row(
        "outputs equal to the recording",
        format!("{exact} of {simulated} ({})", percent(exact, simulated)),
        Some(exact == simulated),
    );
    let differing: Vec<String> = report
        .channels
        .iter()
        .filter(|(_, c)| c.exact != c.simulated)
        .map(|(n, _)| n.clone())
        .collect();
    row(
        "channels that differ",
        list_or_none(&differing),
        Some(differing.is_empty()),
    );
    row("frames skipped", report.frames_skipped.len().to_string(), None);
    if let Some(t) = &report.timing {
        row(
            "run time",
            format!(
                "{} s ({} frames/s, {} ms overhead per frame)",
                number(t.wall_s, 3),
                number(t.frames_per_s, 0),
                number(t.overhead_per_frame_ms, 3)
            ),
            None,
        );
    }
    row(
        "modules fed from the recording",
        list_or_none(&report.modules_not_live),
        None,
    );
    row(
        "channels published from the recording",
        list_or_none(&report.channels_published_from_recording),
        None,
    );
    if let Some(w) = &report.wiring {
        let changes =
            w.new_inputs.len() + w.missing_inputs.len() + w.new_outputs.len() + w.missing_outputs.len();
        row("wiring changes", changes.to_string(), Some(changes == 0));
    }
    rows
}

fn channel_rows(report: &ReplayReport) -> Vec<Vec<Cell>> {
    report
        .channels
        .iter()
        .map(|(name, c)| {
            let first = c.first_difference.as_ref().map_or_else(
                || "none".to_owned(),
                |f| format!("{} #{} (run {})", f.module, f.sequence_num, f.epoch),
            );
            let n = c.numeric.as_ref();
            vec![
                Cell::Path(name.clone()),
                Cell::text(format!(
                    "{} of {} ({})",
                    c.exact,
                    c.simulated,
                    percent(c.exact, c.simulated)
                )),
                Cell::text(c.recorded.to_string()),
                Cell::text(first),
                Cell::text(number(n.and_then(|d| d.max_abs), 6)),
                Cell::text(number(n.and_then(|d| d.mean_abs), 6)),
                Cell::text(c.undecodable.to_string()),
                Cell::Verdict(Some(c.exact == c.simulated)),
            ]
        })
        .collect()
}

/// Fields that differ, largest difference first.
fn field_rows(report: &ReplayReport) -> Vec<Vec<Cell>> {
    let mut fields: Vec<(&String, &String, &Difference)> = report
        .channels
        .iter()
        .flat_map(|(c, r)| r.fields.iter().map(move |(f, d)| (c, f, d)))
        .filter(|(_, _, d)| d.max_abs.is_none_or(|m| m != 0.0))
        .collect();
    fields.sort_by(|a, b| {
        let max = |d: &Difference| d.max_abs.unwrap_or(f64::INFINITY);
        max(b.2)
            .total_cmp(&max(a.2))
            .then(a.0.cmp(b.0))
            .then(a.1.cmp(b.1))
    });
    fields
        .into_iter()
        .map(|(c, f, d)| {
            vec![
                Cell::Path(c.clone()),
                Cell::Path(f.clone()),
                Cell::text(number(d.max_abs, 6)),
                Cell::text(number(d.mean_abs, 6)),
                Cell::text(d.compared.to_string()),
            ]
        })
        .collect()
}

fn module_rows(report: &ReplayReport) -> Vec<Vec<Cell>> {
    report
        .modules
        .iter()
        .map(|(name, m)| {
            let ms = |ns: Option<f64>| number(ns.map(|v| v / 1e6), 3);
            vec![
                Cell::text(name),
                Cell::text(m.frames.to_string()),
                Cell::text(format!(
                    "{} ({})",
                    m.inputs_as_recorded,
                    percent(m.inputs_as_recorded, m.frames)
                )),
                Cell::text(ms(m.recorded_process_time_ns)),
                Cell::text(ms(m.simulated_process_time_ns)),
            ]
        })
        .collect()
}

/// Skipped frames by reason (module and channel), most first.
fn skipped_rows(report: &ReplayReport) -> Vec<Vec<Cell>> {
    let mut by: BTreeMap<(&str, &str, &str), u64> = BTreeMap::new();
    for f in &report.frames_skipped {
        *by.entry((&f.reason, &f.module, &f.channel)).or_default() += 1;
    }
    let mut rows: Vec<_> = by.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    rows.into_iter()
        .map(|((reason, module, channel), n)| {
            vec![
                Cell::text(module),
                Cell::Path(channel.to_owned()),
                Cell::text(n.to_string()),
                Cell::text(reason),
            ]
        })
        .collect()
}

fn wiring_rows(w: &Wiring) -> Vec<Vec<Cell>> {
    [
        ("now reads (not in the recording)", &w.new_inputs),
        ("no longer reads", &w.missing_inputs),
        ("now writes (not in the recording)", &w.new_outputs),
        ("no longer writes", &w.missing_outputs),
    ]
    .into_iter()
    .flat_map(|(what, list)| {
        list.iter().map(move |p| {
            vec![
                Cell::text(&p.module),
                Cell::text(what),
                Cell::Path(p.channel.clone()),
            ]
        })
    })
    .collect()
}

/// The whole page.
pub fn page(dir: &Path, report: &ReplayReport, images: &[Image]) -> String {
    let mut page = Page::new(
        "Lock-step replay report",
        &format!("output folder {}", dir.display()),
    );
    page.heading("summary", "Summary");
    page.table(
        "figures-table",
        &["figure", "value", "meets its goal"],
        &summary(report),
    );
    page.heading("channels", "Output channels against the recording");
    page.table(
        "channels-table",
        &[
            "channel",
            "equal to the recording",
            "recorded",
            "first difference",
            "max |difference|",
            "mean |difference|",
            "not decodable",
            "all equal",
        ],
        &channel_rows(report),
    );
    let fields = field_rows(report);
    if !fields.is_empty() {
        page.heading("fields", "Fields that differ");
        page.table(
            "fields-table",
            &[
                "channel",
                "field",
                "max |difference|",
                "mean |difference|",
                "values compared",
            ],
            &fields,
        );
    }
    if !report.modules.is_empty() {
        page.heading("modules", "Modules");
        page.table(
            "modules-table",
            &[
                "module",
                "frames",
                "with exactly the recorded inputs",
                "processing when recorded [ms]",
                "processing now [ms]",
            ],
            &module_rows(report),
        );
    }
    if !report.frames_skipped.is_empty() {
        page.heading("skipped", "Frames skipped");
        page.table(
            "skipped-table",
            &["module", "channel", "frames", "why"],
            &skipped_rows(report),
        );
    }
    if let Some(w) = report.wiring.as_ref().map(wiring_rows) {
        if !w.is_empty() {
            page.heading("wiring", "Wiring changes since the recording");
            page.table("wiring-table", &["module", "change", "channel"], &w);
        }
    }
    page.figures(images);
    page.finish()
}
