//! Pacing a fixed-step simulation against the wall clock, without the clock: the node passes in monotonic
//! wall seconds and runs the steps it is told, so all of this is deterministic and unit-tested.

use std::collections::BTreeMap;

use crate::error::{check_finite, Result};
use crate::input::check_time_scale;

/// Most steps one wall tick may run: when the machine cannot keep up with `time_scale`, simulated time falls
/// behind instead of the loop blocking its thread.
pub const MAX_STEPS_PER_TICK: u64 = 200;
/// While no step runs (paused, or very slow), the motion topics are repeated this often (wall seconds).
pub const PAUSED_REPUBLISH_SECS: f64 = 0.25;

/// What one wall tick should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tick {
    /// Steps of [`Pacer::step_secs`] to run now.
    pub steps: u64,
    /// This tick is the first that could not keep up with the time scale (log it once).
    pub started_lagging: bool,
    /// No step runs and nothing was published for [`PAUSED_REPUBLISH_SECS`]: repeat the motion topics (same
    /// stamp) so that late joiners see the current state.
    pub republish: bool,
}

/// Turns wall time into fixed simulation steps at a time scale, and says when to publish.
#[derive(Debug, Clone)]
pub struct Pacer {
    step_secs: f64,
    publish_every_steps: u64,
    max_steps_per_tick: u64,
    time_scale: f64,
    budget_secs: f64,
    last_wall_secs: f64,
    steps: u64,
    lagging_reported: bool,
    republish: Every,
}

impl Pacer {
    /// `rate_hz` steps per simulated second, motion published `publish_rate_hz` times per simulated second,
    /// starting at wall time `now_secs` with `time_scale`.
    pub fn new(rate_hz: f64, publish_rate_hz: f64, time_scale: f64, now_secs: f64) -> Result<Pacer> {
        check_finite("rate_hz", rate_hz, true)?;
        check_finite("publish_rate_hz", publish_rate_hz, true)?;
        Ok(Pacer {
            step_secs: 1.0 / rate_hz,
            publish_every_steps: ((rate_hz / publish_rate_hz).round() as u64).max(1),
            max_steps_per_tick: MAX_STEPS_PER_TICK,
            time_scale: check_time_scale(time_scale)?,
            budget_secs: 0.0,
            last_wall_secs: now_secs,
            steps: 0,
            lagging_reported: false,
            republish: Every::new(PAUSED_REPUBLISH_SECS),
        })
    }

    /// The fixed simulation step (simulated seconds).
    pub fn step_secs(&self) -> f64 {
        self.step_secs
    }

    /// Every how many steps the motion topics are published.
    pub fn publish_every_steps(&self) -> u64 {
        self.publish_every_steps
    }

    /// The time scale in force.
    pub fn time_scale(&self) -> f64 {
        self.time_scale
    }

    /// Changes the time scale; a bad value is refused (the error says why) and the old one stays.
    pub fn set_time_scale(&mut self, scale: f64) -> Result<()> {
        self.time_scale = check_time_scale(scale)?;
        Ok(())
    }

    /// How many steps to run at wall time `now_secs` (monotonic). Time that did not fit into whole steps is
    /// carried over; a backlog beyond [`MAX_STEPS_PER_TICK`] is dropped (simulated time runs slower).
    pub fn tick(&mut self, now_secs: f64) -> Tick {
        if now_secs.is_finite() {
            let elapsed = now_secs - self.last_wall_secs;
            self.last_wall_secs = now_secs;
            if elapsed > 0.0 {
                self.budget_secs += elapsed * self.time_scale;
            }
        }
        let mut tick = Tick::default();
        let wanted = (self.budget_secs / self.step_secs).floor();
        if wanted > self.max_steps_per_tick as f64 {
            tick.started_lagging = !self.lagging_reported;
            self.lagging_reported = true;
            tick.steps = self.max_steps_per_tick;
            self.budget_secs = 0.0;
        } else {
            tick.steps = wanted.max(0.0) as u64;
            self.budget_secs -= tick.steps as f64 * self.step_secs;
        }
        if tick.steps > 0 {
            self.republish.reset(now_secs);
        } else {
            tick.republish = self.republish.due(now_secs);
        }
        tick
    }

    /// Counts one step run; true when the motion topics are due after it.
    pub fn count_step(&mut self) -> bool {
        self.steps += 1;
        self.steps % self.publish_every_steps == 0
    }
}

/// "Every `period` seconds": due at once the first time, then once per period (wall or simulated seconds,
/// whatever the caller passes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Every {
    period_secs: f64,
    last_secs: Option<f64>,
}

impl Every {
    /// Due at the first call, then every `period_secs`.
    pub fn new(period_secs: f64) -> Self {
        Every {
            period_secs,
            last_secs: None,
        }
    }

    /// True (and restarts the period) when the period has passed since the last time it was due.
    pub fn due(&mut self, now_secs: f64) -> bool {
        let due = self
            .last_secs
            .is_none_or(|last| now_secs - last >= self.period_secs);
        if due {
            self.last_secs = Some(now_secs);
        }
        due
    }

    /// Restarts the period at `now_secs` without being due.
    pub fn reset(&mut self, now_secs: f64) {
        self.last_secs = Some(now_secs);
    }
}

/// Logs each distinct warning at most once per period, remembering at most `capacity` of them (the rules'
/// warnings quote values, so their texts are unbounded).
#[derive(Debug, Clone)]
pub struct WarningThrottle {
    period_secs: f64,
    capacity: usize,
    last: BTreeMap<String, f64>,
}

impl WarningThrottle {
    /// Once per `period_secs` per text, at most `capacity` texts remembered.
    pub fn new(period_secs: f64, capacity: usize) -> Self {
        WarningThrottle {
            period_secs,
            capacity: capacity.max(1),
            last: BTreeMap::new(),
        }
    }

    /// True when `text` should be logged now.
    pub fn should_log(&mut self, text: &str, now_secs: f64) -> bool {
        if self
            .last
            .get(text)
            .is_some_and(|&t| now_secs - t <= self.period_secs)
        {
            return false;
        }
        if self.last.len() >= self.capacity {
            // Forget what could be logged again anyway; if that is not enough, forget everything (the worst
            // case is a repeated line, never unbounded memory).
            let period = self.period_secs;
            self.last.retain(|_, t| now_secs - *t <= period);
            if self.last.len() >= self.capacity {
                self.last.clear();
            }
        }
        self.last.insert(text.to_owned(), now_secs);
        true
    }

    /// Texts remembered.
    pub fn len(&self) -> usize {
        self.last.len()
    }

    /// Nothing remembered.
    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wall seconds in 1/128 s, which binary floating point holds exactly.
    fn at(i: u32) -> f64 {
        f64::from(i) / 128.0
    }

    #[test]
    fn steps_follow_wall_time_times_scale_and_carry_fractions() {
        let mut p = Pacer::new(64.0, 16.0, 1.0, 0.0).unwrap();
        assert_eq!((p.step_secs(), p.publish_every_steps()), (at(2), 4));
        assert_eq!(p.tick(at(1)).steps, 0);
        assert_eq!(p.tick(at(2)).steps, 1);
        assert_eq!(
            p.tick(at(5)).steps,
            1,
            "three half steps: one step, half a step carried"
        );
        assert_eq!(p.tick(at(6)).steps, 1, "the carried half completes a step");
        p.set_time_scale(10.0).unwrap();
        assert_eq!(p.tick(at(16)).steps, 50);
        let total: u64 = (17..=116).map(|i| p.tick(at(i)).steps).sum();
        assert_eq!(total, 500);
    }

    #[test]
    fn a_backlog_is_dropped_and_reported_once() {
        let mut p = Pacer::new(50.0, 20.0, 100.0, 0.0).unwrap();
        let t = p.tick(10.0);
        assert_eq!((t.steps, t.started_lagging), (MAX_STEPS_PER_TICK, true));
        let t = p.tick(20.0);
        assert_eq!((t.steps, t.started_lagging), (MAX_STEPS_PER_TICK, false));
        assert_eq!(p.tick(20.0).steps, 0, "the backlog is gone");
    }

    #[test]
    fn bad_time_scales_and_clocks_change_nothing() {
        let mut p = Pacer::new(50.0, 20.0, 1.0, 0.0).unwrap();
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e308] {
            assert!(p.set_time_scale(bad).is_err());
            assert_eq!(p.time_scale(), 1.0);
        }
        assert_eq!(p.tick(f64::NAN).steps, 0);
        assert_eq!(p.tick(-5.0).steps, 0, "the clock going back runs nothing");
        assert_eq!(p.tick(-4.96).steps, 2);
        assert!(Pacer::new(f64::NAN, 20.0, 1.0, 0.0).is_err());
        assert!(Pacer::new(50.0, 0.0, 1.0, 0.0).is_err());
        assert!(Pacer::new(50.0, 20.0, f64::INFINITY, 0.0).is_err());
    }

    #[test]
    fn paused_republishes_four_times_a_second() {
        let mut p = Pacer::new(50.0, 20.0, 0.0, 0.0).unwrap();
        let republished: Vec<u32> = (1..=128).filter(|&i| p.tick(at(i)).republish).collect();
        assert_eq!(republished, [1, 33, 65, 97], "at once, then every 0.25 s");
        p.set_time_scale(1.0).unwrap();
        assert!(!p.tick(1.5).republish, "steps ran");
    }

    #[test]
    fn publishing_every_n_steps() {
        let mut p = Pacer::new(50.0, 10.0, 1.0, 0.0).unwrap();
        let due: Vec<bool> = (0..10).map(|_| p.count_step()).collect();
        assert_eq!(due.iter().filter(|&&d| d).count(), 2);
        assert!(due[4] && due[9]);
        let fast = Pacer::new(50.0, 500.0, 1.0, 0.0).unwrap();
        assert_eq!(fast.publish_every_steps(), 1);
    }

    #[test]
    fn every_is_due_at_once_then_per_period() {
        let mut e = Every::new(1.0);
        assert!(e.due(5.0));
        assert!(!e.due(5.5));
        assert!(e.due(6.0));
        e.reset(10.0);
        assert!(!e.due(10.9));
    }

    #[test]
    fn warnings_are_throttled_per_text_and_bounded() {
        let mut w = WarningThrottle::new(2.0, 4);
        assert!(w.should_log("a", 0.0));
        assert!(!w.should_log("a", 1.0));
        assert!(w.should_log("a", 2.5));
        for i in 0..1000 {
            w.should_log(&format!("drive [{i}] is not numeric"), 3.0 + f64::from(i) * 1e-3);
            assert!(w.len() <= 4);
        }
        assert!(!w.is_empty());
    }
}
