//! What a calibration run found and wrote ([`Report`]), and the summary `lockstep calibrate` prints of it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::evaluation::Evaluation;
use super::holdout::HeldOut;
use crate::calibrator::Accepted;
use crate::history::DropCounts;
use crate::model::ModelParams;
use crate::needs::{DriveSummary, Need, Parameter};

/// Exit code of `lockstep calibrate` when no window of the drive determined any parameter (the files are
/// still written, with the nominal values).
pub const EXIT_NOTHING_ESTIMATED: i32 = 2;

/// Windows by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowCounts {
    /// New parameters.
    pub accepted: usize,
    /// Failed validation on a held-out segment.
    pub rejected: usize,
    /// Already explained (threshold 1), or nothing determinable.
    pub unchanged: usize,
    /// An observed pose jumped.
    pub skipped: usize,
    /// Not enough data yet.
    pub waiting: usize,
}

/// What a calibration run found and wrote.
#[derive(Debug, Clone)]
pub struct Report {
    /// The bag read.
    pub bag: PathBuf,
    /// Topic and type of the commands, odometry and poses.
    pub topics: [(String, String); 3],
    /// The parameters the odometry used (the starting point).
    pub nominal: ModelParams,
    /// The final accepted parameters (the nominal ones when none was accepted).
    pub params: ModelParams,
    /// Their standard deviations: radius, track width, delay, beta (0 = never estimated).
    pub std: [f64; 4],
    /// Time zero of the sample times: the first sample's stamp (ns, the header stamps' clock).
    pub time_origin_ns: i64,
    /// Length of a window (s).
    pub window_secs: f64,
    /// Windows by outcome.
    pub windows: WindowCounts,
    /// Refusals by kind (the text before its colon): how many windows, and the latest full sentence.
    pub refusals: BTreeMap<String, (usize, String)>,
    /// The last accepted update.
    pub last_accepted: Option<Accepted>,
    /// The last rejection, as a sentence.
    pub last_rejection: Option<String>,
    /// What the windows had of the driving each parameter needs.
    pub drive: DriveSummary,
    /// The parameters that stayed nominal, each with the driving that would determine it.
    pub needs: Vec<Need>,
    /// Messages read per stream (cmd_vel, odom, pose).
    pub read: [u64; 3],
    /// Messages that did not decode, per stream.
    pub undecodable: [u64; 3],
    /// Samples the history dropped (NaN, out of order).
    pub dropped: DropCounts,
    /// Nominal vs calibrated over the whole bag.
    pub evaluation: Evaluation,
    /// Nominal vs calibrated over the held-out stretch (none when off or the bag is too short).
    pub holdout: Option<HeldOut>,
    /// Remarks (a clock shift, an undecodable message).
    pub notes: Vec<String>,
    /// `calibration.yaml`.
    pub yaml_path: PathBuf,
    /// `diff_drive_controller.yaml`.
    pub controller_path: PathBuf,
    /// `trajectories.png`.
    pub png_path: PathBuf,
}

/// Decimals and unit `p` is printed with.
fn print_format(p: Parameter) -> (usize, &'static str) {
    match p {
        Parameter::WheelRadius => (6, " m"),
        Parameter::TrackWidth => (5, " m"),
        Parameter::Delay => (4, " s"),
        Parameter::CentripetalFactor => (3, ""),
    }
}

/// `p`'s value in `params` with its unit.
fn value_text(p: Parameter, params: &ModelParams) -> String {
    let (decimals, unit) = print_format(p);
    format!("{:.decimals$}{unit}", p.value(params))
}

/// `value ± std unit`, or `value unit (nominal, not estimated)` when the std is 0.
fn with_std(p: Parameter, params: &ModelParams, std: &[f64; 4]) -> String {
    let (decimals, _) = print_format(p);
    let s = std[p.index()];
    let value = value_text(p, params);
    if s > 0.0 {
        let (number, unit) = value.split_at(value.len() - print_format(p).1.len());
        format!("{number} ± {s:.decimals$}{unit}")
    } else {
        format!("{value} (nominal, not estimated)")
    }
}

impl Report {
    /// Whether no window of the drive determined any parameter (every value is the nominal one).
    pub fn nothing_estimated(&self) -> bool {
        self.drive.nothing_determined()
    }

    /// The exit code of `lockstep calibrate`: 0, or [`EXIT_NOTHING_ESTIMATED`].
    pub fn exit_code(&self) -> i32 {
        if self.nothing_estimated() {
            EXIT_NOTHING_ESTIMATED
        } else {
            0
        }
    }

    /// One line per parameter that stayed nominal: `track width stays nominal at 0.40000 m: needs ...`.
    pub fn need_lines(&self) -> Vec<String> {
        self.needs
            .iter()
            .map(|n| {
                format!(
                    "{} stays nominal at {}: {}",
                    n.parameter,
                    value_text(n.parameter, &self.params),
                    n.advice
                )
            })
            .collect()
    }

    /// What `lockstep calibrate` prints: when the drive determined nothing, `nothing could be estimated` and
    /// what would determine each parameter; then notes, counts, refusals, alarms; then the parameters and
    /// the files, and what would determine each parameter that stayed nominal.
    pub fn summary(&self) -> String {
        let d = &self.dropped;
        let w = &self.windows;
        let nothing = self.nothing_estimated();
        let mut out = String::new();
        if nothing {
            out.push_str("nothing could be estimated\n");
            out.push_str(&format!(
                "no window of the drive determined any parameter ({} looked at); {} keeps the nominal values:\n",
                match self.drive.windows {
                    1 => "1 window".to_string(),
                    n => format!("{n} windows"),
                },
                self.yaml_path.display()
            ));
            for line in self.need_lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        for note in &self.notes {
            out.push_str(&format!("note: {note}\n"));
        }
        out.push_str(&format!(
            "read {} cmd_vel, {} odom, {} pose messages; dropped (not finite / out of order): cmd_vel {}/{}, odom {}/{}, pose {}/{}; not decodable: {}\n",
            self.read[0], self.read[1], self.read[2],
            d.not_finite[0], d.out_of_order[0], d.not_finite[1], d.out_of_order[1], d.not_finite[2], d.out_of_order[2],
            self.undecodable.iter().sum::<u64>()
        ));
        out.push_str(&format!(
            "windows: {} accepted, {} rejected, {} unchanged, {} skipped, {} waiting\n",
            w.accepted, w.rejected, w.unchanged, w.skipped, w.waiting
        ));
        for (count, text) in self.refusals.values() {
            out.push_str(&format!("refused in {count} windows: {text}\n"));
        }
        if let Some(rejection) = &self.last_rejection {
            out.push_str(&format!(
                "rejected in {} windows, the last {rejection}\n",
                w.rejected
            ));
        }
        for alarm in self.last_accepted.iter().flat_map(|a| &a.alarms) {
            out.push_str(&format!("alarm: {alarm}\n"));
        }
        let e = &self.evaluation;
        let values = Parameter::ALL
            .map(|p| {
                let name = match p {
                    Parameter::CentripetalFactor => "beta",
                    _ => p.name(),
                };
                format!("{name} {}", with_std(p, &self.params, &self.std))
            })
            .join(", ");
        let mut written = vec![&self.yaml_path, &self.controller_path, &self.png_path];
        written.extend(self.holdout.as_ref().map(|h| &h.png_path));
        out.push_str(&format!(
            "{}: {values}; dead-reckoning RMS error {:.3} m -> {:.3} m; wrote {}\n",
            if nothing { "kept nominal" } else { "calibrated" },
            e.rms_error_nominal_m,
            e.rms_error_calibrated_m,
            written
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if let Some(h) = &self.holdout {
            out.push_str(&format!("{}\n", h.line()));
        }
        if !nothing && !self.needs.is_empty() {
            out.push_str("not estimated, kept nominal:\n");
            for line in self.need_lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out
    }
}
