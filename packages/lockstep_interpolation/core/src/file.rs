//! Interpolation files: the output of a trajectory planner, per-axis positions at a fixed
//! period.
//!
//! ```text
//! # period_s: 0.002
//! shoulder,elbow,wrist
//! 0.0,0.0,0.0
//! 0.000001,0.0,-0.000002
//! ```
//!
//! Lines starting with `#` are comments; one of them must give the period (`# period_s: <seconds>`). The first
//! other line names the joints (comma-separated); every following non-empty line is one point with one
//! finite number per joint. Every error names the line.

use std::path::{Path, PathBuf};

/// A parsed interpolation file.
#[derive(Debug, Clone, PartialEq)]
pub struct InterpolationFile {
    /// Where it was read from (for messages).
    pub path: PathBuf,
    /// Joint names, in the file's column order.
    pub joints: Vec<String>,
    /// Seconds between two points (T).
    pub period_secs: f64,
    /// Points, one position per joint each.
    pub points: Vec<Vec<f64>>,
    /// The 1-based line of each point, to cite in messages.
    pub lines: Vec<usize>,
}

/// What is wrong with a file, and where.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FileError {
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    #[error("{path}:{line}: {reason}")]
    Line {
        path: String,
        line: usize,
        reason: String,
    },
    #[error("{path}: {reason}")]
    Whole { path: String, reason: String },
}

impl InterpolationFile {
    /// Read and parse `path`.
    pub fn read(path: &Path) -> Result<Self, FileError> {
        Self::parse(path, &read_text(path)?)
    }

    /// Parse the text of a file (`path` is only used in messages and kept).
    pub fn parse(path: &Path, text: &str) -> Result<Self, FileError> {
        let table = Table::parse(path, text)?;
        let whole = |reason: &str| FileError::Whole {
            path: path.display().to_string(),
            reason: reason.to_owned(),
        };
        let period_secs = table
            .period_secs
            .ok_or_else(|| whole("no `# period_s: <seconds>` line"))?;
        Ok(Self {
            path: path.to_owned(),
            joints: table.joints,
            period_secs,
            points: table.rows,
            lines: table.lines,
        })
    }

    /// The file's duration at speed 1: (points - 1) periods.
    pub fn duration_secs(&self) -> f64 {
        (self.points.len().saturating_sub(1)) as f64 * self.period_secs
    }

    /// The linear interpolation at file time `tau` (s): k = floor(tau / T), w = tau / T - k,
    /// P = (1 - w) P_k + w P_(k+1). Before the start the first point, past the end the last.
    pub fn position_at(&self, tau: f64, out: &mut Vec<f64>) {
        out.clear();
        let last = self.points.len() - 1;
        let x = tau / self.period_secs;
        if x.is_nan() || x <= 0.0 {
            out.extend_from_slice(&self.points[0]);
            return;
        }
        let k = x.floor();
        if k as usize >= last {
            out.extend_from_slice(&self.points[last]);
            return;
        }
        let k_index = k as usize;
        let w = x - k;
        let (a, b) = (&self.points[k_index], &self.points[k_index + 1]);
        out.extend(a.iter().zip(b).map(|(a, b)| (1.0 - w) * a + w * b));
    }

    /// Text of an interpolation file (what [`Self::parse`] reads), numbers in Rust's shortest round-trip form.
    pub fn to_text(&self) -> String {
        let mut text = format!("# period_s: {}\n{}\n", self.period_secs, self.joints.join(","));
        for point in &self.points {
            let row: Vec<String> = point.iter().map(|v| format!("{v:?}")).collect();
            text.push_str(&row.join(","));
            text.push('\n');
        }
        text
    }
}

/// The rows of a file in this format, the period optional (a waypoints file for `generate` has none).
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub joints: Vec<String>,
    pub rows: Vec<Vec<f64>>,
    /// The 1-based line of each row.
    pub lines: Vec<usize>,
    pub period_secs: Option<f64>,
}

impl Table {
    /// Read and parse `path`.
    pub fn read(path: &Path) -> Result<Self, FileError> {
        Self::parse(path, &read_text(path)?)
    }

    /// Parse the text (`path` only names it in messages): joint header, one finite number per joint per row.
    pub fn parse(path: &Path, text: &str) -> Result<Self, FileError> {
        let shown = path.display().to_string();
        let at = |line: usize, reason: String| FileError::Line {
            path: shown.clone(),
            line,
            reason,
        };
        let mut period: Option<f64> = None;
        let mut joints: Option<Vec<String>> = None;
        let mut points = Vec::new();
        let mut lines = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if let Some(comment) = trimmed.strip_prefix('#') {
                if let Some(p) = period_comment(comment).map_err(|reason| at(line, reason))? {
                    if period.is_some() {
                        return Err(at(line, "period_s is given twice".into()));
                    }
                    period = Some(p);
                }
                continue;
            }
            if trimmed.is_empty() {
                continue;
            }
            let fields: Vec<&str> = trimmed.split(',').map(str::trim).collect();
            let Some(names) = &joints else {
                joints = Some(header(&fields).map_err(|reason| at(line, reason))?);
                continue;
            };
            points.push(row(&fields, names).map_err(|reason| at(line, reason))?);
            lines.push(line);
        }
        let whole = |reason: &str| FileError::Whole {
            path: shown.clone(),
            reason: reason.to_owned(),
        };
        let joints = joints.ok_or_else(|| whole("no header line naming the joints"))?;
        if points.is_empty() {
            return Err(whole("no points"));
        }
        Ok(Self {
            joints,
            rows: points,
            lines,
            period_secs: period,
        })
    }
}

/// The period a `# period_s: <value>` comment gives (`None`: another comment), within the range of periods.
fn period_comment(comment: &str) -> Result<Option<f64>, String> {
    let Some((key, value)) = comment.split_once(':') else {
        return Ok(None);
    };
    if key.trim() != "period_s" {
        return Ok(None);
    }
    let value = value.trim();
    let p: f64 = value
        .parse()
        .map_err(|_| format!("period_s `{value}` is not a number"))?;
    crate::period::PERIOD_S
        .check(p)
        .map_err(|e| format!("period_s {e}"))?;
    Ok(Some(p))
}

/// The joint names of the header line: none empty, none a number, none twice.
fn header(fields: &[&str]) -> Result<Vec<String>, String> {
    let mut seen = std::collections::BTreeSet::new();
    for name in fields {
        if name.is_empty() {
            return Err("the header has an empty joint name".into());
        }
        if name.parse::<f64>().is_ok() {
            return Err(format!(
                "the first line must name the joints, but `{name}` is a number"
            ));
        }
        if !seen.insert(*name) {
            return Err(format!("joint `{name}` is named twice"));
        }
    }
    Ok(fields.iter().map(|s| (*s).to_owned()).collect())
}

/// One point: a finite number per joint.
fn row(fields: &[&str], names: &[String]) -> Result<Vec<f64>, String> {
    if fields.len() != names.len() {
        return Err(format!(
            "{} values for {} joints ({})",
            fields.len(),
            names.len(),
            names.join(", ")
        ));
    }
    let mut point = Vec::with_capacity(fields.len());
    for (field, name) in fields.iter().zip(names) {
        let value: f64 = field
            .parse()
            .map_err(|_| format!("joint `{name}`: `{field}` is not a number"))?;
        if !value.is_finite() {
            return Err(format!("joint `{name}`: {field} is not a finite position"));
        }
        point.push(value);
    }
    Ok(point)
}

/// The text of the regular file at `path`, of at most `max_bytes`: a folder, FIFO, device or socket is refused
/// before it is opened (opening a FIFO waits for a writer; `/dev/zero` never ends).
pub fn read_regular(path: &Path, max_bytes: u64) -> Result<String, String> {
    lockstep_ranges::file::read_text(path, max_bytes).map_err(|e| e.to_string())
}

/// The largest file read (bytes): hours of points for a few joints.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

fn read_text(path: &Path) -> Result<String, FileError> {
    read_regular(path, MAX_FILE_BYTES).map_err(|reason| FileError::Io {
        path: path.display().to_string(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<InterpolationFile, FileError> {
        InterpolationFile::parse(Path::new("t.csv"), text)
    }

    #[test]
    fn parses_and_round_trips() {
        let f = parse("# made by a planner\n# period_s: 0.002\na, b\n0,1\n\n0.5,1.5\n").unwrap();
        assert_eq!(f.joints, ["a", "b"]);
        assert_eq!(f.points, [vec![0.0, 1.0], vec![0.5, 1.5]]);
        assert_eq!(f.lines, [4, 6]);
        assert_eq!(parse(&f.to_text()).unwrap().points, f.points);
    }

    #[test]
    fn special_files_are_refused_before_they_are_opened() {
        let dir = std::env::temp_dir().join(format!("lockstep_special_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo.csv");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        for (path, words) in [
            (fifo.as_path(), "not a regular file"),
            (Path::new("/dev/zero"), "not a regular file"),
            (dir.as_path(), "is a folder"),
        ] {
            let e = InterpolationFile::read(path).unwrap_err().to_string();
            assert!(e.contains(words), "{}: {e}", path.display());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn each_error_names_its_line() {
        let cases = [
            (
                "# period_s: 0.002\na,b\n1,2\n1,2,3\n",
                "t.csv:4: 3 values for 2 joints",
            ),
            (
                "# period_s: 0.002\na,b\n1,x\n",
                "t.csv:3: joint `b`: `x` is not a number",
            ),
            (
                "# period_s: 0.002\na,b\n1,NaN\n",
                "t.csv:3: joint `b`: NaN is not a finite position",
            ),
            (
                "# period_s: 0.002\na,b\ninf,1\n",
                "t.csv:3: joint `a`: inf is not a finite position",
            ),
            (
                "# period_s: -1\na\n1\n",
                "t.csv:1: period_s -1 is out of range: must be finite and in [1e-5, 10] s",
            ),
            (
                "# period_s: 1e-300\na\n1\n",
                "t.csv:1: period_s 1e-300 is out of range",
            ),
            (
                "# period_s: 0.002\n1,2\n",
                "t.csv:2: the first line must name the joints",
            ),
            ("# period_s: 0.002\na,a\n", "t.csv:2: joint `a` is named twice"),
            ("a\n1\n", "t.csv: no `# period_s"),
            ("# period_s: 0.002\na\n", "t.csv: no points"),
        ];
        for (text, expected) in cases {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.starts_with(expected), "{e:?} does not start with {expected:?}");
        }
    }
}
