//! The demo report: PNG plots and one self-contained `report.html` from a demo output folder
//! (`scripts/demo.py` writes it; `lockstep report <dir>` renders it).
//!
//! The folder holds `report.json`: the key figures (`figures`: stage, name, value, ok), the stages' run
//! times and, under `plots`, where each plot's source lies relative to the folder: a PNG a tool already
//! wrote (`replay/differences.png` from `lockstep replay`, `calibration/trajectories.png` from
//! `lockstep calibrate`) is inlined as it is; a JSON series the demo wrote (`data/vehicle_path.json`,
//! `data/player.json`, `data/task_timeline.json`) is drawn here with `lockstep_plot` into `plots/<key>.png`.
//! The HTML inlines every PNG as a base64 data URI, so the one file is the whole report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

#[cfg(feature = "cli")]
pub mod cli;
mod html;
mod plots;

pub use html::html;
pub use plots::{path_figure, player_figure, timeline_figure, PlayerSeries, TaskTimeline, VehiclePath};

/// What can go wrong rendering a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A JSON file does not hold what it should.
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// serde_json's error, with line and column.
        source: serde_json::Error,
    },
    /// A file is not a PNG (or not one this reader understands).
    #[error("{path}: not a PNG image")]
    NotPng {
        /// The file.
        path: PathBuf,
    },
    /// `report.json` names a plot this crate does not know how to draw.
    #[error("{path}: plot `{key}`: {reason}")]
    Plot {
        /// report.json.
        path: PathBuf,
        /// The key under `plots`.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// Drawing failed.
    #[error(transparent)]
    Draw(#[from] lockstep_plot::PlotError),
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// `Result` with a [`ReportError`].
pub type Result<T, E = ReportError> = std::result::Result<T, E>;

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
}

/// The parts of report.json the report shows (the rest is for people and tests).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReportJson {
    /// The key figures.
    #[serde(default)]
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
                  destinations; racks and walls filled.",
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
        caption: "The transport task's subtasks from /task_events: when each ran, by level of the \
                  decomposition.",
        source: Source::Timeline,
    },
];

/// One plot ready for the HTML.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// Its spec.
    pub spec: PlotSpec,
    /// The PNG bytes.
    pub png: Vec<u8>,
    /// Width and height, pixels.
    pub size_px: (u32, u32),
    /// Where the PNG lies, relative to the folder.
    pub file: String,
}

/// Width and height of a PNG from its IHDR chunk.
pub fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let w = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
    let h = u32::from_be_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
    Some((w, h))
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| ReportError::Read {
        path: path.to_owned(),
        source,
    })
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    serde_json::from_slice(&read(path)?).map_err(|source| ReportError::Parse {
        path: path.to_owned(),
        source,
    })
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|source| ReportError::Write {
        path: path.to_owned(),
        source,
    })
}

/// Reads `<dir>/report.json`.
pub fn load(dir: &Path) -> Result<ReportJson> {
    parse(&dir.join("report.json"))
}

/// The PNG of one plot: drawn from its JSON into `<dir>/plots/<key>.png`, or read as it is.
fn image(dir: &Path, report: &ReportJson, spec: PlotSpec) -> Result<Option<Image>> {
    let Some(rel) = report.plots.get(spec.key) else {
        return Ok(None);
    };
    let src = dir.join(rel);
    let (png, file) = match spec.source {
        Source::Png => (read(&src)?, rel.clone()),
        drawn => {
            let figure = match drawn {
                Source::VehiclePath => path_figure(&parse(&src)?),
                Source::Player => player_figure(&parse(&src)?),
                _ => timeline_figure(&parse(&src)?),
            };
            let png = figure.to_png()?;
            let file = format!("plots/{}.png", spec.key);
            write(&dir.join(&file), &png)?;
            (png, file)
        }
    };
    let size_px = png_size(&png).ok_or_else(|| ReportError::NotPng { path: src.clone() })?;
    Ok(Some(Image {
        spec,
        png,
        size_px,
        file,
    }))
}

/// What [`render`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The report.
    pub html: PathBuf,
    /// Each plot's PNG, relative to the folder, in the report's order.
    pub plots: Vec<String>,
    /// Plots report.json does not name (a stage that did not run).
    pub missing: Vec<&'static str>,
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
            path: dir.join("report.json"),
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
        match image(dir, &report, spec)? {
            Some(image) => images.push(image),
            None => missing.push(spec.key),
        }
    }
    let out = dir.join("report.html");
    write(&out, html(&report, &images).as_bytes())?;
    Ok(Rendered {
        html: out,
        plots: images.into_iter().map(|i| i.file).collect(),
        missing,
    })
}

#[cfg(test)]
mod tests;
