//! Where a sequence of velocity commands takes the robot: the base controller turns each command into
//! wheel speeds with the parameters it uses (the nominal ones), the command takes effect the actual delay
//! later (the wheels stand still before), and the wheels move the robot with the actual wheel radius, track
//! width and centripetal factor. What the calibrator's `~/predict` service answers.

use crate::model::{ModelParams, Pose};

/// Longest command sequence (s).
pub const MAX_COMMANDS_SECS: f64 = 3600.0;
/// Most predicted poses.
pub const MAX_SAMPLES: usize = 100_000;
/// The sample period when none is given (s).
pub const DEFAULT_SAMPLE_PERIOD_SECS: f64 = 0.1;
/// Longest step of the integration (s).
const SUBSTEP_SECS: f64 = 0.01;

/// Why a prediction was refused; the message names the field (and its index) as the request spells it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PredictError {
    /// A value is NaN or infinite.
    #[error("{field}: {value} is not finite")]
    NotFinite {
        /// The field, with its index (`command_v_mps[2]`).
        field: String,
        /// Its value.
        value: f64,
    },
    /// A duration or the sample period is below zero.
    #[error("{field}: {value} is negative")]
    Negative {
        /// The field, with its index.
        field: String,
        /// Its value.
        value: f64,
    },
    /// The command arrays differ in length.
    #[error(
        "command_v_mps, command_w_radps and command_duration_s must have one entry per command each; they \
         have {v}, {w} and {duration}"
    )]
    Lengths {
        /// Entries of command_v_mps.
        v: usize,
        /// Entries of command_w_radps.
        w: usize,
        /// Entries of command_duration_s.
        duration: usize,
    },
    /// The durations sum to more than [`MAX_COMMANDS_SECS`].
    #[error("command_duration_s: the durations sum to {total_secs} s, more than {MAX_COMMANDS_SECS} s")]
    TooLong {
        /// Their sum (s).
        total_secs: f64,
    },
    /// More than [`MAX_SAMPLES`] poses.
    #[error(
        "sample_period_s: {period_secs} s over {span_secs} s makes {samples} poses, more than {MAX_SAMPLES}; \
         take a longer period"
    )]
    TooManySamples {
        /// The sample period (s).
        period_secs: f64,
        /// The predicted span (s).
        span_secs: f64,
        /// The poses it would make.
        samples: f64,
    },
    /// A velocity no robot is commanded to (beyond [`MAX_COMMAND`]).
    #[error("{field}: {value:?} is beyond +-{MAX_COMMAND}, not a velocity a base is commanded")]
    OutOfRange {
        /// The field, with its index.
        field: String,
        /// Its value.
        value: f64,
    },
    /// The model's parameters cannot move a robot (a radius or track width not above zero).
    #[error("{which} parameters: {field} is {value}; it must be finite and > 0")]
    BadParams {
        /// `nominal` or `calibrated`.
        which: &'static str,
        /// The parameter.
        field: &'static str,
        /// Its value.
        value: f64,
    },
}

/// The largest |v| (m/s) or |w| (rad/s) of a command to predict.
pub const MAX_COMMAND: f64 = 1000.0;

/// The commands `(v m/s, w rad/s, duration s)` of three parallel arrays, checked: equal lengths, finite
/// values, durations not negative.
pub fn commands_from_arrays(
    v_mps: &[f64],
    w_radps: &[f64],
    duration_s: &[f64],
) -> Result<Vec<(f64, f64, f64)>, PredictError> {
    if v_mps.len() != w_radps.len() || v_mps.len() != duration_s.len() {
        return Err(PredictError::Lengths {
            v: v_mps.len(),
            w: w_radps.len(),
            duration: duration_s.len(),
        });
    }
    let commands: Vec<_> = (v_mps.iter().zip(w_radps).zip(duration_s))
        .map(|((v, w), d)| (*v, *w, *d))
        .collect();
    check_commands(&commands)?;
    Ok(commands)
}

fn finite(field: impl FnOnce() -> String, value: f64) -> Result<(), PredictError> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(PredictError::NotFinite {
            field: field(),
            value,
        })
    }
}

fn check_commands(commands: &[(f64, f64, f64)]) -> Result<f64, PredictError> {
    let mut total_secs = 0.0;
    for (i, &(v, w, d)) in commands.iter().enumerate() {
        finite(|| format!("command_v_mps[{i}]"), v)?;
        finite(|| format!("command_w_radps[{i}]"), w)?;
        finite(|| format!("command_duration_s[{i}]"), d)?;
        for (field, value) in [("command_v_mps", v), ("command_w_radps", w)] {
            if value.abs() > MAX_COMMAND {
                return Err(PredictError::OutOfRange {
                    field: format!("{field}[{i}]"),
                    value,
                });
            }
        }
        if d < 0.0 {
            return Err(PredictError::Negative {
                field: format!("command_duration_s[{i}]"),
                value: d,
            });
        }
        total_secs += d;
    }
    if total_secs > MAX_COMMANDS_SECS {
        return Err(PredictError::TooLong { total_secs });
    }
    Ok(total_secs)
}

fn check_params(which: &'static str, p: &ModelParams) -> Result<(), PredictError> {
    for (field, value, positive) in [
        ("wheel_radius_m", p.wheel_radius_m, true),
        ("track_width_m", p.track_width_m, true),
        ("delay_secs", p.delay_secs, false),
        ("centripetal_factor", p.centripetal_factor, false),
    ] {
        if !value.is_finite() || (positive && value <= 0.0) || value < 0.0 {
            return Err(PredictError::BadParams { which, field, value });
        }
    }
    Ok(())
}

/// The poses `(t s, pose)` the commands `(v, w, duration)` lead to from `start` at t = 0, every
/// `sample_period_s` (0: [`DEFAULT_SAMPLE_PERIOD_SECS`]) up to the end of the commands plus the delay (that
/// end included). The base turns each command into wheel speeds with `nominal`; the wheels turn
/// `actual.delay_secs` later and move the robot with `actual` (within a command the wheel speeds are
/// constant: each step of at most 10 ms is the model's arc).
pub fn predict_commands(
    nominal: &ModelParams,
    actual: &ModelParams,
    start: Pose,
    commands: &[(f64, f64, f64)],
    sample_period_s: f64,
) -> Result<Vec<(f64, Pose)>, PredictError> {
    check_params("nominal", nominal)?;
    check_params("calibrated", actual)?;
    finite(|| "start.x".into(), start.x_m)?;
    finite(|| "start.y".into(), start.y_m)?;
    finite(|| "start.theta".into(), start.yaw_rad)?;
    finite(|| "sample_period_s".into(), sample_period_s)?;
    if sample_period_s < 0.0 {
        return Err(PredictError::Negative {
            field: "sample_period_s".into(),
            value: sample_period_s,
        });
    }
    let period = if sample_period_s == 0.0 {
        DEFAULT_SAMPLE_PERIOD_SECS
    } else {
        sample_period_s
    };
    let span_secs = check_commands(commands)? + actual.delay_secs;
    // The sample times k * period up to the end, and the end itself when it falls between two.
    let grid = (span_secs / period * (1.0 + 1e-12)).floor();
    let samples = grid + 2.0;
    if samples > MAX_SAMPLES as f64 {
        return Err(PredictError::TooManySamples {
            period_secs: period,
            span_secs,
            samples,
        });
    }
    let mut times: Vec<f64> = (0..=grid as usize).map(|k| k as f64 * period).collect();
    if span_secs - grid * period > 1e-9 {
        times.push(span_secs);
    }

    // Wheel speeds over time: standing still for the delay, then each command's.
    let mut pieces = Vec::with_capacity(commands.len() + 1);
    pieces.push((actual.delay_secs, (0.0, 0.0)));
    pieces.extend(commands.iter().map(|&(v, w, d)| (d, nominal.wheel_speeds(v, w))));
    let mut out = Vec::with_capacity(times.len());
    let mut pose = start;
    let (mut t, mut piece, mut piece_end) = (0.0, 0, pieces[0].0);
    for &sample_t in &times {
        while t < sample_t - 1e-12 {
            while piece + 1 < pieces.len() && piece_end <= t + 1e-12 {
                piece += 1;
                piece_end += pieces[piece].0;
            }
            let until = sample_t.min(piece_end).min(t + SUBSTEP_SECS).max(t);
            let dt = if until > t { until - t } else { sample_t - t };
            let (left, right) = pieces[piece].1;
            pose = pose.compose(actual.motion(left * dt, right * dt, dt));
            t += dt;
        }
        out.push((sample_t, pose));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn a_five_percent_larger_radius_goes_five_percent_farther() {
        let nominal = ModelParams::default();
        let actual = ModelParams {
            wheel_radius_m: nominal.wheel_radius_m * 1.05,
            ..nominal
        };
        let commands = [(0.5, 0.0, 10.0)];
        let same = predict_commands(&nominal, &nominal, Pose::default(), &commands, 0.0).unwrap();
        let larger = predict_commands(&nominal, &actual, Pose::default(), &commands, 0.0).unwrap();
        assert_eq!(same.len(), 101, "0, 0.1, ..., 10 s");
        let (t, end) = larger[100];
        assert!(close(t, 10.0, 1e-9));
        assert!(close(same[100].1.x_m, 5.0, 1e-9), "{:?}", same[100]);
        assert!(
            close(end.x_m, 5.25, 1e-9) && close(end.y_m, 0.0, 1e-12),
            "{end:?}"
        );
    }

    #[test]
    fn a_velocity_no_base_takes_is_refused_naming_the_field() {
        let p = ModelParams::default();
        let e = predict_commands(&p, &p, Pose::default(), &[(1e308, 0.0, 1.0)], 0.0).unwrap_err();
        assert!(
            e.to_string().starts_with("command_v_mps[0]: 1e308 is beyond"),
            "{e}"
        );
        let e = predict_commands(&p, &p, Pose::default(), &[(1.0, -2e3, 1.0)], 0.0).unwrap_err();
        assert!(
            e.to_string().starts_with("command_w_radps[0]: -2000.0 is beyond"),
            "{e}"
        );
    }

    #[test]
    fn the_delay_shifts_the_motion_and_the_end() {
        let nominal = ModelParams::default();
        let delayed = ModelParams {
            delay_secs: 0.25,
            ..nominal
        };
        let start = Pose {
            x_m: 1.0,
            y_m: -2.0,
            yaw_rad: 0.5,
        };
        let commands = [(0.4, 0.3, 2.0), (0.0, -1.0, 1.0)];
        let now = predict_commands(&nominal, &nominal, start, &commands, 0.05).unwrap();
        let later = predict_commands(&nominal, &delayed, start, &commands, 0.05).unwrap();
        // Nothing moves during the delay; then the same poses 0.25 s (5 samples) later.
        assert!(later[..6].iter().all(|(_, p)| *p == start));
        for (k, (t, p)) in now.iter().enumerate() {
            let (t_later, p_later) = later[k + 5];
            assert!(close(t_later, t + 0.25, 1e-9));
            assert!(
                close(p.x_m, p_later.x_m, 1e-9)
                    && close(p.y_m, p_later.y_m, 1e-9)
                    && close(p.yaw_rad, p_later.yaw_rad, 1e-9),
                "{t}: {p:?} vs {p_later:?}"
            );
        }
        assert!(close(later.last().unwrap().0, 3.25, 1e-9));
        // The turn in place: 1 rad at the end of an arc of 0.6 rad.
        assert!(close(now.last().unwrap().1.yaw_rad, 0.5 + 0.6 - 1.0, 1e-9));
    }

    #[test]
    fn the_end_is_a_sample_even_off_the_grid() {
        let p = ModelParams::default();
        let out = predict_commands(&p, &p, Pose::default(), &[(0.1, 0.0, 0.25)], 0.1).unwrap();
        let times: Vec<f64> = out.iter().map(|(t, _)| *t).collect();
        assert_eq!(times.len(), 4);
        assert!(close(times[3], 0.25, 1e-12) && close(out[3].1.x_m, 0.025, 1e-12));
        let none = predict_commands(&p, &p, Pose::default(), &[], 0.0).unwrap();
        assert_eq!(none, vec![(0.0, Pose::default())]);
    }

    #[test]
    fn bad_requests_name_the_field_and_index() {
        let p = ModelParams::default();
        let err = |c: &[(f64, f64, f64)], period: f64| {
            predict_commands(&p, &p, Pose::default(), c, period)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(
                &[
                    (0.1, 0.0, 1.0),
                    (0.0, 0.0, 1.0),
                    (0.0, 0.0, 2.0),
                    (0.2, 0.0, -1.0)
                ],
                0.0
            ),
            "command_duration_s[3]: -1 is negative"
        );
        assert_eq!(
            err(&[(0.1, 0.0, 1.0), (f64::NAN, 0.0, 1.0)], 0.0),
            "command_v_mps[1]: NaN is not finite"
        );
        assert_eq!(
            err(&[(0.1, f64::INFINITY, 1.0)], 0.0),
            "command_w_radps[0]: inf is not finite"
        );
        assert!(err(&[(0.1, 0.0, 3000.0), (0.1, 0.0, 601.0)], 0.0)
            .starts_with("command_duration_s: the durations sum to 3601 s, more than 3600 s"));
        assert!(err(&[(0.1, 0.0, 3600.0)], 0.01).starts_with("sample_period_s: 0.01 s over 3600 s"));
        assert_eq!(err(&[], -0.1), "sample_period_s: -0.1 is negative");
        let lengths = commands_from_arrays(&[0.1, 0.2], &[0.0], &[1.0, 1.0]).unwrap_err();
        assert!(lengths.to_string().contains("they have 2, 1 and 2"), "{lengths}");
        let e = commands_from_arrays(&[0.1], &[0.0], &[f64::NAN]).unwrap_err();
        assert_eq!(e.to_string(), "command_duration_s[0]: NaN is not finite");
        let start = Pose {
            y_m: f64::NAN,
            ..Pose::default()
        };
        let e = predict_commands(&p, &p, start, &[], 0.0).unwrap_err();
        assert_eq!(e.to_string(), "start.y: NaN is not finite");
        let flat = ModelParams {
            wheel_radius_m: 0.0,
            ..p
        };
        let e = predict_commands(&p, &flat, Pose::default(), &[], 0.0).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("calibrated parameters: wheel_radius_m is 0"),
            "{e}"
        );
    }

    #[test]
    fn the_base_uses_nominal_wheel_speeds_and_the_ground_the_actual_track() {
        // A base that believes the track is 0.4 m turns its wheels for 1 rad; a 0.384 m track turns more.
        let nominal = ModelParams::default();
        let actual = ModelParams {
            track_width_m: 0.384,
            ..nominal
        };
        let out = predict_commands(&nominal, &actual, Pose::default(), &[(0.0, 1.0, 1.0)], 0.0).unwrap();
        let yaw = out.last().unwrap().1.yaw_rad;
        assert!(close(yaw, 0.4 / 0.384, 1e-9), "{yaw}");
    }
}
