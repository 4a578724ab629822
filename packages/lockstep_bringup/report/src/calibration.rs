//! A calibration's output folder: `lockstep calibrate <bag> --output DIR` writes `calibration.yaml` (a ROS 2
//! parameter file setting `lockstep_sim_node`'s `nominal_vehicle`, the statistics as comments) and
//! `trajectories.png` (dead reckoning with the nominal and the calibrated parameters against the observed
//! poses).
//!
//! The parameters come from the YAML itself; the key figures (standard deviations, nominal values, windows,
//! residuals, dead-reckoning error, messages read) from its comments, each left out when its line is not
//! there. The page also shows the whole file as it is.

use std::path::Path;

use crate::error::{ReportError, Result};
use crate::files::{png_image, read, write_page, CALIBRATION_YAML};
use crate::html::{number, Cell, Page};
use crate::types::{Image, Kind, Missing, Rendered};

/// The motion model's parameters, in the file's order: key, name shown, unit, decimals.
const PARAMETERS: [(&str, &str, &str, usize); 4] = [
    ("wheel_radius_m", "wheel radius", " m", 6),
    ("track_width_m", "track width", " m", 6),
    ("delay_secs", "delay", " s", 4),
    ("centripetal_factor", "centripetal factor (beta)", "", 4),
];

/// The plot `lockstep calibrate` writes beside the YAML.
pub const PLOT_FILE: &str = "trajectories.png";
const PLOT_KEY: &str = "calibration";
const PLOT_TITLE: &str = "Dead reckoning before and after";
const PLOT_CAPTION: &str = "Dead reckoning from the recorded wheel motion with the nominal and with the calibrated \
                            motion model, against the observed poses, and the distance between them over time.";

/// One calibrated parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// Its key under `nominal_vehicle`.
    pub key: &'static str,
    /// The calibrated value.
    pub value: f64,
    /// Its standard deviation; `None`: not estimated (or not said).
    pub std: Option<f64>,
    /// The value the odometry used, where the file says it.
    pub nominal: Option<f64>,
}

/// What `calibration.yaml` says.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// Radius, track width, delay, centripetal factor.
    pub parameters: Vec<Parameter>,
    /// The bag calibrated from.
    pub bag: Option<String>,
    /// The topics read, `topic (type)`.
    pub topics: Vec<String>,
    /// `12 accepted, 0 rejected, ...`.
    pub windows: Option<String>,
    /// Windows accepted.
    pub accepted: Option<u64>,
    /// Dead reckoning's RMS distance to the observed poses, nominal and calibrated, metres.
    pub rms_m: Option<(f64, f64)>,
    /// The residual over the bag line after its colon (nominal and calibrated, or `n/a`).
    pub residual: Option<String>,
    /// Mean normalised residual over the bag, nominal and calibrated.
    pub residuals: Option<(f64, f64)>,
    /// `cmd_vel 100, odom 500, pose 200; not decodable: ...`.
    pub messages: Option<String>,
    /// Warnings at the top of the file (nothing estimated, no window accepted).
    pub warnings: Vec<String>,
    /// The whole file.
    pub text: String,
}

/// The number right after `key` in `text` (`nominal 1.130 m` -> 1.130).
fn number_after(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
        .unwrap_or(rest.len());
    rest[..end].trim_end_matches('.').parse().ok()
}

/// The text after `prefix` on the first comment line that starts with it (`#` and spaces ignored).
fn comment<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix('#'))
        .find_map(|l| l.trim_start().strip_prefix(prefix))
        .map(str::trim)
}

/// Reads and checks `calibration.yaml`.
pub fn load(path: &Path) -> Result<Calibration> {
    let text = String::from_utf8_lossy(&read(path)?).into_owned();
    let yaml: serde_norway::Value = serde_norway::from_str(&text).map_err(|source| ReportError::Yaml {
        path: path.to_owned(),
        source,
    })?;
    let not = |reason: String| ReportError::NotCalibration {
        path: path.to_owned(),
        reason,
    };
    let vehicle = yaml
        .get("lockstep_sim_node")
        .and_then(|v| v.get("ros__parameters"))
        .and_then(|v| v.get("nominal_vehicle"))
        .ok_or_else(|| not("no lockstep_sim_node.ros__parameters.nominal_vehicle".to_owned()))?;
    let mut parameters = Vec::new();
    for (key, ..) in PARAMETERS {
        let value = vehicle
            .get(key)
            .and_then(serde_norway::Value::as_f64)
            .ok_or_else(|| not(format!("nominal_vehicle.{key} is missing or not a number")))?;
        // The comment on the parameter's own line: `std 0.000012, nominal 0.05` or `not estimated, ...`.
        let line_comment = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{key}:")))
            .and_then(|l| l.split_once('#'))
            .map_or("", |(_, c)| c);
        parameters.push(Parameter {
            key,
            value,
            std: number_after(line_comment, "std "),
            nominal: number_after(line_comment, "nominal "),
        });
    }
    let windows = comment(&text, "windows:").map(str::to_owned);
    let residual = comment(&text, "residual over the bag");
    let rms = comment(&text, "dead reckoning from the first observed pose");
    let both = |line: Option<&str>| {
        let line = line?;
        Some((
            number_after(line, "nominal ")?,
            number_after(line, "calibrated ")?,
        ))
    };
    Ok(Calibration {
        parameters,
        bag: comment(&text, "bag:").map(str::to_owned),
        topics: text
            .lines()
            .filter_map(|l| l.strip_prefix("# topic:"))
            .map(|t| t.trim().to_owned())
            .collect(),
        accepted: windows
            .as_deref()
            .and_then(|w| w.split_whitespace().next()?.parse().ok()),
        windows,
        rms_m: both(rms),
        residuals: both(residual),
        // `(normalized RMS per 3 s window, mean of 20): nominal 5.1, calibrated 1.0` -> values first.
        residual: residual.map(|r| match r.split_once("):") {
            Some((how, values)) => format!("{} ({})", values.trim(), how.trim_start_matches('(').trim()),
            None => r.to_owned(),
        }),
        messages: comment(&text, "messages read:").map(str::to_owned),
        warnings: text
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| {
                l.starts_with("Nothing could be estimated") || l.starts_with("No window was accepted")
            })
            .map(str::to_owned)
            .collect(),
        text,
    })
}

/// Renders `<dir>/calibration.yaml` and `trajectories.png` into `<dir>/report.html`.
pub fn render(dir: &Path) -> Result<Rendered> {
    let calibration = load(&dir.join(CALIBRATION_YAML))?;
    let mut images = Vec::new();
    let mut missing = Vec::new();
    if dir.join(PLOT_FILE).is_file() {
        images.push(png_image(dir, PLOT_FILE, PLOT_KEY, PLOT_TITLE, PLOT_CAPTION)?);
    } else {
        missing.push(Missing {
            key: PLOT_KEY.to_owned(),
            why: format!("{PLOT_FILE} is not in the folder"),
        });
    }
    let html = write_page(dir, page(dir, &calibration, &images))?;
    Ok(Rendered {
        kind: Kind::Calibration,
        html,
        plots: images.into_iter().map(|i| i.file).collect(),
        missing,
    })
}

fn parameter_rows(c: &Calibration) -> Vec<Vec<Cell>> {
    c.parameters
        .iter()
        .map(|p| {
            let (_, name, unit, decimals) = PARAMETERS
                .iter()
                .copied()
                .find(|(k, ..)| *k == p.key)
                .unwrap_or((p.key, p.key, "", 6));
            let with_unit = |v: Option<f64>| match v {
                Some(v) if v.is_finite() => format!("{v:.decimals$}{unit}"),
                _ => String::new(),
            };
            let change = match p.nominal {
                Some(n) if n != 0.0 => format!("{:+.2} %", 100.0 * (p.value - n) / n),
                _ => String::new(),
            };
            vec![
                Cell::text(name),
                Cell::text(with_unit(Some(p.value))),
                Cell::text(
                    p.std
                        .map_or_else(|| "not estimated".to_owned(), |s| with_unit(Some(s))),
                ),
                Cell::text(with_unit(p.nominal)),
                Cell::text(change),
            ]
        })
        .collect()
}

fn figure_rows(c: &Calibration) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    let mut row = |name: &str, value: String, ok: Option<bool>| {
        rows.push(vec![Cell::text(name), Cell::text(value), Cell::Verdict(ok)]);
    };
    if let Some((nominal, calibrated)) = c.rms_m {
        let factor = if calibrated > 0.0 {
            format!(" ({:.1} times smaller)", nominal / calibrated)
        } else {
            String::new()
        };
        row(
            "dead-reckoning error (RMS distance to the observed poses)",
            format!(
                "nominal {} m -> calibrated {} m{factor}",
                number(Some(nominal), 3),
                number(Some(calibrated), 3)
            ),
            Some(calibrated <= nominal),
        );
    }
    if let Some(residual) = &c.residual {
        row(
            "residual over the bag (normalised, per window)",
            residual.clone(),
            c.residuals.map(|(n, cal)| cal <= n),
        );
    }
    if let Some(windows) = &c.windows {
        row("windows", windows.clone(), c.accepted.map(|a| a > 0));
    }
    if let Some(messages) = &c.messages {
        row("messages read", messages.clone(), None);
    }
    if let Some(bag) = &c.bag {
        rows.push(vec![
            Cell::text("bag"),
            Cell::Path(bag.clone()),
            Cell::Verdict(None),
        ]);
    }
    for topic in &c.topics {
        rows.push(vec![
            Cell::text("topic"),
            Cell::Path(topic.clone()),
            Cell::Verdict(None),
        ]);
    }
    rows
}

/// The whole page.
pub fn page(dir: &Path, c: &Calibration, images: &[Image]) -> String {
    let mut page = Page::new(
        "Motion model calibration report",
        &format!("output folder {}", dir.display()),
    );
    for warning in &c.warnings {
        page.paragraph(warning);
    }
    page.heading("parameters", "Calibrated parameters");
    page.table(
        "parameters-table",
        &[
            "parameter",
            "calibrated",
            "standard deviation",
            "nominal",
            "change",
        ],
        &parameter_rows(c),
    );
    page.heading("figures", "Key figures");
    page.table(
        "figures-table",
        &["figure", "value", "meets its goal"],
        &figure_rows(c),
    );
    page.figures(images);
    page.heading("file", "calibration.yaml as lockstep calibrate wrote it");
    page.pre("calibration-yaml", &c.text);
    page.finish()
}
