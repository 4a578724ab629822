//! The HMI kind: a prompt waits for the operator's reply, with `waited_s` feedback and an optional
//! timeout; the reply ends it succeeded, unless the actuator is told to fail.

use std::time::{Duration, Instant};

use super::pacer::Pacer;

/// Period of the `waited_s` feedback.
pub const FEEDBACK_PERIOD: Duration = Duration::from_millis(100);

/// Whether a prompt's timeout can be used (finite, >= 0; 0 = no timeout); why not otherwise.
pub fn check_timeout(timeout_s: f64) -> Result<(), String> {
    if timeout_s.is_finite() && timeout_s >= 0.0 {
        Ok(())
    } else {
        Err(format!(
            "timeout_s is {timeout_s}; it must be a finite number >= 0 (0 = no timeout)"
        ))
    }
}

/// The clock of one prompt waiting for its reply.
#[derive(Debug, Clone, Copy)]
pub struct PromptWait {
    started: Instant,
    deadline: Option<Instant>,
    feedback: Pacer,
}

impl PromptWait {
    /// A prompt started at `started`; `timeout_s` > 0 sets a deadline (checked by [`check_timeout`]). A
    /// deadline beyond what the clock can count (about 9e18 s) never comes: no deadline, as for 0.
    pub fn new(started: Instant, timeout_s: f64) -> Self {
        Self {
            started,
            deadline: (timeout_s > 0.0)
                .then(|| super::secs_after(started, timeout_s))
                .flatten(),
            feedback: Pacer::new(started, FEEDBACK_PERIOD),
        }
    }

    /// When it times out, if it has a timeout.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether it has timed out at `now`.
    pub fn timed_out(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// The `waited_s` feedback due at `now`, if one is.
    pub fn feedback(&mut self, now: Instant) -> Option<f64> {
        self.feedback
            .due(now)
            .then(|| now.saturating_duration_since(self.started).as_secs_f64())
    }

    /// When to look again: the next feedback or the deadline, whichever comes first.
    pub fn wake(&self) -> Instant {
        let next = self.feedback.next();
        self.deadline.map_or(next, |d| d.min(next))
    }
}

/// How a prompt that got its reply ends: success and the result's message.
pub fn answer(waited_s: f64, fail: bool) -> (bool, String) {
    if fail {
        (false, super::SIMULATED_FAILURE.to_owned())
    } else {
        (true, format!("replied after {waited_s:.2} s"))
    }
}

/// The message of a prompt that timed out.
pub fn timeout_message(topic: &str, timeout_s: f64) -> String {
    format!("timed out: no reply on {topic} within {timeout_s} s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_must_be_finite_and_not_negative() {
        assert!(check_timeout(0.0).is_ok() && check_timeout(3.0).is_ok());
        assert_eq!(
            check_timeout(-1.0),
            Err("timeout_s is -1; it must be a finite number >= 0 (0 = no timeout)".to_owned())
        );
        assert!(check_timeout(f64::INFINITY).is_err());
    }

    #[test]
    fn zero_waits_for_ever_and_a_timeout_ends_the_wait() {
        let t0 = Instant::now();
        let mut forever = PromptWait::new(t0, 0.0);
        assert_eq!(forever.deadline(), None);
        assert!(!forever.timed_out(t0 + Duration::from_secs(1_000_000)));
        assert_eq!(forever.feedback(t0), Some(0.0));
        assert_eq!(forever.wake(), t0 + FEEDBACK_PERIOD);
        let mut timed = PromptWait::new(t0, 0.05);
        assert!(!timed.timed_out(t0 + Duration::from_millis(49)));
        assert!(timed.timed_out(t0 + Duration::from_millis(50)));
        assert!(timed.feedback(t0).is_some());
        assert_eq!(timed.wake(), t0 + Duration::from_millis(50));
        assert_eq!(
            timeout_message("/hmi/reply", 0.05),
            "timed out: no reply on /hmi/reply within 0.05 s"
        );
    }

    #[test]
    fn a_reply_succeeds_unless_told_to_fail() {
        assert_eq!(answer(1.234, false), (true, "replied after 1.23 s".to_owned()));
        assert_eq!(
            answer(1.0, true),
            (false, "simulated failure (parameter fail)".to_owned())
        );
    }
}
