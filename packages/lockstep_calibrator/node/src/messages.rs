//! Building the node's messages from the calibrator's outcomes.

use lockstep_calibrator::{Accepted, ModelParams, Need, Outcome, SegmentCheck};
use lockstep_ros::time::secs_to_time;
use r2r::diagnostic_msgs::msg::{DiagnosticArray, DiagnosticStatus, KeyValue};
use r2r::lockstep_interfaces::msg::{CalibrationResult, CalibrationSegment, CalibrationStatus};

use crate::state::State;

/// The outcome's name and a sentence for people.
pub fn describe(o: &Outcome) -> (&'static str, String) {
    match o {
        Outcome::Waiting(why) => ("waiting", why.clone()),
        Outcome::Unchanged {
            residual,
            threshold1,
            refused,
        } => (
            "unchanged",
            if residual < threshold1 {
                format!(
                    "residual {residual:.3} is below threshold 1 ({threshold1:.3}) and the estimate accumulated so far is not significantly different: parameters kept"
                )
            } else {
                format!(
                    "nothing the window determines (residual {residual:.3}): {}",
                    refused.join("; ")
                )
            },
        ),
        Outcome::Skipped(why) => ("skipped", why.clone()),
        Outcome::Rejected {
            segment,
            threshold2,
            ..
        } => (
            "rejected",
            format!(
                "validation segment [{:.2} s, {:.2} s]: residual {:.3} is not below threshold 2 ({threshold2:.3})",
                segment.t0_secs, segment.t1_secs, segment.residual
            ),
        ),
        Outcome::Accepted(a) => (
            "accepted",
            format!(
                "radius {:.5} m, track {:.4} m, delay {:.3} s, beta {:.3}; residual {:.3} -> {:.3}",
                a.params.wheel_radius_m,
                a.params.track_width_m,
                a.params.delay_secs,
                a.params.centripetal_factor,
                a.residual_before,
                a.residual_after
            ),
        ),
    }
}

/// `reason`, then each parameter still nominal with the driving that would determine it
/// (`...; still nominal: track width: needs turns in place of at least 0.5 rad ...; delay: needs ...`).
pub fn with_needs(reason: String, needs: &[Need]) -> String {
    if needs.is_empty() {
        return reason;
    }
    let needs: Vec<String> = needs.iter().map(Need::to_string).collect();
    format!("{reason}; still nominal: {}", needs.join("; "))
}

/// `~/status` after a step: the reason says, after what the step did, what driving each parameter still
/// nominal needs (not while waiting for data: then data, not driving, is missing).
pub fn status(s: &State, outcome: &Outcome, t_secs: f64) -> CalibrationStatus {
    let (name, reason) = describe(outcome);
    let reason = match outcome {
        Outcome::Waiting(_) => reason,
        _ => with_needs(reason, &s.calibrator.needs()),
    };
    let (residual, threshold1, refused) = match outcome {
        Outcome::Unchanged {
            residual,
            threshold1,
            refused,
        } => (*residual, *threshold1, refused.clone()),
        Outcome::Accepted(a) => (a.residual_before, f64::NAN, a.refused.clone()),
        _ => (f64::NAN, f64::NAN, Vec::new()),
    };
    let d = s.calibrator.history().dropped();
    CalibrationStatus {
        stamp: secs_to_time(t_secs),
        outcome: name.into(),
        reason,
        residual,
        threshold1,
        refused,
        windows_accepted: s.windows.accepted,
        windows_rejected: s.windows.rejected,
        windows_unchanged: s.windows.unchanged,
        windows_skipped: s.windows.skipped,
        windows_waiting: s.windows.waiting,
        cmd_vel_not_finite: d.not_finite[0],
        odom_not_finite: d.not_finite[1],
        pose_not_finite: d.not_finite[2],
        cmd_vel_out_of_order: d.out_of_order[0],
        odom_out_of_order: d.out_of_order[1],
        pose_out_of_order: d.out_of_order[2],
        cmd_vel_received: s.received[0],
        odom_received: s.received[1],
        pose_received: s.received[2],
    }
}

fn segment(c: &SegmentCheck, threshold2: f64) -> CalibrationSegment {
    CalibrationSegment {
        t0_secs: c.t0_secs,
        t1_secs: c.t1_secs,
        residual: c.residual,
        passed: c.residual < threshold2,
    }
}

/// The nominal parameters (at start, after a reset): `accepted` false.
pub fn nominal(p: &ModelParams, t_secs: f64) -> CalibrationResult {
    CalibrationResult {
        stamp: secs_to_time(t_secs),
        accepted: false,
        wheel_radius_m: p.wheel_radius_m,
        track_width_m: p.track_width_m,
        delay_secs: p.delay_secs,
        centripetal_factor: p.centripetal_factor,
        left_wheel_radius_m: p.left_radius_m(),
        right_wheel_radius_m: p.right_radius_m(),
        wheel_radius_asymmetry: p.wheel_radius_asymmetry,
        lateral_slip_s: p.lateral_slip_s,
        residual_before: f64::NAN,
        residual_after: f64::NAN,
        threshold2: f64::NAN,
        beta_unconstrained: f64::NAN,
        ..CalibrationResult::default()
    }
}

/// An accepted update.
pub fn accepted(a: &Accepted, threshold2: f64, t_secs: f64) -> CalibrationResult {
    CalibrationResult {
        stamp: secs_to_time(t_secs),
        accepted: true,
        wheel_radius_m: a.params.wheel_radius_m,
        track_width_m: a.params.track_width_m,
        delay_secs: a.params.delay_secs,
        centripetal_factor: a.params.centripetal_factor,
        wheel_radius_std_m: a.std[0],
        track_width_std_m: a.std[1],
        delay_std_secs: a.std[2],
        centripetal_factor_std: a.std[3],
        left_wheel_radius_m: a.params.left_radius_m(),
        right_wheel_radius_m: a.params.right_radius_m(),
        wheel_radius_asymmetry: a.params.wheel_radius_asymmetry,
        wheel_radius_asymmetry_std: a.asymmetry_std,
        lateral_slip_s: a.params.lateral_slip_s,
        lateral_slip_std: a.lateral_slip_std,
        residual_before: a.residual_before,
        residual_after: a.residual_after,
        threshold2,
        validation: a.validation.iter().map(|c| segment(c, threshold2)).collect(),
        refused: a.refused.clone(),
        beta_unconstrained: a.beta_wants_negative.unwrap_or(f64::NAN),
        alarms: a.alarms.clone(),
        pushed: false,
        push_result: String::new(),
    }
}

/// `/diagnostics` for an accepted update: WARN with the alarms, or OK.
pub fn diagnostics(node_name: &str, a: &Accepted, t_secs: f64) -> DiagnosticArray {
    let value = |key: &str, v: f64| KeyValue {
        key: key.into(),
        value: format!("{v}"),
    };
    let warn = !a.alarms.is_empty();
    DiagnosticArray {
        header: r2r::std_msgs::msg::Header {
            stamp: secs_to_time(t_secs),
            frame_id: String::new(),
        },
        status: vec![DiagnosticStatus {
            level: if warn {
                DiagnosticStatus::WARN as u8
            } else {
                DiagnosticStatus::OK as u8
            },
            name: format!("{node_name}: motion model drift"),
            message: if warn {
                a.alarms.join("; ")
            } else {
                "accepted parameters within the drift limit of nominal".into()
            },
            hardware_id: String::new(),
            values: vec![
                value("wheel_radius_m", a.params.wheel_radius_m),
                value("track_width_m", a.params.track_width_m),
                value("delay_secs", a.params.delay_secs),
                value("centripetal_factor", a.params.centripetal_factor),
            ],
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_calibrator::{Calibrator, Config};

    fn state() -> State {
        State::new(Calibrator::new(Config::default(), ModelParams::default()), 1.0)
    }

    #[test]
    fn the_status_reason_names_the_driving_each_nominal_parameter_needs() {
        let s = state();
        let unchanged = Outcome::Unchanged {
            residual: 0.9,
            threshold1: f64::NAN,
            refused: vec!["nothing determined: standing still".into()],
        };
        let reason = status(&s, &unchanged, 1.0).reason;
        let (what, needs) = reason.split_once("; still nominal: ").expect(&reason);
        assert!(what.starts_with("nothing the window determines"), "{reason}");
        let needs: Vec<&str> = needs.split("; ").collect();
        assert!(
            needs[0].starts_with("wheel radius: needs straight runs of at least 0.3 m")
                && needs
                    .iter()
                    .any(|n| n.starts_with("track width: needs turns in place of at least 0.5 rad"))
                && needs.iter().any(|n| n.starts_with("delay: needs command steps"))
                && needs
                    .iter()
                    .any(|n| n.starts_with("centripetal factor (beta): needs turns")),
            "{reason}"
        );
        // While waiting, data is missing, not driving: the reason says only that.
        let waiting = Outcome::Waiting("no odometry and observed pose yet".into());
        assert_eq!(
            status(&s, &waiting, 1.0).reason,
            "no odometry and observed pose yet"
        );
    }
}
