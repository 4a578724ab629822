//! Bag time against wall time, under a rate and a pause (like rosbag2's TimeControllerClock).
//!
//! Wall time is any monotonic clock in nanoseconds; bag time is the bag's log time in nanoseconds. The clock
//! keeps one anchor (a bag time and the wall time it was current) and a rate: at wall time `w`, bag time is
//! `anchor_bag + (w - anchor_wall) * rate`, or `anchor_bag` while paused. Every change (rate, pause,
//! resume, jump) re-anchors at the current instant, so bag time never jumps except on [`Self::jump`].

/// Maps bag time to wall time and back.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaybackClock {
    anchor_bag_ns: u64,
    anchor_wall_ns: u64,
    rate: f64,
    paused: bool,
}

impl PlaybackClock {
    /// Bag time `bag_ns` is current at wall time `wall_ns`. `rate` must be positive and finite (checked
    /// by the options; a bad rate here is replaced by 1.0).
    pub fn new(bag_ns: u64, wall_ns: u64, rate: f64, paused: bool) -> Self {
        Self {
            anchor_bag_ns: bag_ns,
            anchor_wall_ns: wall_ns,
            rate: sane_rate(rate),
            paused,
        }
    }

    /// Bag time at wall time `wall_ns` (never before the anchor).
    pub fn now(&self, wall_ns: u64) -> u64 {
        if self.paused {
            return self.anchor_bag_ns;
        }
        let elapsed = wall_ns.saturating_sub(self.anchor_wall_ns) as f64 * self.rate;
        self.anchor_bag_ns.saturating_add(elapsed.round() as u64)
    }

    /// Wall time at which bag time `bag_ns` comes; `None` while paused. A bag time already past gives the
    /// anchor's wall time (due now).
    pub fn wall_at(&self, bag_ns: u64) -> Option<u64> {
        if self.paused {
            return None;
        }
        let ahead = bag_ns.saturating_sub(self.anchor_bag_ns) as f64 / self.rate;
        Some(self.anchor_wall_ns.saturating_add(ahead.round() as u64))
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Change the rate from wall time `wall_ns` on; `false` (and no change) unless `rate` is positive and
    /// finite.
    pub fn set_rate(&mut self, rate: f64, wall_ns: u64) -> bool {
        if !(rate.is_finite() && rate > 0.0) {
            return false;
        }
        self.reanchor(wall_ns);
        self.rate = rate;
        true
    }

    /// Stop bag time at its value at `wall_ns`; `false` if already paused.
    pub fn pause(&mut self, wall_ns: u64) -> bool {
        if self.paused {
            return false;
        }
        self.reanchor(wall_ns);
        self.paused = true;
        true
    }

    /// Let bag time run again from where it stopped; `false` if not paused.
    pub fn resume(&mut self, wall_ns: u64) -> bool {
        if !self.paused {
            return false;
        }
        self.anchor_wall_ns = wall_ns;
        self.paused = false;
        true
    }

    /// Make `bag_ns` the current bag time at `wall_ns` (seek, loop, play_next), paused or not.
    pub fn jump(&mut self, bag_ns: u64, wall_ns: u64) {
        self.anchor_bag_ns = bag_ns;
        self.anchor_wall_ns = wall_ns;
    }

    fn reanchor(&mut self, wall_ns: u64) {
        self.anchor_bag_ns = self.now(wall_ns);
        self.anchor_wall_ns = wall_ns;
    }
}

fn sane_rate(rate: f64) -> f64 {
    if rate.is_finite() && rate > 0.0 {
        rate
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn bag_time_runs_at_the_rate() {
        let c = PlaybackClock::new(100 * S, 5 * S, 2.0, false);
        assert_eq!(c.now(5 * S), 100 * S);
        assert_eq!(c.now(6 * S), 102 * S);
        assert_eq!(c.wall_at(104 * S), Some(7 * S));
        // A message already due is due now (at the anchor), never in the past of it.
        assert_eq!(c.wall_at(90 * S), Some(5 * S));
    }

    #[test]
    fn pause_stops_bag_time_and_resume_continues_without_a_jump() {
        let mut c = PlaybackClock::new(0, 0, 1.0, false);
        assert!(c.pause(3 * S));
        assert!(!c.pause(4 * S));
        assert_eq!(c.now(10 * S), 3 * S);
        assert_eq!(c.wall_at(5 * S), None);
        assert!(c.resume(10 * S));
        assert_eq!(c.now(11 * S), 4 * S);
        assert_eq!(c.wall_at(5 * S), Some(12 * S));
    }

    #[test]
    fn a_rate_change_keeps_the_current_bag_time() {
        let mut c = PlaybackClock::new(0, 0, 1.0, false);
        assert!(c.set_rate(0.5, 4 * S));
        assert_eq!(c.now(4 * S), 4 * S);
        assert_eq!(c.now(6 * S), 5 * S);
        assert!(!c.set_rate(0.0, 6 * S));
        assert!(!c.set_rate(-1.0, 6 * S));
        assert!(!c.set_rate(f64::NAN, 6 * S));
        assert_eq!(c.rate(), 0.5);
    }

    #[test]
    fn a_jump_moves_bag_time_and_keeps_the_pause() {
        let mut c = PlaybackClock::new(0, 0, 1.0, true);
        c.jump(50 * S, 7 * S);
        assert_eq!(c.now(9 * S), 50 * S);
        assert!(c.is_paused());
        c.resume(9 * S);
        assert_eq!(c.now(10 * S), 51 * S);
    }
}
