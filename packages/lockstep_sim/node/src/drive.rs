//! The scripted drive of commanded mode (`drive_script`, `drive_repeat`): the loop feeds the script's command
//! into the simulator before every step, in simulated time, so a run drives the same path every time.

use lockstep_sim::DriveScript;

use crate::params::SimParams;

/// A running drive script.
#[derive(Debug, Clone)]
pub struct Drive {
    script: DriveScript,
    /// The file, as the parameter named it.
    pub path: String,
    repeat: bool,
    start_secs: f64,
}

impl Drive {
    /// The script the parameters name, started at simulated time `now_secs`; `None` for `drive_script` "".
    /// An unreadable or malformed file: the error names `file:line`.
    pub fn from_params(p: &SimParams, now_secs: f64) -> Result<Option<Drive>, String> {
        if p.drive_script.trim().is_empty() {
            return Ok(None);
        }
        if p.mode != "commanded" {
            return Err(format!(
                "drive_script `{}` needs mode `commanded` (the mode is `{}`)",
                p.drive_script, p.mode
            ));
        }
        let script = DriveScript::load(&p.drive_script).map_err(|e| e.to_string())?;
        Ok(Some(Drive {
            script,
            path: p.drive_script.clone(),
            repeat: p.drive_repeat,
            start_secs: now_secs,
        }))
    }

    /// The command at simulated time `now_secs`; `None` once a non-repeating script has ended.
    pub fn command(&self, now_secs: f64) -> Option<(f64, f64)> {
        self.script.command_at(now_secs - self.start_secs, self.repeat)
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
