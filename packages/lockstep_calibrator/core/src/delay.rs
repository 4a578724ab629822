//! The command-to-motion delay, searched first and on its own (the pose residual is not smooth in it).
//!
//! The base turns a command into wheel speeds with its nominal parameters, after the delay, and the wheels
//! reach them no faster than its acceleration limits allow. So for a candidate delay d, the wheel speeds
//! are predicted by running the delayed command history through a rate limiter (limits read off the
//! observed wheel speeds: the steepest speed-up and slow-down seen), starting from the observed speeds, and
//! compared with the speeds odometry reports. A coarse grid over `[0, max_delay]` and a fine grid around
//! its best give the delay to half a millisecond. A ramp starts the moment the delayed command changes,
//! so the limiter does not bias the delay, whatever the surface's grip.

use crate::history::Window;

/// Internal integration step of the predicted wheel speeds (s).
const STEP_SECS: f64 = 0.001;

/// The delay of one window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelayEstimate {
    /// Best delay (s).
    pub delay_secs: f64,
    /// RMS wheel-speed error at the best delay (rad/s).
    pub rms_radps: f64,
    /// RMS wheel-speed error at the worst delay of the grid (rad/s): how much the delay mattered.
    pub worst_rms_radps: f64,
}

/// Why a window says nothing about the delay.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DelayRefusal {
    /// Fewer wheel-speed samples than needed.
    #[error("delay refused: {have} wheel-speed samples in the window, {need} needed")]
    TooFewSamples {
        /// Samples in the window.
        have: usize,
        /// Samples needed.
        need: usize,
    },
    /// The command did not change early enough in the window for its effect to show (nothing to time).
    #[error("delay refused: no command change whose effect falls inside the window")]
    NoCommandChange,
    /// The best delay is the search's upper bound (the true one may be larger, or the data is poor).
    #[error("delay refused: the best delay is the search bound {max_delay_secs} s")]
    AtBound {
        /// The bound (s).
        max_delay_secs: f64,
    },
    /// Every candidate delay explains the data alike.
    #[error("delay refused: every delay explains the wheel speeds alike")]
    Flat,
}

/// Searches the delay in `[0, max_delay_secs]`.
pub fn estimate_delay(w: &Window, max_delay_secs: f64) -> Result<DelayEstimate, DelayRefusal> {
    const NEED: usize = 10;
    if w.steps.len() < NEED {
        return Err(DelayRefusal::TooFewSamples {
            have: w.steps.len(),
            need: NEED,
        });
    }
    // A change whose effect lands inside the window whatever the delay.
    let changed = w.commands.windows(2).any(|p| {
        p[1].t_secs >= w.t0_secs
            && p[1].t_secs + max_delay_secs <= w.t1_secs
            && ((p[1].v_mps - p[0].v_mps).abs() > 1e-4 || (p[1].w_radps - p[0].w_radps).abs() > 1e-4)
    });
    if !changed {
        return Err(DelayRefusal::NoCommandChange);
    }
    let limits = rate_limits(w);
    let coarse = 0.005;
    let n = (max_delay_secs / coarse).ceil().max(1.0) as usize;
    let mut best = (f64::INFINITY, 0.0);
    let mut worst = 0.0_f64;
    for i in 0..=n {
        let d = (i as f64 * coarse).min(max_delay_secs);
        let e = sse(w, d, limits);
        worst = worst.max(e);
        if e < best.0 {
            best = (e, d);
        }
    }
    let centre = best.1;
    for i in -10..=10 {
        let d = centre + f64::from(i) * 0.0005;
        if !(0.0..=max_delay_secs).contains(&d) {
            continue;
        }
        let e = sse(w, d, limits);
        if e < best.0 {
            best = (e, d);
        }
    }
    let samples = (2 * (w.steps.len() - 1)) as f64;
    if worst - best.0 <= 1e-12 * worst.max(1.0) {
        return Err(DelayRefusal::Flat);
    }
    if best.1 >= max_delay_secs - 1e-9 {
        return Err(DelayRefusal::AtBound { max_delay_secs });
    }
    Ok(DelayEstimate {
        delay_secs: best.1,
        rms_radps: (best.0 / samples).sqrt(),
        worst_rms_radps: (worst / samples).sqrt(),
    })
}

/// Steepest observed speed-up and slow-down of a wheel (rad/s^2).
fn rate_limits(w: &Window) -> (f64, f64) {
    let mut up = 0.0_f64;
    let mut down = 0.0_f64;
    for p in w.steps.windows(2) {
        let dt = p[1].t1_secs - p[0].t1_secs;
        if dt <= 0.0 {
            continue;
        }
        for (a, b) in [
            (p[0].left_radps, p[1].left_radps),
            (p[0].right_radps, p[1].right_radps),
        ] {
            let rate = (b - a).abs() / dt;
            if speeding_up(a, b) {
                up = up.max(rate);
            } else {
                down = down.max(rate);
            }
        }
    }
    match (up > 0.0, down > 0.0) {
        (true, true) => (up, down),
        (true, false) => (up, up),
        (false, true) => (down, down),
        (false, false) => (f64::INFINITY, f64::INFINITY),
    }
}

fn speeding_up(current: f64, target: f64) -> bool {
    target.abs() > current.abs() && target * current >= 0.0
}

/// Sum of squared wheel-speed errors at the odometry samples for delay `d`.
fn sse(w: &Window, d: f64, (up, down): (f64, f64)) -> f64 {
    let first = &w.steps[0];
    let mut speed = (first.left_radps, first.right_radps);
    let mut t = first.t1_secs;
    let mut error = 0.0;
    for s in &w.steps[1..] {
        while t < s.t1_secs - 1e-12 {
            let h = STEP_SECS.min(s.t1_secs - t);
            let (v, om) = w.command_at(t - d);
            let target = w.nominal.wheel_speeds(v, om);
            let fraction = |current: f64, goal: f64| -> f64 {
                let delta = goal - current;
                if delta == 0.0 {
                    return 1.0;
                }
                let limit = if speeding_up(current, goal) { up } else { down } * h;
                (limit / delta.abs()).min(1.0)
            };
            let f = fraction(speed.0, target.0).min(fraction(speed.1, target.1));
            speed.0 += f * (target.0 - speed.0);
            speed.1 += f * (target.1 - speed.1);
            t += h;
        }
        error += (speed.0 - s.left_radps).powi(2) + (speed.1 - s.right_radps).powi(2);
    }
    error
}
