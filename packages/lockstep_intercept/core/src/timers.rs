//! Which timers are a node's and which are an executor's own time-outs.
//!
//! rclpy's executors implement `spin_once(timeout_sec=...)` with a timer on the executor's steady clock: it
//! has no callback and is never called, it only ends a wait. In replay mode the node's own timers fire only
//! when the replay grants them; the executor's time-out timer must keep expiring in real time, or a node
//! spinning with a time-out would never get back to its loop (nor see a Ctrl-C it handles there). Such
//! timers get no number either, so the numbers of the node's timers do not depend on how often the
//! program spun with a time-out.
//!
//! What tells them apart, without reading the client library's code: a node's timer is on a ROS-time clock,
//! or on a clock made for it; an rclpy executor makes its steady clock and then, right after, the guard
//! condition that wakes it on a signal. A steady or system clock followed on its thread by a guard condition
//! is an executor's clock, and the timers on it are time-outs.

use std::collections::{BTreeMap, BTreeSet};

/// An rcl clock or timer, by its address in the process.
pub type Address = usize;

/// What the interceptor saw of clocks and guard conditions, per thread.
#[derive(Debug, Default)]
pub struct TimerClocks {
    /// Per thread, the steady or system clock made last, while nothing else was made after it.
    fresh: BTreeMap<u32, Address>,
    /// Clocks an executor made for its time-outs.
    executor: BTreeSet<Address>,
}

impl TimerClocks {
    /// A clock was initialised on `thread`; `ros_time` for a ROS-time clock.
    pub fn clock_made(&mut self, thread: u32, clock: Address, ros_time: bool) {
        if ros_time {
            self.fresh.remove(&thread);
        } else {
            self.fresh.insert(thread, clock);
        }
    }

    /// A guard condition was initialised on `thread`: a steady clock made just before is an executor's.
    pub fn guard_condition_made(&mut self, thread: u32) {
        if let Some(clock) = self.fresh.remove(&thread) {
            self.executor.insert(clock);
        }
    }

    /// A timer was initialised on `thread` with `clock`: is it a node's (true) or an executor's time-out?
    pub fn timer_made(&mut self, thread: u32, clock: Address) -> bool {
        self.fresh.remove(&thread);
        !self.executor.contains(&clock)
    }

    /// A clock was finalised (its address may be reused).
    pub fn clock_gone(&mut self, clock: Address) {
        self.executor.remove(&clock);
        self.fresh.retain(|_, c| *c != clock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_rclpy_executor_clock_makes_time_out_timers() {
        let mut clocks = TimerClocks::default();
        // rclpy: the node's ROS clock and its timer, then the executor's steady clock and guard condition.
        clocks.clock_made(1, 0x10, true);
        assert!(clocks.timer_made(1, 0x10));
        clocks.clock_made(1, 0x20, false);
        clocks.guard_condition_made(1);
        assert!(!clocks.timer_made(1, 0x20));
        assert!(!clocks.timer_made(1, 0x20), "every time-out of that executor");
        assert!(clocks.timer_made(1, 0x10));
    }

    #[test]
    fn a_wall_timer_with_its_own_clock_is_the_nodes() {
        let mut clocks = TimerClocks::default();
        // rclcpp and r2r wall timers: a steady clock made for the timer (r2r moves it: another address).
        clocks.clock_made(1, 0x30, false);
        assert!(clocks.timer_made(1, 0x31));
        clocks.guard_condition_made(1);
        clocks.clock_made(1, 0x40, false);
        assert!(clocks.timer_made(1, 0x40));
        // A guard condition made after the timer does not turn its clock into an executor's.
        clocks.guard_condition_made(1);
        assert!(
            clocks.timer_made(1, 0x40),
            "a second timer on a shared steady clock (rclc)"
        );
    }

    #[test]
    fn threads_and_finalised_clocks_are_apart() {
        let mut clocks = TimerClocks::default();
        clocks.clock_made(1, 0x50, false);
        clocks.guard_condition_made(2);
        assert!(clocks.timer_made(1, 0x50), "a guard condition on another thread");
        clocks.clock_made(1, 0x60, false);
        clocks.guard_condition_made(1);
        clocks.clock_gone(0x60);
        assert!(
            clocks.timer_made(1, 0x60),
            "an address reused after the executor's clock went"
        );
    }
}
