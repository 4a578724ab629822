//! Stepping the calibrator over the bag's samples as the node steps it (each time the data is complete
//! `window_secs` further than at the last step), and counting what each step did.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use indicatif::ProgressBar;

use super::holdout;
use super::input::Sample;
use super::report::WindowCounts;
use crate::calibrator::{Accepted, Calibrator, Outcome};

/// What the steps did, for the report.
#[derive(Default)]
pub(crate) struct Tally {
    pub windows: WindowCounts,
    /// Refusals by kind (the text before its colon): how many windows, and the latest full sentence.
    pub refusals: BTreeMap<String, (usize, String)>,
    pub last_accepted: Option<Accepted>,
    pub last_rejection: Option<String>,
    pub last_waiting: Option<String>,
}

/// Feed `samples` into the calibrator's history and step it every `window_secs` of complete data.
pub(crate) fn step_windows(
    calibrator: &mut Calibrator,
    samples: &[Sample],
    window_secs: f64,
    bar: &ProgressBar,
) -> Tally {
    let mut tally = Tally::default();
    let mut last_step: Option<f64> = None;
    for sample in samples {
        // A dropped sample is counted by the history.
        let h = calibrator.history_mut();
        let _ = match *sample {
            Sample::Command(c) => h.push_command(c),
            Sample::Odometry(o) => h.push_odom(o),
            Sample::Pose(p) => h.push_pose(p),
        };
        bar.inc(1);
        let Some(until) = calibrator.history().complete_until() else {
            continue;
        };
        let base = *last_step.get_or_insert(until);
        if until - base < window_secs - 1e-9 {
            continue;
        }
        last_step = Some(until);
        tally.count(calibrator.step(), until);
    }
    tally
}

impl Tally {
    /// Count the outcome of the step at `until` (data time, s).
    fn count(&mut self, outcome: Outcome, until: f64) {
        let refused: &[String] = match &outcome {
            Outcome::Accepted(a) => &a.refused,
            Outcome::Unchanged { refused, .. } => refused,
            _ => &[],
        };
        for r in refused {
            let kind = r.split(':').next().unwrap_or(r).to_string();
            let entry = self.refusals.entry(kind).or_insert((0, String::new()));
            entry.0 += 1;
            entry.1.clone_from(r);
        }
        let windows = &mut self.windows;
        match outcome {
            Outcome::Waiting(why) => {
                windows.waiting += 1;
                self.last_waiting = Some(why);
            }
            Outcome::Unchanged { .. } => windows.unchanged += 1,
            Outcome::Skipped(_) => windows.skipped += 1,
            Outcome::Rejected {
                segment, threshold2, ..
            } => {
                windows.rejected += 1;
                self.last_rejection = Some(format!(
                    "at t={until:.1} s: the update did not explain the earlier, held-out driving of {:.1}-{:.1} s (residual {:.2}, below {threshold2} needed)",
                    segment.t0_secs, segment.t1_secs, segment.residual
                ));
            }
            Outcome::Accepted(a) => {
                windows.accepted += 1;
                self.last_accepted = Some(a);
            }
        }
    }

    /// Fails, saying why, when no window was stepped past waiting for data.
    pub(crate) fn ensure_stepped(&self, window_secs: f64, plan: &holdout::Plan) -> Result<()> {
        let w = &self.windows;
        let stepped = w.accepted + w.rejected + w.unchanged + w.skipped;
        if stepped > 0 {
            return Ok(());
        }
        match &self.last_waiting {
            Some(why) => bail!(
                "no usable data: no window could be calibrated: the calibrator waited at each of its {} steps, the last time because {why}{}",
                w.waiting,
                plan.hint()
            ),
            None => bail!(
                "no usable data: no window could be calibrated: the complete data (odometry and poses both) spans less than one window of {} s{}",
                window_secs,
                plan.hint()
            ),
        }
    }
}
