//! Whether a simulated actuator is busy: occupied (the `~/occupy` service) until some time, or holding a
//! goal from its request until it ends, with that goal's estimated end. The caller passes the time in.

use std::time::Instant;

/// The busy state of one actuator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Busy {
    /// Busy through `~/occupy` until then.
    occupied_until: Option<Instant>,
    /// A goal holds the actuator (from its request until it ends); `Some(deadline)`: its estimated end.
    goal: Option<Option<Instant>>,
}

/// Seconds from `now` until `t` (0 once past, or without `t`).
pub fn secs_until(t: Option<Instant>, now: Instant) -> f64 {
    t.map_or(0.0, |t| t.saturating_duration_since(now).as_secs_f64())
}

impl Busy {
    /// Take the actuator for a new goal at `now`, or say why it is busy. `deadline`: when the goal is
    /// expected to end.
    pub fn try_reserve(&mut self, now: Instant, deadline: Option<Instant>) -> Result<(), String> {
        if self.goal.is_some() {
            return Err("busy: another goal is running".to_owned());
        }
        if let Some(until) = self.occupied_until.filter(|t| *t > now) {
            return Err(format!(
                "busy: occupied for another {:.2} s",
                secs_until(Some(until), now)
            ));
        }
        self.goal = Some(deadline);
        Ok(())
    }

    /// A new estimate of when the running goal ends; nothing without a goal.
    pub fn set_goal_deadline(&mut self, deadline: Option<Instant>) {
        if self.goal.is_some() {
            self.goal = Some(deadline);
        }
    }

    /// The goal ended (or was never started): free unless occupied.
    pub fn release(&mut self) {
        self.goal = None;
    }

    /// Busy for `duration_s` from `now` (0: not occupied any more): the answer's message, or why not (also
    /// for a span longer than the clock can count ahead).
    pub fn occupy(&mut self, now: Instant, duration_s: f64) -> Result<String, String> {
        if !duration_s.is_finite() || duration_s < 0.0 {
            return Err(format!(
                "duration_s is {duration_s}; it must be a finite number >= 0"
            ));
        }
        let until = super::secs_after(now, duration_s).ok_or_else(|| {
            format!("duration_s is {duration_s}; it is longer than the clock can count ahead")
        })?;
        self.occupied_until = Some(until);
        Ok(if duration_s > 0.0 {
            format!("busy for {duration_s} s from now: goals are rejected until then")
        } else {
            "not occupied any more".to_owned()
        })
    }

    /// (busy, remaining busy time [s]) at `now`: the longer of the occupation and the goal's estimate.
    pub fn snapshot(&self, now: Instant) -> (bool, f64) {
        let occupied = secs_until(self.occupied_until, now);
        let goal = self.goal.map(|deadline| secs_until(deadline, now));
        (
            occupied > 0.0 || goal.is_some(),
            occupied.max(goal.unwrap_or(0.0)),
        )
    }

    /// When the occupation ends, if it is still ahead of `now`.
    pub fn occupied_until(&self, now: Instant) -> Option<Instant> {
        self.occupied_until.filter(|t| *t > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn occupied_or_running_means_busy() {
        let t0 = Instant::now();
        let mut busy = Busy::default();
        assert_eq!(busy.snapshot(t0), (false, 0.0));
        assert!(busy.occupy(t0, f64::NAN).is_err());
        assert!(busy.occupy(t0, -1.0).is_err());
        assert!(busy.occupy(t0, 2.0).is_ok());
        assert_eq!(busy.snapshot(t0 + Duration::from_millis(500)), (true, 1.5));
        assert_eq!(
            busy.try_reserve(t0 + Duration::from_millis(500), None),
            Err("busy: occupied for another 1.50 s".to_owned())
        );
        // Once the occupation is over, a goal may take it.
        assert_eq!(busy.occupied_until(t0 + Duration::from_secs(3)), None);
        assert!(busy.try_reserve(t0 + Duration::from_secs(3), None).is_ok());
        assert_eq!(busy.snapshot(t0 + Duration::from_secs(3)), (true, 0.0));
        assert_eq!(
            busy.try_reserve(t0 + Duration::from_secs(3), None),
            Err("busy: another goal is running".to_owned())
        );
        busy.release();
        assert_eq!(busy.snapshot(t0 + Duration::from_secs(3)), (false, 0.0));
    }

    #[test]
    fn the_remaining_time_is_the_longer_of_occupation_and_goal() {
        let t0 = Instant::now();
        let mut busy = Busy::default();
        busy.set_goal_deadline(Some(t0 + Duration::from_secs(9)));
        assert_eq!(busy.snapshot(t0), (false, 0.0), "no goal: no deadline kept");
        assert!(busy.try_reserve(t0, Some(t0 + Duration::from_secs(4))).is_ok());
        assert!(busy.occupy(t0, 1.0).is_ok());
        assert_eq!(busy.snapshot(t0), (true, 4.0));
        busy.set_goal_deadline(Some(t0 + Duration::from_millis(500)));
        assert_eq!(busy.snapshot(t0), (true, 1.0));
        assert_eq!(busy.snapshot(t0 + Duration::from_secs(2)), (true, 0.0));
        assert!(busy.occupy(t0, 0.0).is_ok_and(|m| m == "not occupied any more"));
    }
}
