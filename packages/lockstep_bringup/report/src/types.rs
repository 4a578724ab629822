//! What rendering a report works with and returns: the kind of folder, the plots of the page, the plots
//! missing and the outcome. Plain data that the page writer and every kind of report share.

use std::path::PathBuf;

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

/// What [`render`](crate::render) wrote.
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
