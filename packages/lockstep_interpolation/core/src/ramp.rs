//! A change of the speed factor s over time: from s0 (changing at rate ds0) to s1 in `duration` seconds.
//!
//! ds/dt is a trapezoid: it goes linearly from ds0 to its peak in `jerk_secs`, holds, and falls linearly to 0
//! in the last `jerk_secs`. With `jerk_secs` 0 the ramp is linear (ds/dt jumps: fine without jerk limits);
//! with `jerk_secs` > 0 it is an S-curve, and the shortest stop of an axis moving at v within acceleration
//! a and jerk j is `v/a + a/j` (`jerk_secs` = a/j), or `2 sqrt(v/j)` when v < a^2/j (`jerk_secs` =
//! duration/2).

/// A planned change of s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ramp {
    pub s0: f64,
    /// ds/dt at the start (another ramp may have been under way).
    pub ds0: f64,
    pub s1: f64,
    pub duration_secs: f64,
    pub jerk_secs: f64,
}

impl Ramp {
    /// A ramp; `jerk_secs` is clamped to [0, duration/2], `duration_secs` to >= 0.
    pub fn new(s0: f64, ds0: f64, s1: f64, duration_secs: f64, jerk_secs: f64) -> Self {
        let duration_secs = duration_secs.max(0.0);
        Self {
            s0,
            ds0,
            s1,
            duration_secs,
            jerk_secs: jerk_secs.clamp(0.0, duration_secs / 2.0),
        }
    }

    /// The peak ds/dt, from the area under the trapezoid: s1 - s0 = ds0 tj / 2 + peak (D - tj).
    fn peak(&self) -> f64 {
        let (d, tj) = (self.duration_secs, self.jerk_secs);
        if d <= 0.0 {
            return 0.0;
        }
        (self.s1 - self.s0 - self.ds0 * tj / 2.0) / (d - tj)
    }

    /// s and ds/dt at `t` seconds into the ramp (before 0: the start; after the end: s1, 0).
    pub fn at(&self, t: f64) -> (f64, f64) {
        let (d, tj) = (self.duration_secs, self.jerk_secs);
        if t <= 0.0 {
            return (self.s0, self.ds0);
        }
        if t >= d {
            return (self.s1, 0.0);
        }
        let p = self.peak();
        if t < tj {
            let ds = self.ds0 + (p - self.ds0) * t / tj;
            return (self.s0 + self.ds0 * t + (p - self.ds0) * t * t / (2.0 * tj), ds);
        }
        if t < d - tj {
            let s_tj = self.s0 + (self.ds0 + p) * tj / 2.0;
            return (s_tj + p * (t - tj), p);
        }
        let left = d - t;
        if tj <= 0.0 {
            return (self.s1 - p * left, p);
        }
        (self.s1 - p * left * left / (2.0 * tj), p * left / tj)
    }
}

/// The shortest stop of one axis moving at `v` within acceleration `a` and (optionally) jerk `j`:
/// `|v|/a`; with a jerk limit `|v|/a + a/j` if `|v| >= a^2/j`, else `2 sqrt(|v|/j)`.
pub fn axis_stop_secs(v: f64, a: f64, j: Option<f64>) -> f64 {
    let v = v.abs();
    match j {
        None => v / a,
        Some(j) if v >= a * a / j => v / a + a / j,
        Some(j) => 2.0 * (v / j).sqrt(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuous_and_reaches_the_target() {
        for ramp in [
            Ramp::new(1.0, 0.0, 0.0, 0.5, 0.1),
            Ramp::new(1.0, -0.7, 2.0, 0.8, 0.2),
            Ramp::new(0.3, 0.0, 1.0, 0.4, 0.0),
            Ramp::new(1.0, 0.0, 0.0, 0.5, 0.25),
        ] {
            let mut last = ramp.at(0.0);
            let dt = 1e-5;
            let mut t = dt;
            while t < ramp.duration_secs + 0.01 {
                let now = ramp.at(t);
                assert!((now.0 - last.0).abs() < 1e-3 * 1.0, "s jumps at {t} in {ramp:?}");
                // s is the integral of ds/dt
                let mid = ramp.at(t - dt / 2.0).1;
                assert!((now.0 - last.0 - mid * dt).abs() < 1e-7, "at {t} in {ramp:?}");
                if ramp.jerk_secs > 0.0 {
                    assert!((now.1 - last.1).abs() < 1e-2, "ds/dt jumps at {t} in {ramp:?}");
                }
                last = now;
                t += dt;
            }
            assert_eq!(ramp.at(ramp.duration_secs), (ramp.s1, 0.0));
        }
    }

    #[test]
    fn stop_time_formulas() {
        assert_eq!(axis_stop_secs(-2.0, 4.0, None), 0.5);
        // v >= a^2/j: v/a + a/j
        assert!((axis_stop_secs(2.0, 4.0, Some(40.0)) - 0.6).abs() < 1e-12);
        // v < a^2/j: 2 sqrt(v/j)
        assert!((axis_stop_secs(0.1, 4.0, Some(40.0)) - 2.0 * (0.1f64 / 40.0).sqrt()).abs() < 1e-12);
    }
}
