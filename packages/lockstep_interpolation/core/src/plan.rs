//! Planning changes of the speed factor: pause (ramp s to 0 along the path), resume, speed override and
//! cancel, each checked by running a copy of the stream through it (see [`Stream::try_change`]), so a plan
//! accepted never takes an axis over its velocity, acceleration or jerk limit at the output period.
//!
//! The lower bound comes first: t_min = max_i |v_i| / a_i,max from the commanded velocities at the instant
//! (with jerk limits, the S-curve's `v/a + a/j` or `2 sqrt(v/j)`). It ignores that the path curves while the
//! robot slows down (a_i = p_i'' tau'^2 + p_i' tau''), so the shortest feasible ramp, t_feasible, is found by
//! simulation from t_min upwards. When the path itself is at an acceleration limit at that instant, no ramp
//! can start there; the ramp then starts a few ticks later and the answer says so (`delay_secs`).

use crate::limits::Bound;
use crate::monitor::{Monitor, Violation};
use crate::ramp::axis_stop_secs;
use crate::stream::{Change, Phase, Stream};

/// What a pause, resume or speed change will do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Seconds before the ramp starts (0 unless the path was at a limit at the instant asked).
    pub delay_secs: f64,
    /// Seconds the ramp of s takes.
    pub ramp_secs: f64,
    /// s before and after.
    pub from: f64,
    pub to: f64,
    /// The lower bound t_min from the velocities at the instant.
    pub t_min_secs: f64,
    /// The shortest delay + ramp that the simulation found within every limit.
    pub t_feasible_secs: f64,
}

impl Plan {
    /// Nothing to ramp: s is already 0 (a cancel while paused) or only the factor to resume to changed.
    pub const NOTHING: Plan = Plan {
        delay_secs: 0.0,
        ramp_secs: 0.0,
        from: 0.0,
        to: 0.0,
        t_min_secs: 0.0,
        t_feasible_secs: 0.0,
    };

    /// Seconds until s reaches `to`.
    pub fn total_secs(&self) -> f64 {
        self.delay_secs + self.ramp_secs
    }
}

/// Why a request was refused (the node answers with this and keeps playing).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("a stop time of {requested_secs:.4} s is too short: t_min = {t_min_secs:.4} s (each axis's change of velocity within its {bound}), t_feasible = {t_feasible_secs:.4} s (the ramp along this stretch of path within every limit)")]
    TooShort {
        requested_secs: f64,
        t_min_secs: f64,
        t_feasible_secs: f64,
        /// The limits t_min comes from: acceleration, and jerk when an axis has a jerk limit.
        bound: Bound,
    },
    /// Below the lower bound: refused at once, before any search for the shortest feasible ramp.
    #[error("a stop time of {requested_secs:.4} s is below t_min = {t_min_secs:.4} s, the least any ramp needs (each axis's change of velocity within its {bound}); pause without a stop time to get the shortest feasible stop")]
    BelowMinimum {
        requested_secs: f64,
        t_min_secs: f64,
        bound: Bound,
    },
    #[error("speed factor {requested} is above s_max = {s_max:.4}, the largest this file allows within the joint limits")]
    AboveMax { requested: f64, s_max: f64 },
    #[error("{0}")]
    Invalid(String),
    #[error("no ramp within {searched_secs:.1} s keeps every axis within its limits ({violation})")]
    Infeasible { searched_secs: f64, violation: String },
}

/// Ticks at the start of a section that [`s_max`] leaves to [`start`]'s ramp.
const START_TICKS: u32 = 3;
/// Longest ramp searched (s).
const MAX_RAMP_SECS: f64 = 60.0;
/// Growth of the ramp duration between two tries, before the bisection.
const GROWTH: f64 = 1.25;

fn describe(v: &Violation, stream: &Stream) -> String {
    format!(
        "joint `{}` would need {} {:.4}, over its limit {:.4}",
        stream.file().joints[v.axis],
        v.quantity,
        v.value,
        v.limit
    )
}

/// The S-curve's jerk phase for a ramp of `duration` when some axis has a jerk limit (else 0: linear).
fn jerk_secs(stream: &Stream, duration: f64) -> f64 {
    let ratio = stream
        .limits()
        .iter()
        .filter_map(|l| l.max_jerk.map(|j| l.max_acceleration / j))
        .fold(0.0, f64::max);
    ratio.min(duration / 2.0)
}

/// The lower bound for bringing s from `from` to `to`: max_i of the shortest change of axis i's velocity
/// by |p_i'| |to - from| (p' the path velocity at s = 1; for a pause from the current s, the commanded
/// velocity).
fn t_min(stream: &Stream, from: f64, to: f64) -> f64 {
    let dv: Vec<f64> = if to == 0.0 {
        stream.velocity().to_vec()
    } else {
        stream.path_velocity().iter().map(|v| v * (to - from)).collect()
    };
    dv.iter()
        .zip(stream.limits())
        .map(|(v, l)| axis_stop_secs(*v, l.max_acceleration, l.max_jerk))
        .fold(0.0, f64::max)
}

/// Whether a change of s to `to`, `delay` ticks from now, over `duration`, stays within every limit.
fn check(stream: &Stream, to: f64, delay: u32, duration: f64, phase: Phase) -> Option<Violation> {
    let change = Change {
        delay_steps: delay,
        s1: to,
        duration_secs: duration,
        jerk_secs: jerk_secs(stream, duration),
    };
    stream.try_change(change, phase)
}

/// The shortest feasible (delay, duration) for a change to `to`, searching durations from `start` up and
/// delays of 0, 1, 2, 4, ... ticks while they can still beat the best found.
fn shortest(stream: &Stream, to: f64, start: f64, phase: Phase) -> Result<(u32, f64), Refusal> {
    let tc = stream.period_secs();
    let mut best: Option<(u32, f64)> = None;
    let mut last_violation = None;
    let mut delay = 0u32;
    loop {
        let delay_secs = f64::from(delay) * tc;
        if best.is_some_and(|(d, r)| delay_secs >= f64::from(d) * tc + r) || delay_secs > MAX_RAMP_SECS {
            break;
        }
        let limit = best.map_or(MAX_RAMP_SECS, |(d, r)| f64::from(d) * tc + r - delay_secs);
        // Grow until feasible, then bisect between the last failure and the first success.
        let mut failed = None;
        let mut duration = start;
        let found = loop {
            match check(stream, to, delay, duration, phase) {
                None => break Some(duration),
                Some(v) => last_violation = Some(v),
            }
            failed = Some(duration);
            if duration >= limit {
                break None;
            }
            duration = if duration <= 0.0 { tc } else { duration * GROWTH };
        };
        if let Some(mut ok) = found {
            if let Some(mut bad) = failed {
                for _ in 0..12 {
                    let mid = 0.5 * (bad + ok);
                    if check(stream, to, delay, mid, phase).is_none() {
                        ok = mid;
                    } else {
                        bad = mid;
                    }
                }
            }
            if best.is_none_or(|(d, r)| delay_secs + ok < f64::from(d) * tc + r) {
                best = Some((delay, ok));
            }
        }
        delay = if delay == 0 { 1 } else { delay * 2 };
    }
    best.ok_or_else(|| Refusal::Infeasible {
        searched_secs: MAX_RAMP_SECS,
        violation: last_violation.map_or_else(|| "no violation recorded".into(), |v| describe(&v, stream)),
    })
}

/// Plan a change of s to `to` within `requested` seconds (or the shortest feasible), schedule it, enter
/// `phase`.
fn change(
    stream: &mut Stream,
    to: f64,
    requested: Option<f64>,
    phase: Phase,
    cancelling: bool,
) -> Result<Plan, Refusal> {
    let (from, _) = stream.current();
    let tmin = t_min(stream, from, to);
    // The cheap refusals first: the search below runs the stream through each candidate ramp.
    match requested {
        Some(r) if !(r.is_finite() && r >= 0.0) => {
            return Err(Refusal::Invalid(format!(
                "time {r} s is not a non-negative number of seconds"
            )))
        }
        // Checking a longer ramp would step a copy of the motion through all of it (1e9 s: hours; 1e308 s:
        // more ticks than a u64 counts).
        Some(r) if r > MAX_RAMP_SECS => {
            return Err(Refusal::Invalid(format!(
                "time {r} s is longer than the longest ramp planned ({MAX_RAMP_SECS} s)"
            )))
        }
        Some(r) if r < tmin => {
            return Err(Refusal::BelowMinimum {
                requested_secs: r,
                t_min_secs: tmin,
                bound: Bound::of(stream.limits()),
            })
        }
        _ => {}
    }
    let (delay, ramp) = shortest(stream, to, tmin, phase)?;
    let tc = stream.period_secs();
    let t_feasible = f64::from(delay) * tc + ramp;
    let (delay, ramp) = match requested {
        None => (delay, ramp),
        Some(r) => {
            // The requested total, with the fewest ticks of delay that make it feasible.
            let mut chosen = None;
            let mut d = 0u32;
            while f64::from(d) * tc <= r {
                if check(stream, to, d, r - f64::from(d) * tc, phase).is_none() {
                    chosen = Some((d, r - f64::from(d) * tc));
                    break;
                }
                d = if d == 0 { 1 } else { d * 2 };
            }
            chosen.ok_or(Refusal::TooShort {
                requested_secs: r,
                t_min_secs: tmin,
                t_feasible_secs: t_feasible,
                bound: Bound::of(stream.limits()),
            })?
        }
    };
    stream.apply(
        Change {
            delay_steps: delay,
            s1: to,
            duration_secs: ramp,
            jerk_secs: jerk_secs(stream, ramp),
        },
        phase,
        cancelling,
    );
    Ok(Plan {
        delay_secs: f64::from(delay) * tc,
        ramp_secs: ramp,
        from,
        to,
        t_min_secs: tmin,
        t_feasible_secs: t_feasible,
    })
}

/// Pause: ramp s to 0 along the path within `stop_secs` (default: the shortest feasible).
pub fn pause(stream: &mut Stream, stop_secs: Option<f64>) -> Result<Plan, Refusal> {
    match stream.phase() {
        Phase::Done => return Err(Refusal::Invalid("nothing is playing".into())),
        Phase::Paused => return Err(Refusal::Invalid("already paused".into())),
        Phase::Playing | Phase::Resuming => {
            let (s, _) = stream.current();
            if s > 0.0 {
                stream.resume_to = s;
            }
        }
        // A new stop time while pausing: the factor to resume to stays the one before the first pause.
        Phase::Pausing => {}
    }
    change(stream, 0.0, stop_secs, Phase::Pausing, false)
}

/// Cancel: the same smooth stop as a pause, then `Done`.
pub fn cancel(stream: &mut Stream) -> Result<Plan, Refusal> {
    if matches!(stream.phase(), Phase::Paused | Phase::Done) {
        stream.apply(
            Change {
                delay_steps: 0,
                s1: 0.0,
                duration_secs: 0.0,
                jerk_secs: 0.0,
            },
            Phase::Pausing,
            true,
        );
        return Ok(Plan::NOTHING);
    }
    change(stream, 0.0, None, Phase::Pausing, true)
}

/// Resume (also while still pausing): ramp s to `factor` (default: the factor before the pause) within
/// `start_secs` (default: the shortest feasible, at least max_i(v_s / a_i,max)).
pub fn resume(
    stream: &mut Stream,
    start_secs: Option<f64>,
    factor: Option<f64>,
    s_max: f64,
) -> Result<Plan, Refusal> {
    if !matches!(stream.phase(), Phase::Paused | Phase::Pausing) {
        return Err(Refusal::Invalid(format!(
            "not paused ({})",
            stream.phase().as_str()
        )));
    }
    let to = factor.unwrap_or(stream.resume_to);
    valid_factor(to, s_max)?;
    change(stream, to, start_secs, Phase::Resuming, false)
}

/// Start playing a new stream at `factor`, ramping up from 0 when the section starts moving.
pub fn start(stream: &mut Stream, factor: f64, s_max: f64) -> Result<Plan, Refusal> {
    valid_factor(factor, s_max)?;
    stream.resume_to = factor;
    change(stream, factor, None, Phase::Resuming, false)
}

/// Speed override: ramp s to `factor` within the limits. While paused it sets the factor a resume returns to.
pub fn set_speed(stream: &mut Stream, factor: f64, s_max: f64) -> Result<Plan, Refusal> {
    valid_factor(factor, s_max)?;
    match stream.phase() {
        Phase::Done => Err(Refusal::Invalid("nothing is playing".into())),
        Phase::Paused | Phase::Pausing => {
            stream.resume_to = factor;
            Ok(Plan::NOTHING)
        }
        phase => change(stream, factor, None, phase, false),
    }
}

/// A speed factor must be positive, finite and at most `s_max`.
pub(crate) fn valid_factor(factor: f64, s_max: f64) -> Result<(), Refusal> {
    if !(factor.is_finite() && factor > 0.0) {
        return Err(Refusal::Invalid(format!(
            "speed factor {factor} must be a positive number (pause stops the motion)"
        )));
    }
    if factor > s_max {
        return Err(Refusal::AboveMax {
            requested: factor,
            s_max,
        });
    }
    Ok(())
}

/// The largest constant factor at which the section plays within every limit (bisection to 1e-4). The
/// first ticks are not checked: [`start`] ramps s up from 0 there. 0 when even a crawl breaks a limit.
pub fn s_max(stream: &Stream) -> f64 {
    let fits = |s: f64| {
        let mut copy = stream.clone();
        copy.apply(
            Change {
                delay_steps: 0,
                s1: s,
                duration_secs: 0.0,
                jerk_secs: 0.0,
            },
            Phase::Playing,
            false,
        );
        let mut monitor = Monitor::new(stream.period_secs(), stream.limits().to_vec());
        monitor.push(stream.position());
        let mut ticks = 0;
        while copy.phase() != Phase::Done {
            ticks += 1;
            if monitor.push(copy.step()).is_some() && ticks > START_TICKS {
                return false;
            }
        }
        // Two more ticks: the stop at the end.
        monitor.push(copy.step()).is_none() && monitor.push(copy.step()).is_none()
    };
    let (mut lo, mut hi) = (0.0, 1.0);
    while fits(hi) {
        lo = hi;
        hi *= 2.0;
        if hi > 1024.0 {
            return lo;
        }
    }
    while hi - lo > 1e-4 {
        let mid = 0.5 * (lo + hi);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}
