//! What a stream of commanded positions asks of each axis: velocity, acceleration and jerk as finite
//! differences over one output period, checked against the axis limits. The player's planner checks its
//! plans with it, the player reports its peaks with it, and the mock hardware raises its overspeed alarm with
//! it, so all three agree on what "over a limit" means.

use crate::limits::AxisLimits;

/// Which derivative went over its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Quantity {
    Velocity,
    Acceleration,
    Jerk,
}

impl std::fmt::Display for Quantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Velocity => "velocity",
            Self::Acceleration => "acceleration",
            Self::Jerk => "jerk",
        })
    }
}

/// One axis over one limit at one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Violation {
    pub axis: usize,
    pub quantity: Quantity,
    /// |value| seen.
    pub value: f64,
    pub limit: f64,
}

/// Relative slack for rounding: a value counts as over its limit only beyond `limit * (1 + SLACK)` plus the
/// rounding of the positions amplified by the finite difference (a third difference at 2 ms turns 1e-16 of
/// position rounding into about 1e-7 of jerk).
pub const SLACK: f64 = 1e-9;

/// Finite differences of a commanded stream at a fixed period.
#[derive(Debug, Clone)]
pub struct Monitor {
    period_secs: f64,
    limits: Vec<AxisLimits>,
    last: Option<Vec<f64>>,
    velocity: Vec<f64>,
    acceleration: Vec<f64>,
    /// Steps seen (positions given minus one).
    steps: u64,
    /// Largest |v|, |a|, |j| per axis as fractions of the limits (jerk 0 without a jerk limit).
    pub peak: Vec<[f64; 3]>,
}

impl Monitor {
    /// A monitor of a stream at `period_secs`; the first position given is taken as at rest.
    pub fn new(period_secs: f64, limits: Vec<AxisLimits>) -> Self {
        let n = limits.len();
        Self {
            period_secs,
            limits,
            last: None,
            velocity: vec![0.0; n],
            acceleration: vec![0.0; n],
            steps: 0,
            peak: vec![[0.0; 3]; n],
        }
    }

    /// Start from `position` with the given velocity and acceleration (what a stream was doing).
    pub fn with_state(mut self, position: &[f64], velocity: &[f64], acceleration: &[f64]) -> Self {
        self.last = Some(position.to_vec());
        self.velocity.copy_from_slice(velocity);
        self.acceleration.copy_from_slice(acceleration);
        self.steps = 2;
        self
    }

    /// The axis limits checked.
    pub fn limits(&self) -> &[AxisLimits] {
        &self.limits
    }

    /// The velocity of the last step, per axis.
    pub fn velocity(&self) -> &[f64] {
        &self.velocity
    }

    /// The acceleration of the last step, per axis.
    pub fn acceleration(&self) -> &[f64] {
        &self.acceleration
    }

    /// The last position given.
    pub fn position(&self) -> Option<&[f64]> {
        self.last.as_deref()
    }

    /// Take the next commanded position; the first violation of this step, if any (velocity before
    /// acceleration before jerk, lowest axis first). Jerk counts from the third step, acceleration from the
    /// second (a stream starts at rest).
    pub fn push(&mut self, position: &[f64]) -> Option<Violation> {
        let Some(last) = self.last.as_mut() else {
            self.last = Some(position.to_vec());
            return None;
        };
        let t = self.period_secs;
        self.steps += 1;
        let mut first: Option<Violation> = None;
        for (i, limits) in self.limits.iter().enumerate() {
            let v = (position[i] - last[i]) / t;
            let a = (v - self.velocity[i]) / t;
            let j = (a - self.acceleration[i]) / t;
            last[i] = position[i];
            self.velocity[i] = v;
            self.acceleration[i] = a;
            // Rounding of positions of this size, amplified by the k-th difference (about 2^k / T^k).
            let rounding = 16.0 * f64::EPSILON * (position[i].abs() + 1.0);
            let mut check = |quantity: Quantity, value: f64, limit: f64, slot: usize| {
                let fraction = value.abs() / limit;
                if fraction > self.peak[i][slot] {
                    self.peak[i][slot] = fraction;
                }
                let noise = rounding / t.powi(slot as i32 + 1);
                let over = value.abs() > limit * (1.0 + SLACK) + noise;
                if over && first.as_ref().is_none_or(|f| quantity < f.quantity) {
                    first = Some(Violation {
                        axis: i,
                        quantity,
                        value: value.abs(),
                        limit,
                    });
                }
            };
            check(Quantity::Velocity, v, limits.max_velocity, 0);
            check(Quantity::Acceleration, a, limits.max_acceleration, 1);
            if let Some(max_jerk) = limits.max_jerk {
                if self.steps >= 2 {
                    check(Quantity::Jerk, j, max_jerk, 2);
                }
            }
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Vec<AxisLimits> {
        vec![AxisLimits {
            max_velocity: 1.0,
            max_acceleration: 10.0,
            max_jerk: Some(1000.0),
        }]
    }

    #[test]
    fn finite_differences_and_first_violation() {
        let mut m = Monitor::new(0.01, limits());
        assert_eq!(m.push(&[0.0]), None);
        assert_eq!(m.push(&[0.0005]), None); // v 0.05, a 5, no jerk yet
        let v = m.push(&[0.0025]).unwrap(); // v 0.2, a 15, j 1000
        assert_eq!(v.quantity, Quantity::Acceleration);
        assert!((v.value - 15.0).abs() < 1e-9);
        assert!((m.peak[0][2] - 1.0).abs() < 1e-9, "{:?}", m.peak);
        let v = m.push(&[0.0225]).unwrap(); // v 2.0
        assert_eq!(v.quantity, Quantity::Velocity);
    }
}
