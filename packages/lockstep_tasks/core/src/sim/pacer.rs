//! When the next periodic feedback of a goal is due: every period from the goal's start, and when the
//! thread was held up past a due time, the next one a period from now rather than a burst of late ones.

use std::time::{Duration, Instant};

/// The feedback clock of one goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacer {
    next: Instant,
    period: Duration,
}

impl Pacer {
    /// The first feedback is due at `start`, then every `period`.
    pub fn new(start: Instant, period: Duration) -> Self {
        Self { next: start, period }
    }

    /// Whether a feedback is due at `now`; if so, the next one is scheduled.
    pub fn due(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        self.next += self.period;
        if self.next < now {
            // Late (the thread was held up): the next one a period from now, not a burst.
            self.next = now + self.period;
        }
        true
    }

    /// When the next feedback is due.
    pub fn next(&self) -> Instant {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_every_period_and_late_ones_do_not_burst() {
        let t0 = Instant::now();
        let period = Duration::from_millis(100);
        let mut pacer = Pacer::new(t0, period);
        assert!(pacer.due(t0), "the first one at the start");
        assert!(!pacer.due(t0 + Duration::from_millis(50)));
        assert!(pacer.due(t0 + Duration::from_millis(100)));
        assert_eq!(pacer.next(), t0 + Duration::from_millis(200));
        // Held up for half a second: one feedback now, the next a period later.
        let late = t0 + Duration::from_millis(700);
        assert!(pacer.due(late));
        assert_eq!(pacer.next(), late + period);
        assert!(!pacer.due(late + Duration::from_millis(10)));
    }
}
