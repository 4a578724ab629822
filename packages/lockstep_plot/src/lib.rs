//! PNG plots for Lockstep's reports: a [`Figure`] is a title over panels stacked top to bottom, each
//! panel a set of line or point [`Series`] over a shared kind of x axis, with optional horizontal
//! [`Limit`] lines (a velocity limit, a threshold) and a note when there is nothing to draw.
//!
//! Drawing is plotters' bitmap backend with text through ab_glyph and DejaVu Sans embedded in the binary
//! (the `dejavu` crate), so a plot looks the same on every machine and needs no system font. The PNG
//! bytes depend only on the figure: two runs with the same data write identical files.
//!
//! ```
//! use lockstep_plot::{Figure, Panel, Series};
//! let mut panel = Panel::new("/cmd_vel", "log time [s]", "max |difference|");
//! panel.series.push(Series::line("linear.x", vec![(0.0, 0.0), (1.0, 0.5), (2.0, 0.0)]));
//! let figure = Figure::new("Replay differences").with_panel(panel);
//! let png = figure.to_png().unwrap();
//! assert_eq!(&png[1..4], b"PNG");
//! ```

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

mod draw;
mod model;

pub use model::{Figure, Limit, Panel, Series, SeriesKind};

/// What can go wrong drawing or writing a plot.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// plotters refused to draw (a degenerate range, a font problem).
    #[error("cannot draw the plot '{title}': {reason}")]
    Draw {
        /// The figure's title.
        title: String,
        /// What plotters said.
        reason: String,
    },
    /// The embedded font did not load (a broken build).
    #[error("the embedded DejaVu Sans font did not load")]
    Font,
    /// PNG encoding failed.
    #[error("cannot encode the plot '{title}' as PNG: {reason}")]
    Encode {
        /// The figure's title.
        title: String,
        /// What the encoder said.
        reason: String,
    },
    /// The file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The PNG path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// `Result` with a [`PlotError`].
pub type Result<T, E = PlotError> = std::result::Result<T, E>;

impl Figure {
    /// Width and height of the image, pixels.
    pub fn size_px(&self) -> (u32, u32) {
        let panels = u32::try_from(self.panels.len().max(1)).unwrap_or(u32::MAX);
        (
            self.width_px,
            draw::TITLE_BAND_PX.saturating_add(panels.saturating_mul(self.panel_height_px)),
        )
    }

    /// The figure as RGB pixels, row by row (3 bytes a pixel), with its size.
    pub fn to_rgb(&self) -> Result<(u32, u32, Vec<u8>)> {
        register_font()?;
        let (w, h) = self.size_px();
        let mut buffer = vec![255_u8; w as usize * h as usize * 3];
        draw::draw(self, &mut buffer).map_err(|reason| PlotError::Draw {
            title: self.title.clone(),
            reason,
        })?;
        Ok((w, h, buffer))
    }

    /// The figure as PNG bytes.
    pub fn to_png(&self) -> Result<Vec<u8>> {
        let (w, h, rgb) = self.to_rgb()?;
        let mut png = Vec::new();
        let encoder = image::codecs::png::PngEncoder::new(&mut png);
        image::ImageEncoder::write_image(encoder, &rgb, w, h, image::ColorType::Rgb8).map_err(|e| {
            PlotError::Encode {
                title: self.title.clone(),
                reason: e.to_string(),
            }
        })?;
        Ok(png)
    }

    /// Writes the figure as a PNG file.
    pub fn write_png(&self, path: &Path) -> Result<()> {
        let png = self.to_png()?;
        std::fs::write(path, png).map_err(|source| PlotError::Write {
            path: path.to_owned(),
            source,
        })
    }
}

/// Registers DejaVu Sans as plotters' `sans-serif`, once per process.
fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(
            "sans-serif",
            plotters::style::FontStyle::Normal,
            dejavu::sans::regular(),
        )
        .is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}
