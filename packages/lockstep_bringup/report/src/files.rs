//! The files of an output folder: their names, reading and writing them, and PNG images read from them
//! or drawn for the page.

use std::path::{Path, PathBuf};

use crate::error::{ReportError, Result};
use crate::types::Image;

/// The file a demo or a lock-step replay leaves in its folder.
pub const REPORT_JSON: &str = "report.json";
/// The file `lockstep calibrate` leaves in its folder.
pub const CALIBRATION_YAML: &str = "calibration.yaml";
/// The page written into the folder.
pub const REPORT_HTML: &str = "report.html";

/// Width and height of a PNG from its IHDR chunk.
pub fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let w = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
    let h = u32::from_be_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
    Some((w, h))
}

/// The largest file of an output folder read into a report (a plot, a JSON report).
const MAX_READ_BYTES: u64 = 256 << 20;

pub(crate) fn read(path: &Path) -> Result<Vec<u8>> {
    lockstep_ranges::file::read_bytes(path, MAX_READ_BYTES).map_err(|e| ReportError::Read {
        path: path.to_owned(),
        source: std::io::Error::other(e),
    })
}

pub(crate) fn parse<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    serde_json::from_slice(&read(path)?).map_err(|source| ReportError::Parse {
        path: path.to_owned(),
        source,
    })
}

pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|source| ReportError::Write {
        path: path.to_owned(),
        source,
    })
}

/// The PNG at `<dir>/<file>` as a plot of the page.
pub(crate) fn png_image(dir: &Path, file: &str, key: &str, title: &str, caption: &str) -> Result<Image> {
    let path = dir.join(file);
    let png = read(&path)?;
    image(png, file, key, title, caption).ok_or(ReportError::NotPng { path })
}

/// PNG bytes as a plot of the page (`None`: not a PNG).
pub(crate) fn image(png: Vec<u8>, file: &str, key: &str, title: &str, caption: &str) -> Option<Image> {
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
pub(crate) fn write_page(dir: &Path, page: String) -> Result<PathBuf> {
    let out = dir.join(REPORT_HTML);
    write(&out, page.as_bytes())?;
    Ok(out)
}
