//! What the services and the play thread share: the playback clock, requests that need the play thread
//! (play_next, burst, seek, play), the stop flag and progress counters. One mutex and one condition
//! variable: every change wakes the play thread, which re-decides what is due.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::{rate_refusal, PlayRequest, PlaybackClock};

/// Where the play thread sends a request's answer (the node wraps its reply channel in one). Dropped
/// without an answer, the asker learns that the player stopped.
pub type Reply<T> = Box<dyn FnOnce(T) + Send>;

/// Requests served by the play thread; each answers through its [`Reply`].
pub enum Request {
    PlayNext(Reply<Result<(), String>>),
    Burst(u64, Reply<(u64, String)>),
    Seek(u64, Reply<Result<(), String>>),
    Play(PlayRequest, Reply<Result<(), String>>),
}

pub struct State {
    pub clock: PlaybackClock,
    pub requests: VecDeque<Request>,
    pub stop: bool,
    /// A play is running (false once it ended and before `~/play`).
    pub playing: bool,
}

pub struct Control {
    state: Mutex<State>,
    wake: Condvar,
    base: Instant,
    /// Messages published in this play, and how many it holds.
    pub played: AtomicU64,
    pub total: AtomicU64,
}

impl Control {
    pub fn new(rate: f64, paused: bool) -> Self {
        Self {
            state: Mutex::new(State {
                clock: PlaybackClock::new(0, 0, rate, paused),
                requests: VecDeque::new(),
                stop: false,
                playing: true,
            }),
            wake: Condvar::new(),
            base: Instant::now(),
            played: AtomicU64::new(0),
            total: AtomicU64::new(0),
        }
    }

    /// Monotonic wall time in ns (since this control was made).
    pub fn wall_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// The state, locked (a panic elsewhere does not stop playback control).
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Change the state and wake the play thread.
    pub fn change<R>(&self, f: impl FnOnce(&mut State, u64) -> R) -> R {
        let wall = self.wall_ns();
        let out = f(&mut self.lock(), wall);
        self.wake.notify_all();
        out
    }

    pub fn request(&self, request: Request) {
        self.change(|s, _| s.requests.push_back(request));
    }

    pub fn stop(&self) {
        self.change(|s, _| s.stop = true);
    }

    /// `~/pause`.
    pub fn pause(&self) {
        self.change(|s, wall| s.clock.pause(wall));
    }

    /// `~/resume`.
    pub fn resume(&self) {
        self.change(|s, wall| s.clock.resume(wall));
    }

    /// `~/toggle_paused`: pause when playing, resume when paused.
    pub fn toggle_paused(&self) {
        self.change(|s, wall| {
            if !s.clock.pause(wall) {
                s.clock.resume(wall);
            }
        });
    }

    pub fn is_paused(&self) -> bool {
        self.lock().clock.is_paused()
    }

    pub fn rate(&self) -> f64 {
        self.lock().clock.rate()
    }

    /// `~/set_rate`: a rate the clock does not take is refused saying why, and the old one stays.
    pub fn set_rate(&self, rate: f64) -> Result<(), String> {
        if self.change(|s, wall| s.clock.set_rate(rate, wall)) {
            Ok(())
        } else {
            Err(rate_refusal(rate))
        }
    }

    /// Wait for a change, at most `timeout` (`None`: until one comes).
    pub fn wait<'a>(&self, guard: MutexGuard<'a, State>, timeout: Option<Duration>) -> MutexGuard<'a, State> {
        match timeout {
            None => self.wake.wait(guard).unwrap_or_else(|p| p.into_inner()),
            Some(t) => self
                .wake
                .wait_timeout(guard, t)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0),
        }
    }

    /// Bag time now (for /clock and progress).
    pub fn bag_now(&self) -> u64 {
        let wall = self.wall_ns();
        self.lock().clock.now(wall)
    }

    pub fn progress(&self) -> (u64, u64) {
        (
            self.played.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_rate_keeps_the_old_one_and_toggle_flips_pause() {
        let control = Control::new(1.0, false);
        assert!(control.set_rate(2.0).is_ok());
        assert_eq!(
            control.set_rate(0.0),
            Err("rate 0 refused: the rate must be a number > 0".to_owned())
        );
        assert_eq!(control.rate(), 2.0);
        control.toggle_paused();
        assert!(control.is_paused());
        control.toggle_paused();
        assert!(!control.is_paused());
    }
}
