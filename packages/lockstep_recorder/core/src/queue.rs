//! The bound on what waits between the subscriptions and the bag writer, in bytes (like rosbag2's
//! `max_cache_size`), and a throttle for the log lines drops cause.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes queued for the writer, bounded by `max`. Subscriptions [`try_reserve`](Self::try_reserve) before
/// queueing a message; the writer [`release`](Self::release)s once the message is written (or dropped).
#[derive(Debug)]
pub struct QueueBudget {
    used: AtomicU64,
    max: u64,
}

impl QueueBudget {
    pub fn new(max_bytes: u64) -> Self {
        Self {
            used: AtomicU64::new(0),
            max: max_bytes,
        }
    }

    /// Take `bytes` from the budget if they fit. A message larger than the whole budget is still taken when
    /// nothing else is queued, so a small bound slows large messages down instead of dropping all of them.
    pub fn try_reserve(&self, bytes: u64) -> bool {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let fits = used == 0 || used.saturating_add(bytes) <= self.max;
            if !fits {
                return false;
            }
            match self
                .used
                .compare_exchange_weak(used, used + bytes, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    /// Give `bytes` back (a queued message was written or discarded).
    pub fn release(&self, bytes: u64) {
        let _ = self.used.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |u| {
            Some(u.saturating_sub(bytes))
        });
    }

    /// Bytes queued now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// The bound.
    pub fn max(&self) -> u64 {
        self.max
    }
}

/// Lets one event through per `period` (for log lines about repeated drops).
#[derive(Debug, Clone)]
pub struct Throttle {
    period: Duration,
    last: Option<Instant>,
}

impl Throttle {
    pub fn new(period: Duration) -> Self {
        Self { period, last: None }
    }

    /// Whether an event at `now` should be reported (the first always is).
    pub fn ready(&mut self, now: Instant) -> bool {
        let due = self
            .last
            .is_none_or(|last| now.duration_since(last) >= self.period);
        if due {
            self.last = Some(now);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_refuses_what_does_not_fit_and_frees_on_release() {
        let q = QueueBudget::new(100);
        assert!(q.try_reserve(60));
        assert!(q.try_reserve(40));
        assert!(!q.try_reserve(1), "full");
        q.release(60);
        assert_eq!(q.used(), 40);
        assert!(q.try_reserve(50));
        assert!(!q.try_reserve(11));
    }

    #[test]
    fn an_oversized_message_passes_only_through_an_empty_queue() {
        let q = QueueBudget::new(10);
        assert!(q.try_reserve(1000), "empty queue takes it");
        assert!(!q.try_reserve(1), "nothing fits behind it");
        q.release(1000);
        assert_eq!(q.used(), 0);
        q.release(5); // over-release saturates at 0
        assert_eq!(q.used(), 0);
    }

    #[test]
    fn budget_holds_under_concurrent_reservations() {
        let q = std::sync::Arc::new(QueueBudget::new(1000));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                std::thread::spawn(move || (0..1000).filter(|_| q.try_reserve(7)).count())
            })
            .collect();
        let taken: usize = threads.into_iter().map(|t| t.join().unwrap_or(0)).sum();
        assert_eq!(taken, 1000 / 7);
        assert_eq!(q.used(), (1000 / 7) * 7);
    }

    #[test]
    fn throttle_lets_one_event_through_per_period() {
        let mut t = Throttle::new(Duration::from_secs(1));
        let t0 = Instant::now();
        assert!(t.ready(t0));
        assert!(!t.ready(t0 + Duration::from_millis(999)));
        assert!(t.ready(t0 + Duration::from_millis(1000)));
        assert!(!t.ready(t0 + Duration::from_millis(1500)));
    }
}
