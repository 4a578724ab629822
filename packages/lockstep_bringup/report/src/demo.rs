//! The demo's output folder (`scripts/demo.py`).
//!
//! Its `report.json` holds the stages (how each went, its run time, a one-line summary and, for a failed one,
//! its whole error and its log), the key figures (`figures`: stage, name, value, ok) and, under `plots`,
//! where each plot's source lies relative to the folder: a PNG a tool already wrote
//! (`replay/differences.png` from `lockstep replay`, `calibration/trajectories.png` from `lockstep
//! calibrate`) is inlined as it is; a JSON series the demo wrote (`data/vehicle_path.json`,
//! `data/player.json`, `data/task_timeline.json`) is drawn here with `lockstep_plot` into `plots/<key>.png`.
//!
//! A failed stage shows its whole error (`error`, else its summary) and a relative link to its log: the
//! stage's `log` when report.json names one, else `logs/<stage>.log`, else the files under `logs/` named
//! after the stage, else the `logs/` folder itself (where the demo writes every process's output).

use std::collections::BTreeMap;
use std::path::{Component, Path};

use serde::{Deserialize, Deserializer};

use crate::error::{ReportError, Result};
use crate::files::{image, parse, png_image, write, write_page, REPORT_JSON};
use crate::html::{escape, href, Cell, Page};
use crate::plots::{path_figure, player_figure, timeline_figure};
use crate::types::{Image, Kind, Missing, Rendered};

/// One key figure of the table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FigureRow {
    /// The stage it comes from (drive, replay, ...).
    pub stage: String,
    /// What it is.
    pub name: String,
    /// Its value, as text with its unit.
    pub value: String,
    /// Whether it meets its goal; `None`: informative only.
    #[serde(default)]
    pub ok: Option<bool>,
}

/// One stage's line of report.json.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StageRow {
    /// It ran and its checks held.
    pub ok: bool,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// One-line summary.
    #[serde(default)]
    pub summary: String,
    /// The whole error of a failed stage (the summary holds only its start).
    #[serde(default)]
    pub error: Option<String>,
    /// The stage's log, relative to the folder (e.g. `logs/drive.log`).
    #[serde(default)]
    pub log: Option<String>,
}

/// The parts of report.json the report shows (the rest is for people and tests).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReportJson {
    /// The key figures (an empty `{}` until the demo's report stage fills them in).
    #[serde(default, deserialize_with = "figure_rows")]
    pub figures: Vec<FigureRow>,
    /// Plot key -> its source, relative to the folder.
    #[serde(default)]
    pub plots: BTreeMap<String, String>,
    /// Stage name -> how it went (in run order: serde_json keeps a map's order only with
    /// `preserve_order`, so the order comes from [`STAGE_ORDER`]).
    #[serde(default)]
    pub stages: BTreeMap<String, StageRow>,
    /// When the demo ran (UTC).
    #[serde(default)]
    pub created_utc: String,
    /// The demo's seed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// The whole run, wall seconds.
    #[serde(default)]
    pub total_wall_s: Option<f64>,
}

/// The figures as a list; the `{}` the demo starts report.json with counts as none.
fn figure_rows<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<FigureRow>, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    if value.as_object().is_some_and(serde_json::Map::is_empty) {
        return Ok(Vec::new());
    }
    serde_json::from_value(value).map_err(serde::de::Error::custom)
}

/// The demo's stages in run order (others follow, sorted).
pub const STAGE_ORDER: [&str; 6] = ["drive", "replay", "calibrate", "player", "task", "report"];

/// How a plot's source becomes a PNG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A PNG a tool wrote: inlined as it is.
    Png,
    /// The vehicle's path on the map (`VehiclePath` JSON).
    VehiclePath,
    /// Player speed and acceleration against the limits (`PlayerSeries` JSON).
    Player,
    /// The task's timeline (`TaskTimeline` JSON).
    Timeline,
}

/// A plot of the report: its key in report.json's `plots`, title, caption and how it is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlotSpec {
    /// Key under `plots`; also the `id` of its `<figure>` (`plot-<key>`) and its PNG's name.
    pub key: &'static str,
    /// The `<h2>` above it.
    pub title: &'static str,
    /// The `<figcaption>` under it.
    pub caption: &'static str,
    /// Where it comes from.
    pub source: Source,
}

/// The report's plots, in order.
pub const PLOTS: [PlotSpec; 5] = [
    PlotSpec {
        key: "vehicle_path",
        title: "Vehicle path on the warehouse map",
        caption: "The adaptive vehicle's ground-truth path while the rules drove it through a tour of \
                  destinations; racks and walls filled; the same scale on both axes.",
        source: Source::VehiclePath,
    },
    PlotSpec {
        key: "replay_differences",
        title: "Lock-step replay differences",
        caption: "lockstep replay: per output channel, the largest numeric difference between the replayed \
                  and the recorded message over recording time (0 everywhere: byte-identical outputs).",
        source: Source::Png,
    },
    PlotSpec {
        key: "calibration",
        title: "Calibration before and after",
        caption: "lockstep calibrate: dead reckoning from the recorded odometry with the nominal and with the \
                  calibrated motion model, against the observed (SLAM) poses.",
        source: Source::Png,
    },
    PlotSpec {
        key: "player",
        title: "Interpolation player: speed and acceleration against the limits",
        caption: "The commands the player sent to the mock joints (differences over 10 ms), as fractions of each \
                  joint's velocity and acceleration limit (1 = the limit), with the pause, the resume and the \
                  speed change marked on the time axis.",
        source: Source::Player,
    },
    PlotSpec {
        key: "task_timeline",
        title: "Warehouse task timeline",
        caption: "The tasks on /task_events, one row per subtask with bars per status: the charging task the \
                  manager sent the low robot on first (its drive to the charger, then charging), then the \
                  transport; a drive's waits for a lane or station another robot holds are bars of their own.",
        source: Source::Timeline,
    },
];

/// Whether a parsed report.json is the demo's: it has its `stages`.
pub fn recognises(report: &serde_json::Value) -> bool {
    report.get("stages").is_some_and(serde_json::Value::is_object)
}

/// Reads `<dir>/report.json`.
pub fn load(dir: &Path) -> Result<ReportJson> {
    parse(&dir.join(REPORT_JSON))
}

/// The PNG of one plot: drawn from its JSON into `<dir>/plots/<key>.png`, or read as it is.
fn plot(dir: &Path, report: &ReportJson, spec: PlotSpec) -> Result<Option<Image>> {
    let Some(rel) = report.plots.get(spec.key) else {
        return Ok(None);
    };
    if spec.source == Source::Png {
        return png_image(dir, rel, spec.key, spec.title, spec.caption).map(Some);
    }
    let src = dir.join(rel);
    let figure = match spec.source {
        Source::VehiclePath => path_figure(&parse(&src)?),
        Source::Player => player_figure(&parse(&src)?),
        _ => timeline_figure(&parse(&src)?),
    };
    let png = figure.to_png()?;
    let file = format!("plots/{}.png", spec.key);
    write(&dir.join(&file), &png)?;
    image(png, &file, spec.key, spec.title, spec.caption)
        .map(Some)
        .ok_or(ReportError::NotPng { path: src })
}

/// Renders `<dir>/report.json` into `<dir>/plots/*.png` and `<dir>/report.html`.
pub fn render(dir: &Path) -> Result<Rendered> {
    let report = load(dir)?;
    if let Some(key) = report
        .plots
        .keys()
        .find(|k| !PLOTS.iter().any(|p| p.key == k.as_str()))
    {
        return Err(ReportError::Plot {
            path: dir.join(REPORT_JSON),
            key: key.clone(),
            reason: format!(
                "unknown plot (known: {})",
                PLOTS.iter().map(|p| p.key).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    let plots_dir = dir.join("plots");
    std::fs::create_dir_all(&plots_dir).map_err(|source| ReportError::Write {
        path: plots_dir.clone(),
        source,
    })?;
    let mut images = Vec::new();
    let mut missing = Vec::new();
    for spec in PLOTS {
        match plot(dir, &report, spec)? {
            Some(image) => images.push(image),
            None => missing.push(Missing {
                key: spec.key.to_owned(),
                why: "report.json does not name its source (its stage did not run)".to_owned(),
            }),
        }
    }
    let html = write_page(dir, page(dir, &report, &images))?;
    Ok(Rendered {
        kind: Kind::Demo,
        html,
        plots: images.into_iter().map(|i| i.file).collect(),
        missing,
    })
}

/// `path` (from report.json) relative to `dir` with `/` separators, if it lies inside it.
fn inside(dir: &Path, path: &str) -> Option<String> {
    let path = Path::new(path);
    let rel = if path.is_absolute() {
        path.strip_prefix(dir).ok()?
    } else {
        path
    };
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str()?.to_owned()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The log(s) of stage `name`, relative to the folder (see the module's documentation).
pub fn stage_logs(dir: &Path, name: &str, row: &StageRow) -> Vec<String> {
    if let Some(log) = row.log.as_deref().and_then(|l| inside(dir, l)) {
        return vec![log];
    }
    let own = format!("logs/{name}.log");
    if dir.join(&own).is_file() {
        return vec![own];
    }
    let logs = dir.join("logs");
    let mut named: Vec<String> = std::fs::read_dir(&logs)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|f| f.starts_with(&format!("{name}-")) || f.starts_with(&format!("{name}.")))
        .map(|f| format!("logs/{f}"))
        .collect();
    named.sort();
    if named.is_empty() && logs.is_dir() {
        named.push("logs/".to_owned());
    }
    named
}

/// The summary cell of a stage: its summary; for a failed stage its whole error and its log(s).
fn stage_cell(dir: &Path, name: &str, row: &StageRow) -> Cell {
    if row.ok {
        return Cell::text(&row.summary);
    }
    let error = row.error.as_deref().unwrap_or(&row.summary);
    let mut out = format!("<pre class=\"error\">{}</pre>", escape(error));
    let logs = stage_logs(dir, name, row);
    if !logs.is_empty() {
        let links: Vec<String> = logs
            .iter()
            .map(|l| format!("<a href=\"{}\">{}</a>", escape(&href(l)), escape(l)))
            .collect();
        let what = if logs == ["logs/"] {
            "logs (every process the demo started)"
        } else {
            "log"
        };
        out.push_str(&format!("{what}: {}", links.join(", ")));
    }
    Cell::Html(out)
}

/// The whole page.
pub fn page(dir: &Path, report: &ReportJson, images: &[Image]) -> String {
    let mut meta = format!("run {}", report.created_utc);
    if let Some(seed) = report.seed {
        meta.push_str(&format!(", seed {seed}"));
    }
    if let Some(total) = report.total_wall_s {
        meta.push_str(&format!(", {total:.1} s in all"));
    }
    let mut page = Page::new("Lockstep demo report", &meta);
    let mut names: Vec<&String> = report.stages.keys().collect();
    names.sort_by_key(|n| {
        (
            STAGE_ORDER
                .iter()
                .position(|s| s == n)
                .unwrap_or(STAGE_ORDER.len()),
            (*n).clone(),
        )
    });
    let stages: Vec<Vec<Cell>> = names
        .into_iter()
        .map(|name| {
            let s = &report.stages[name];
            vec![
                Cell::text(name),
                Cell::Verdict(Some(s.ok)),
                Cell::text(format!("{:.1} s", s.wall_s)),
                stage_cell(dir, name, s),
            ]
        })
        .collect();
    page.heading("stages", "Stages");
    page.table("stages-table", &["stage", "ok", "time", "summary"], &stages);
    let figures: Vec<Vec<Cell>> = report
        .figures
        .iter()
        .map(|f| {
            vec![
                Cell::text(&f.stage),
                Cell::text(&f.name),
                Cell::text(&f.value),
                Cell::Verdict(f.ok),
            ]
        })
        .collect();
    page.heading("figures", "Key figures");
    page.table(
        "figures-table",
        &["stage", "figure", "value", "meets its goal"],
        &figures,
    );
    page.figures(images);
    page.finish()
}
