//! Inputs from outside -- velocity commands, run-time parameters -- checked before they touch the state, and
//! a throttled account of what was dropped.
//!
//! One NaN or overflowing command reaching the wheel arithmetic turns the wheel speeds, the pose and the
//! odometry into NaN for good (NaN never compares, so nothing brings it back). So every input is checked
//! where it enters: non-finite or out-of-range values are dropped whole, counted, and the state stays as it
//! was.

use std::collections::BTreeMap;
use std::fmt::Display;

use crate::error::{Error, Result};

/// The largest `time_scale` (simulated seconds per wall second) accepted: beyond it the loop could not keep
/// up anyway and a larger value is a typo or garbage.
pub const MAX_TIME_SCALE: f64 = 1e4;

/// Bounds on velocity commands, from cmd_vel or the rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CommandLimits {
    /// Largest accepted |linear velocity| (m/s).
    pub max_linear_mps: f64,
    /// Largest accepted |angular velocity| (rad/s).
    pub max_angular_radps: f64,
}

/// Checks a velocity command `(v, w)`; `input` names where it came from in the error. (Numbers in errors are
/// printed with `{:?}`, which writes 1e308 as `1e308`, not as 309 digits.)
pub fn check_command(input: &'static str, v_mps: f64, w_radps: f64, limits: &CommandLimits) -> Result<()> {
    let reason = if !v_mps.is_finite() || !w_radps.is_finite() {
        format!("({v_mps:?}, {w_radps:?}) is not finite")
    } else if v_mps.abs() > limits.max_linear_mps {
        format!(
            "linear velocity {v_mps:?} m/s is beyond max_linear_mps {}",
            limits.max_linear_mps
        )
    } else if w_radps.abs() > limits.max_angular_radps {
        format!(
            "angular velocity {w_radps:?} rad/s is beyond max_angular_radps {}",
            limits.max_angular_radps
        )
    } else {
        return Ok(());
    };
    Err(Error::BadInput { input, reason })
}

/// Checks a whole `geometry_msgs/Twist` (linear and angular x, y, z) and returns the `(v, w)` a diff drive
/// uses (`linear.x`, `angular.z`). Garbage in ANY component -- not finite, or beyond the limits -- drops the
/// message: a diff drive ignores the other four, but a sender that puts NaN or 1e308 there is broken and its
/// other numbers cannot be trusted either.
pub fn check_twist(linear: [f64; 3], angular: [f64; 3], limits: &CommandLimits) -> Result<(f64, f64)> {
    let within = |x: &f64, max: f64| x.is_finite() && x.abs() <= max;
    if !linear.iter().all(|x| within(x, limits.max_linear_mps))
        || !angular.iter().all(|x| within(x, limits.max_angular_radps))
    {
        return Err(Error::BadInput {
            input: "cmd_vel",
            reason: format!(
                "linear {linear:?}, angular {angular:?}: every component must be finite and within \
                 max_linear_mps {} / max_angular_radps {}",
                limits.max_linear_mps, limits.max_angular_radps
            ),
        });
    }
    Ok((linear[0], angular[2]))
}

/// Checks a requested `time_scale`: finite, in `[0, MAX_TIME_SCALE]` (0 pauses).
pub fn check_time_scale(scale: f64) -> Result<f64> {
    if scale.is_finite() && (0.0..=MAX_TIME_SCALE).contains(&scale) {
        Ok(scale)
    } else {
        Err(Error::BadInput {
            input: "time_scale",
            reason: format!("{scale:?} is not a finite number in [0, {MAX_TIME_SCALE}]"),
        })
    }
}

/// Counts dropped inputs per source and says when to log them: at most one line per `period_secs`, each with
/// the running counts, so a flood of garbage costs one line per period, not one per message. Time is passed
/// in (any monotonic seconds), which keeps it deterministic.
#[derive(Debug, Clone)]
pub struct BadInputLog {
    period_secs: f64,
    counts: BTreeMap<&'static str, u64>,
    total: u64,
    logged_total: u64,
    last_log_secs: Option<f64>,
    latest: String,
}

impl BadInputLog {
    /// A log that speaks at most once per `period_secs`.
    pub fn new(period_secs: f64) -> Self {
        BadInputLog {
            period_secs,
            counts: BTreeMap::new(),
            total: 0,
            logged_total: 0,
            last_log_secs: None,
            latest: String::new(),
        }
    }

    /// Counts one dropped input; returns the line to log if one is due.
    pub fn record(&mut self, input: &'static str, reason: impl Display, now_secs: f64) -> Option<String> {
        *self.counts.entry(input).or_insert(0) += 1;
        self.total += 1;
        self.latest = reason.to_string();
        self.flush(now_secs)
    }

    /// The line to log when inputs were dropped since the last line and the period has passed (call it
    /// regularly so that the final count of a burst is logged too).
    pub fn flush(&mut self, now_secs: f64) -> Option<String> {
        if self.total == self.logged_total {
            return None;
        }
        if let Some(last) = self.last_log_secs {
            if now_secs - last < self.period_secs {
                return None;
            }
        }
        self.last_log_secs = Some(now_secs);
        self.logged_total = self.total;
        let counts = self
            .counts
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        Some(format!(
            "dropped {} bad input(s) so far ({counts}); latest: {}",
            self.total, self.latest
        ))
    }

    /// Inputs dropped so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Inputs dropped so far from `input`.
    pub fn count(&self, input: &str) -> u64 {
        self.counts.get(input).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: CommandLimits = CommandLimits {
        max_linear_mps: 10.0,
        max_angular_radps: 5.0,
    };

    #[test]
    fn commands_must_be_finite_and_in_range() {
        assert!(check_command("cmd_vel", 10.0, -5.0, &LIMITS).is_ok());
        assert!(check_command("cmd_vel", -0.0, 0.0, &LIMITS).is_ok());
        for (v, w) in [
            (f64::NAN, 0.0),
            (0.0, f64::INFINITY),
            (f64::NEG_INFINITY, 0.0),
            (1e308, 0.0),
            (0.0, -1e308),
            (10.000001, 0.0),
            (0.0, -5.1),
        ] {
            let e = check_command("drive", v, w, &LIMITS).unwrap_err();
            assert!(e.to_string().contains("drive"), "{e}");
        }
    }

    #[test]
    fn a_twist_with_garbage_anywhere_is_dropped() {
        assert_eq!(
            check_twist([0.5, 0.0, 0.0], [0.0, 0.0, -0.3], &LIMITS).unwrap(),
            (0.5, -0.3)
        );
        for i in 0..6 {
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e308, -1e308] {
                let mut all = [0.1; 6];
                all[i] = bad;
                let r = check_twist([all[0], all[1], all[2]], [all[3], all[4], all[5]], &LIMITS);
                assert!(
                    matches!(r, Err(Error::BadInput { input: "cmd_vel", .. })),
                    "{i} {bad}: {r:?}"
                );
            }
        }
        // The limits are per component: angular.x may be up to max_angular_radps, not max_linear_mps.
        assert!(check_twist([0.0; 3], [5.0, 0.0, 0.0], &LIMITS).is_ok());
        assert!(check_twist([0.0; 3], [5.5, 0.0, 0.0], &LIMITS).is_err());
    }

    #[test]
    fn time_scale_range() {
        assert_eq!(check_time_scale(0.0).unwrap(), 0.0);
        assert_eq!(check_time_scale(MAX_TIME_SCALE).unwrap(), MAX_TIME_SCALE);
        for bad in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.5,
            1e308,
            MAX_TIME_SCALE * 1.5,
        ] {
            assert!(check_time_scale(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_log_is_throttled_and_keeps_the_running_count() {
        let mut log = BadInputLog::new(2.0);
        assert_eq!(log.flush(0.0), None, "nothing dropped, nothing to say");
        let first = log.record("cmd_vel", "x", 0.0).unwrap();
        assert!(
            first.starts_with("dropped 1 bad input(s) so far (cmd_vel: 1)"),
            "{first}"
        );
        for i in 0..99 {
            assert_eq!(log.record("cmd_vel", "y", 0.01 * f64::from(i)), None);
        }
        assert_eq!(log.record("time_scale", "nan", 1.0), None);
        assert_eq!(log.flush(1.9), None, "within the period");
        let line = log.flush(2.0).unwrap();
        assert_eq!(
            line,
            "dropped 101 bad input(s) so far (cmd_vel: 100, time_scale: 1); latest: nan"
        );
        assert_eq!(log.flush(10.0), None, "nothing new since");
        assert_eq!(
            (log.total(), log.count("cmd_vel"), log.count("other")),
            (101, 100, 0)
        );
    }
}
