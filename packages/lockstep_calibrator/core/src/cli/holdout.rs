//! The held-out stretch: the last `--holdout-secs` of the bag are not given to the calibrator; afterwards the
//! wheel motion of that stretch is dead-reckoned with the nominal and with the calibrated parameters from its
//! first observed pose and compared with the observed poses (`holdout.png`, one line of the report), an
//! honest check of the calibration on driving it never saw.

use std::path::PathBuf;

use super::evaluation::Evaluation;

/// What to hold out of a bag whose samples span `[0, bag_secs]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Plan {
    /// `--holdout-secs 0`.
    Off,
    /// The bag is shorter than twice the held-out stretch: all of it calibrates.
    TooShort { bag_secs: f64, holdout_secs: f64 },
    /// Calibrate on the data before `t0_secs`, check on `[t0_secs, t1_secs]`.
    Stretch { t0_secs: f64, t1_secs: f64 },
}

impl Plan {
    pub(crate) fn new(holdout_secs: f64, bag_secs: f64) -> Self {
        if holdout_secs <= 0.0 {
            Plan::Off
        } else if bag_secs < 2.0 * holdout_secs {
            Plan::TooShort {
                bag_secs,
                holdout_secs,
            }
        } else {
            Plan::Stretch {
                t0_secs: bag_secs - holdout_secs,
                t1_secs: bag_secs,
            }
        }
    }

    /// Samples stamped before this go to the calibrator.
    pub(crate) fn calibrate_before(&self) -> f64 {
        match *self {
            Plan::Stretch { t0_secs, .. } => t0_secs,
            _ => f64::INFINITY,
        }
    }

    /// Said to the user when there is no held-out stretch although one was asked for.
    pub(crate) fn note(&self) -> Option<String> {
        match *self {
            Plan::TooShort {
                bag_secs,
                holdout_secs,
            } => Some(format!(
                "no held-out check: the bag's {bag_secs:.1} s are less than twice --holdout-secs {holdout_secs} s, so all of it went into the calibration"
            )),
            _ => None,
        }
    }

    /// Appended to "no window could be calibrated" when the held-out stretch took data away.
    pub(crate) fn hint(&self) -> String {
        match *self {
            Plan::Stretch { t0_secs, t1_secs } => format!(
                " (the last {:.1} s of the bag were held out to check the result: --holdout-secs 0 calibrates on all of it)",
                t1_secs - t0_secs
            ),
            _ => String::new(),
        }
    }
}

/// The check on the held-out stretch.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldOut {
    /// Start of the stretch (s since the first sample).
    pub t0_secs: f64,
    /// Its end: the bag's last sample.
    pub t1_secs: f64,
    /// Dead reckoning over it from its first observed pose, nominal vs calibrated.
    pub evaluation: Evaluation,
    /// `holdout.png`.
    pub png_path: PathBuf,
}

impl HeldOut {
    /// `held-out 130.0-150.0 s: position RMS error 0.512 m nominal, 0.013 m calibrated` (printed, and a
    /// comment in calibration.yaml).
    pub fn line(&self) -> String {
        let e = &self.evaluation;
        let stretch = format!("held-out {:.1}-{:.1} s", self.t0_secs, self.t1_secs);
        if e.observed.is_empty() {
            format!("{stretch}: no observed pose with odometry before it, nothing to compare")
        } else {
            format!(
                "{stretch}: position RMS error {:.3} m nominal, {:.3} m calibrated",
                e.rms_error_nominal_m, e.rms_error_calibrated_m
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bag_shorter_than_twice_the_stretch_is_all_calibration() {
        assert_eq!(Plan::new(0.0, 100.0), Plan::Off);
        assert_eq!(Plan::new(20.0, 100.0).calibrate_before(), 80.0);
        assert_eq!(
            Plan::new(20.0, 40.0),
            Plan::Stretch {
                t0_secs: 20.0,
                t1_secs: 40.0
            }
        );
        let short = Plan::new(20.0, 39.9);
        assert_eq!(short.calibrate_before(), f64::INFINITY);
        assert!(short
            .note()
            .unwrap()
            .contains("39.9 s are less than twice --holdout-secs 20 s"));
        assert!(Plan::Off.note().is_none() && Plan::Off.hint().is_empty());
    }
}
