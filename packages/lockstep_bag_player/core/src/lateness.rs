//! How late each message was published against its schedule (the wall time the playback clock gave its
//! log time), summarised per play: the figure `scripts/bench/bag_player.sh` reports.

/// Lateness samples of one play (the first `CAP` kept exactly; beyond, only the count and the maximum).
#[derive(Debug, Default, Clone)]
pub struct Lateness {
    samples: Vec<u64>,
    count: u64,
    max_ns: u64,
}

/// Percentiles of a play's lateness, in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatenessSummary {
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

const CAP: usize = 1_000_000;

impl Lateness {
    pub fn record(&mut self, late_ns: u64) {
        self.count += 1;
        self.max_ns = self.max_ns.max(late_ns);
        if self.samples.len() < CAP {
            self.samples.push(late_ns);
        }
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// `None` before the first sample.
    pub fn summary(&self) -> Option<LatenessSummary> {
        if self.samples.is_empty() {
            return None;
        }
        let mut sorted = self.samples.clone();
        sorted.sort_unstable();
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        Some(LatenessSummary {
            count: self.count,
            p50_ns: at(0.5),
            p99_ns: at(0.99),
            max_ns: self.max_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_what_was_recorded() {
        let mut l = Lateness::default();
        assert_eq!(l.summary(), None);
        for ns in 1..=100 {
            l.record(ns * 1000);
        }
        let s = l.summary().unwrap();
        assert_eq!(
            (s.count, s.p50_ns, s.p99_ns, s.max_ns),
            (100, 51_000, 99_000, 100_000)
        );
        l.clear();
        assert_eq!(l.summary(), None);
    }
}
