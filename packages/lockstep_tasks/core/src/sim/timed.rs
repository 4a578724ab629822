//! The timed kinds (localization, lift, roller, loader, display): a goal takes a fixed duration with
//! progress feedback, and ends succeeded unless the actuator is told to fail (every goal, or the first few).

use std::time::{Duration, Instant};

use super::pacer::Pacer;

/// Period of the progress feedback.
pub const FEEDBACK_PERIOD: Duration = Duration::from_millis(100);

/// The clock of one timed goal.
#[derive(Debug, Clone, Copy)]
pub struct TimedGoal {
    started: Instant,
    finish: Instant,
    duration_s: f64,
    feedback: Pacer,
}

impl TimedGoal {
    /// A goal started at `started` that takes `duration_s`.
    pub fn new(started: Instant, duration_s: f64) -> Self {
        Self {
            started,
            finish: started + Duration::from_secs_f64(duration_s),
            duration_s,
            feedback: Pacer::new(started, FEEDBACK_PERIOD),
        }
    }

    /// When it ends.
    pub fn finish(&self) -> Instant {
        self.finish
    }

    /// Whether its time is up at `now`.
    pub fn is_done(&self, now: Instant) -> bool {
        now >= self.finish
    }

    /// The feedback due at `now`, if one is: (progress 0..1, remaining time [s]).
    pub fn feedback(&mut self, now: Instant) -> Option<(f64, f64)> {
        if !self.feedback.due(now) {
            return None;
        }
        let elapsed_s = now.saturating_duration_since(self.started).as_secs_f64();
        let progress = (elapsed_s / self.duration_s).clamp(0.0, 1.0);
        let remaining_s = self.finish.saturating_duration_since(now).as_secs_f64();
        Some((progress, remaining_s))
    }

    /// When to look again: the next feedback or the end, whichever comes first.
    pub fn wake(&self) -> Instant {
        self.feedback.next().min(self.finish)
    }
}

/// Whether the goal that ends as the `nth` (0-based) fails: every goal with `fail`, else the first
/// `fail_first` ones (an actuator that recovers, for retries).
pub fn fails(fail: bool, fail_first: i64, nth: i64) -> bool {
    fail || nth < fail_first
}

/// The message of a goal that succeeded: what it did and how long it took.
pub fn done_message(what: &str, took_s: f64) -> String {
    format!("{what}: done in {took_s:.2} s")
}

/// A Lift goal's check: the height must be finite.
pub fn check_lift(height_m: f64) -> Result<(), String> {
    if height_m.is_finite() {
        Ok(())
    } else {
        Err(format!("height_m is {height_m}; it must be a finite number"))
    }
}

/// A Roll goal's check: the direction is +1 or 0 (out) or -1 (in).
pub fn check_roll(direction: i8) -> Result<(), String> {
    match direction {
        -1..=1 => Ok(()),
        d => Err(format!("direction is {d}; it must be +1 or 0 (out) or -1 (in)")),
    }
}

/// What a Roll goal does, for the log and the result message.
pub fn describe_roll(direction: i8, station: &str) -> String {
    let way = if direction >= 0 { "out" } else { "in" };
    format!("roll {way} at station `{station}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_and_remaining_time_follow_the_clock() {
        let t0 = Instant::now();
        let mut goal = TimedGoal::new(t0, 2.0);
        assert_eq!(goal.feedback(t0), Some((0.0, 2.0)));
        assert_eq!(goal.feedback(t0 + Duration::from_millis(50)), None);
        assert_eq!(goal.wake(), t0 + FEEDBACK_PERIOD);
        assert_eq!(goal.feedback(t0 + Duration::from_millis(500)), Some((0.25, 1.5)));
        assert!(!goal.is_done(t0 + Duration::from_millis(1999)));
        assert!(goal.is_done(t0 + Duration::from_secs(2)));
        // Near the end it wakes for the end, not for a feedback after it.
        let mut near = TimedGoal::new(t0, 0.05);
        assert!(near.feedback(t0).is_some());
        assert_eq!(near.wake(), near.finish());
    }

    #[test]
    fn fail_fails_every_goal_and_fail_first_the_first_ones() {
        assert!(!fails(false, 0, 0));
        assert!(fails(true, 0, 5));
        assert!(fails(false, 2, 0) && fails(false, 2, 1));
        assert!(!fails(false, 2, 2));
    }

    #[test]
    fn lift_and_roll_goals_are_checked_and_described() {
        assert!(check_lift(0.5).is_ok());
        assert_eq!(
            check_lift(f64::NAN),
            Err("height_m is NaN; it must be a finite number".to_owned())
        );
        assert!(check_roll(-1).is_ok() && check_roll(0).is_ok() && check_roll(1).is_ok());
        assert_eq!(
            check_roll(2),
            Err("direction is 2; it must be +1 or 0 (out) or -1 (in)".to_owned())
        );
        assert_eq!(describe_roll(0, "A"), "roll out at station `A`");
        assert_eq!(describe_roll(-1, "B"), "roll in at station `B`");
        assert_eq!(done_message("load", 1.234), "load: done in 1.23 s");
    }
}
