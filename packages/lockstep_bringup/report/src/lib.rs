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

use std::path::Path;

pub mod calibration;
#[cfg(feature = "cli")]
pub mod cli;
pub mod demo;
mod error;
mod files;
mod html;
mod plots;
pub mod replay;
mod types;

pub use demo::{FigureRow, PlotSpec, ReportJson, Source, StageRow, PLOTS, STAGE_ORDER};
pub use error::{ReportError, Result, EXPECTED};
pub use files::{png_size, CALIBRATION_YAML, REPORT_HTML, REPORT_JSON};
pub use html::{escape, href, Cell, Page, PAGE_WIDTH_PX};
pub use plots::{path_figure, player_figure, timeline_figure, PlayerSeries, TaskTimeline, VehiclePath};
pub use types::{Image, Kind, Missing, Rendered};

use files::parse;

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

#[cfg(test)]
mod tests;
