//! Scripted drives: a fixed sequence of velocity commands in simulated time, so that a calibration test or a
//! demo drives the same path every run (straight, arcs at two lateral accelerations, turns in place, a
//! figure-eight...).
//!
//! A script is text, one segment per line: `v_mps w_radps duration_secs`, `#` starts a comment, blank lines
//! are skipped. Errors name `file:line`.

use std::path::Path;

use crate::error::{Error, Result};
use crate::sim::Simulator;

/// One segment: drive `(v_mps, w_radps)` for `secs`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriveSegment {
    /// Linear velocity [m/s].
    pub v_mps: f64,
    /// Angular velocity [rad/s].
    pub w_radps: f64,
    /// How long [s] (> 0).
    pub secs: f64,
}

/// A parsed drive script.
#[derive(Debug, Clone, PartialEq)]
pub struct DriveScript {
    segments: Vec<DriveSegment>,
    duration_secs: f64,
}

/// The largest drive script read.
const MAX_SCRIPT_BYTES: u64 = 16 << 20;

impl DriveScript {
    /// Parses a script; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let error = |line: usize, message: String| Error::DriveScript {
            origin: origin.to_owned(),
            line,
            message,
        };
        let mut segments = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() != 3 {
                return Err(error(
                    i + 1,
                    format!(
                        "`{line}`: expected `v_mps w_radps duration_secs`, found {} field(s)",
                        fields.len()
                    ),
                ));
            }
            let mut numbers = [0.0; 3];
            for (k, (field, name)) in fields
                .iter()
                .zip(["v_mps", "w_radps", "duration_secs"])
                .enumerate()
            {
                numbers[k] = field
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| error(i + 1, format!("{name} `{field}` is not a finite number")))?;
            }
            if numbers[2] <= 0.0 {
                return Err(error(
                    i + 1,
                    format!("duration_secs is {}; it must be > 0", numbers[2]),
                ));
            }
            segments.push(DriveSegment {
                v_mps: numbers[0],
                w_radps: numbers[1],
                secs: numbers[2],
            });
        }
        if segments.is_empty() {
            return Err(error(
                0,
                "no segment (lines of `v_mps w_radps duration_secs`)".into(),
            ));
        }
        let duration_secs = segments.iter().map(|s| s.secs).sum();
        Ok(DriveScript {
            segments,
            duration_secs,
        })
    }

    /// Reads and parses a script file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text =
            lockstep_ranges::file::read_text(path, MAX_SCRIPT_BYTES).map_err(|e| Error::DriveScript {
                origin: origin.clone(),
                line: 0,
                message: format!("cannot read: {e}"),
            })?;
        Self::parse(&text, &origin)
    }

    /// The segments, in order.
    pub fn segments(&self) -> &[DriveSegment] {
        &self.segments
    }

    /// One pass through every segment [s].
    pub fn duration_secs(&self) -> f64 {
        self.duration_secs
    }

    /// The command `elapsed_secs` after the script started; `None` once it has ended (`repeat` false).
    /// Segment boundaries belong to the later segment.
    pub fn command_at(&self, elapsed_secs: f64, repeat: bool) -> Option<(f64, f64)> {
        if elapsed_secs.is_nan() || elapsed_secs < 0.0 {
            return None;
        }
        let mut t = if repeat {
            elapsed_secs % self.duration_secs
        } else if elapsed_secs < self.duration_secs {
            elapsed_secs
        } else {
            return None;
        };
        for s in &self.segments {
            // A small tolerance so that a boundary reached by summing fixed steps starts the next segment.
            if t < s.secs - 1e-9 {
                return Some((s.v_mps, s.w_radps));
            }
            t -= s.secs;
        }
        if repeat {
            self.segments.first().map(|s| (s.v_mps, s.w_radps))
        } else {
            None
        }
    }
}

/// A drive script running in commanded mode (`drive_script`, `drive_repeat`): the node feeds its command
/// into the simulator before every step, in simulated time, so a run drives the same path every time.
#[derive(Debug, Clone)]
pub struct RunningDrive {
    script: DriveScript,
    /// The file, as the parameter named it.
    pub path: String,
    repeat: bool,
    start_secs: f64,
}

/// What feeding a drive script before a step did.
#[derive(Debug)]
pub enum DriveStep {
    /// The script's command is in force.
    Commanded,
    /// A non-repeating script has ended: the vehicle was told to stop.
    Ended,
    /// The simulator refused the script's command (outside the limits): the script must stop.
    Refused(Error),
}

impl RunningDrive {
    /// The script at `path`, started at simulated time `now_secs`; `None` for an empty path. A script needs
    /// the mode `commanded` (`mode` is the mode parameter as written); an unreadable or malformed file: the
    /// error names `file:line`.
    pub fn start(path: &str, mode: &str, repeat: bool, now_secs: f64) -> Result<Option<Self>> {
        if path.trim().is_empty() {
            return Ok(None);
        }
        if mode != "commanded" {
            return Err(Error::DriveNeedsCommanded {
                path: path.to_owned(),
                mode: mode.to_owned(),
            });
        }
        Ok(Some(RunningDrive {
            script: DriveScript::load(path)?,
            path: path.to_owned(),
            repeat,
            start_secs: now_secs,
        }))
    }

    /// The command at simulated time `now_secs`; `None` once a non-repeating script has ended.
    pub fn command(&self, now_secs: f64) -> Option<(f64, f64)> {
        self.script.command_at(now_secs - self.start_secs, self.repeat)
    }

    /// Sets the script's command for the coming step; once the script has ended, the vehicle stops.
    pub fn feed(&self, sim: &mut Simulator) -> DriveStep {
        match self.command(sim.time_secs()) {
            Some((v, w)) => match sim.set_command(v, w) {
                Ok(()) => DriveStep::Commanded,
                Err(e) => DriveStep::Refused(e),
            },
            None => {
                // Zero is always within the limits.
                let _ = sim.set_command(0.0, 0.0);
                DriveStep::Ended
            }
        }
    }

    /// One line for the log.
    pub fn describe(&self) -> String {
        format!(
            "drive script {} ({} segments, {:.1} s{}) from t={:.2} s",
            self.path,
            self.script.segments().len(),
            self.script.duration_secs(),
            if self.repeat { ", repeated" } else { "" },
            self.start_secs
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "# straight, then turn in place\n0.5 0.0 2.0\n\n0.0 0.8 1.0  # in place\n";

    #[test]
    fn segments_follow_each_other_and_repeat() {
        let s = DriveScript::parse(SCRIPT, "t.drive").unwrap();
        assert_eq!(s.segments().len(), 2);
        assert_eq!(s.duration_secs(), 3.0);
        assert_eq!(s.command_at(0.0, false), Some((0.5, 0.0)));
        assert_eq!(s.command_at(1.99, false), Some((0.5, 0.0)));
        assert_eq!(s.command_at(2.0, false), Some((0.0, 0.8)));
        assert_eq!(s.command_at(3.0, false), None);
        assert_eq!(s.command_at(3.5, true), Some((0.5, 0.0)));
        assert_eq!(s.command_at(5.5, true), Some((0.0, 0.8)));
        assert_eq!(s.command_at(-1.0, true), None);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = DriveScript::parse("0.5 0 1\n0.5 x 1\n", "a.drive")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("a.drive:2:") && e.contains("w_radps `x`"), "{e}");
        let e = DriveScript::parse("0.5 0\n", "a.drive").unwrap_err().to_string();
        assert!(e.contains("a.drive:1:") && e.contains("found 2 field(s)"), "{e}");
        let e = DriveScript::parse("0.5 0 0\n", "a.drive")
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be > 0"), "{e}");
        let e = DriveScript::parse("# nothing\n", "a.drive")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no segment"), "{e}");
        let e = DriveScript::load("/nonexistent/x.drive").unwrap_err().to_string();
        assert!(
            e.contains("/nonexistent/x.drive") && e.contains("cannot read"),
            "{e}"
        );
    }

    #[test]
    fn a_running_drive_needs_commanded_mode_and_starts_at_its_time() {
        assert!(RunningDrive::start(" ", "autonomous", false, 0.0)
            .unwrap()
            .is_none());
        let e = RunningDrive::start("a.drive", "autonomous", false, 0.0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "drive_script `a.drive` needs mode `commanded` (the mode is `autonomous`)"
        );
        let dir = std::env::temp_dir().join(format!("lockstep_drive_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("one.drive");
        std::fs::write(&path, "0.5 0.1 2.0\n").unwrap();
        let path = path.to_string_lossy().into_owned();
        let drive = RunningDrive::start(&path, "commanded", false, 10.0)
            .unwrap()
            .unwrap();
        assert_eq!(drive.command(11.0), Some((0.5, 0.1)));
        assert_eq!(drive.command(12.5), None);
        assert!(drive.describe().contains("1 segments, 2.0 s) from t=10.00 s"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
