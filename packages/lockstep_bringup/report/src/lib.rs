//! Reports of the folders Lockstep's tools write. `lockstep report <dir>` recognises the folder by the files
//! in it and their shape (never by its name), draws what needs drawing with `lockstep_plot`, and writes one
//! self-contained `<dir>/report.html`: a summary table of the key figures, then the plots, every PNG inlined
//! as a base64 data URI, so the one file is the whole report.
//!
//! | folder | written by | recognised by | its report |
//! |---|---|---|---|
//! | [demo] | `scripts/demo.py` | `report.json` with `stages` | the stages (a failed one with its whole error and a link to its log under `logs/`), the key figures, the five plots |
//! | lock-step [replay] | `lockstep replay <bag> --output DIR` (or the `lockstep_replay` node) | `report.json` with `channels` and `frames_replayed` | the run, outputs equal to the recording per channel, modules, skipped frames, wiring changes, `differences.png` |
//! | [calibration] | `lockstep calibrate <bag> --output DIR` | `calibration.yaml` setting `lockstep_sim_node`'s `nominal_vehicle` | the parameters against the nominal ones, dead-reckoning error before and after, the windows, `trajectories.png` |
//!
//! The interpolation player writes no output folder (`lockstep player generate` writes one interpolation
//! file, `lockstep player check` prints), so it has no report of its own; the demo's report has its plot.
//!
//! Anything else (an empty folder, a missing one, a report.json of another shape) is an error of one line
//! that says what was expected.

use std::path::{Path, PathBuf};

pub mod calibration;
#[cfg(feature = "cli")]
pub mod cli;
pub mod demo;
mod html;
mod plots;
pub mod replay;

pub use demo::{FigureRow, PlotSpec, ReportJson, Source, StageRow, PLOTS, STAGE_ORDER};
pub use html::{escape, href, Cell, Page, PAGE_WIDTH_PX};
pub use plots::{path_figure, player_figure, timeline_figure, PlayerSeries, TaskTimeline, VehiclePath};

/// The file a demo or a lock-step replay leaves in its folder.
pub const REPORT_JSON: &str = "report.json";
/// The file `lockstep calibrate` leaves in its folder.
pub const CALIBRATION_YAML: &str = "calibration.yaml";
/// The page written into the folder.
pub const REPORT_HTML: &str = "report.html";
/// What a folder must hold, said when it holds none of it.
pub const EXPECTED: &str =
    "expected report.json from the demo or lockstep replay, or calibration.yaml from lockstep calibrate";

/// What can go wrong rendering a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The folder holds nothing a Lockstep tool writes (or is missing, or is a file).
    #[error("{dir}: not a Lockstep output folder ({}{EXPECTED})", why.map(|w| format!("{w}; ")).unwrap_or_default())]
    NotOutputFolder {
        /// The folder given.
        dir: PathBuf,
        /// Why, when it is not simply the files: `no such folder`, `a file, not a folder`.
        why: Option<&'static str>,
    },
    /// `report.json` is JSON, but neither the demo's nor lock-step replay's.
    #[error(
        "{path}: not a report a Lockstep tool writes (expected the demo's `stages`, or lockstep replay's \
         `channels` and `frames_replayed`)"
    )]
    UnknownReport {
        /// report.json.
        path: PathBuf,
    },
    /// `calibration.yaml` is YAML, but not what `lockstep calibrate` writes.
    #[error("{path}: not a calibration lockstep calibrate writes: {reason}")]
    NotCalibration {
        /// calibration.yaml.
        path: PathBuf,
        /// What is missing.
        reason: String,
    },
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
    /// A YAML file does not parse.
    #[error("{path}: {source}")]
    Yaml {
        /// The file.
        path: PathBuf,
        /// The parser's error, with line and column.
        source: serde_norway::Error,
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

/// The kinds of folder a report is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `scripts/demo.py`'s output folder.
    Demo,
    /// `lockstep replay --output`'s folder: the simulated bag, report.json, differences.png.
    Replay,
    /// `lockstep calibrate --output`'s folder: calibration.yaml, trajectories.png.
    Calibration,
}

impl Kind {
    /// How the kind is called in messages: `demo`, `lock-step replay`, `calibration`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Demo => "demo",
            Self::Replay => "lock-step replay",
            Self::Calibration => "calibration",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which kind of folder `dir` is, from the files in it and their shape: a `report.json` is the demo's when it
/// has `stages`, lock-step replay's when it has `channels` and `frames_replayed`; without one, a
/// `calibration.yaml` setting `lockstep_sim_node`'s `nominal_vehicle` is a calibration.
pub fn detect(dir: &Path) -> Result<Kind> {
    let not = |why| ReportError::NotOutputFolder {
        dir: dir.to_owned(),
        why,
    };
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not(Some("no such folder"))),
        Err(source) => {
            return Err(ReportError::Read {
                path: dir.to_owned(),
                source,
            })
        }
        Ok(m) if !m.is_dir() => return Err(not(Some("a file, not a folder"))),
        Ok(_) => {}
    }
    let report = dir.join(REPORT_JSON);
    if report.is_file() {
        let value: serde_json::Value = parse(&report)?;
        if demo::recognises(&value) {
            return Ok(Kind::Demo);
        }
        if replay::recognises(&value) {
            return Ok(Kind::Replay);
        }
        return Err(ReportError::UnknownReport { path: report });
    }
    let yaml = dir.join(CALIBRATION_YAML);
    if yaml.is_file() {
        calibration::load(&yaml)?;
        return Ok(Kind::Calibration);
    }
    Err(not(None))
}

/// One plot ready for the page.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// Its key: the `id` of its `<figure>` is `plot-<key>`.
    pub key: String,
    /// The `<h2>` above it.
    pub title: String,
    /// The `<figcaption>` under it.
    pub caption: String,
    /// The PNG bytes.
    pub png: Vec<u8>,
    /// Width and height, pixels.
    pub size_px: (u32, u32),
    /// Where the PNG lies, relative to the folder.
    pub file: String,
}

/// A plot the report has not got, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The plot's key.
    pub key: String,
    /// Why it is not there, e.g. `its stage did not run`.
    pub why: String,
}

/// What [`render`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The kind of folder.
    pub kind: Kind,
    /// The report.
    pub html: PathBuf,
    /// Each plot's PNG, relative to the folder, in the report's order.
    pub plots: Vec<String>,
    /// Plots the report could not show.
    pub missing: Vec<Missing>,
}

/// Recognises `dir` ([`detect`]) and renders its report into `<dir>/report.html` (and, for the demo, the
/// plots it draws into `<dir>/plots/`).
pub fn render(dir: &Path) -> Result<Rendered> {
    render_as(dir, detect(dir)?)
}

/// Renders `dir` as a folder of `kind`.
pub fn render_as(dir: &Path, kind: Kind) -> Result<Rendered> {
    match kind {
        Kind::Demo => demo::render(dir),
        Kind::Replay => replay::render(dir),
        Kind::Calibration => calibration::render(dir),
    }
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

/// The PNG at `<dir>/<file>` as a plot of the page.
fn png_image(dir: &Path, file: &str, key: &str, title: &str, caption: &str) -> Result<Image> {
    let path = dir.join(file);
    let png = read(&path)?;
    image(png, file, key, title, caption).ok_or(ReportError::NotPng { path })
}

/// PNG bytes as a plot of the page (`None`: not a PNG).
fn image(png: Vec<u8>, file: &str, key: &str, title: &str, caption: &str) -> Option<Image> {
    let size_px = png_size(&png)?;
    Some(Image {
        key: key.to_owned(),
        title: title.to_owned(),
        caption: caption.to_owned(),
        png,
        size_px,
        file: file.to_owned(),
    })
}

/// Writes the page as `<dir>/report.html`; its path.
fn write_page(dir: &Path, page: String) -> Result<PathBuf> {
    let out = dir.join(REPORT_HTML);
    write(&out, page.as_bytes())?;
    Ok(out)
}

/// A number with `decimals`, or `n/a` when it is missing or not finite.
fn number(value: Option<f64>, decimals: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "n/a".to_owned(),
    }
}

#[cfg(test)]
mod tests;
