//! Figures of a periodic loop, as the jitter benchmark reports them: the intervals between its ticks, their
//! jitter (|interval - period|) at the median, 99th percentile and worst, and missed cycles (intervals
//! longer than 1.5 periods).

/// The intervals between the instants a loop marks (s), for a [`Summary`].
#[derive(Debug, Clone, Default)]
pub struct Intervals {
    last: Option<std::time::Instant>,
    pub secs: Vec<f64>,
}

impl Intervals {
    /// The last instant marked.
    pub fn last(&self) -> Option<std::time::Instant> {
        self.last
    }

    /// Mark `now`; the interval since the last mark is kept unless it is `max_gap` or longer (a pause
    /// between bursts, not a late tick).
    pub fn mark(&mut self, now: std::time::Instant, max_gap: Option<std::time::Duration>) {
        if let Some(last) = self.last.replace(now) {
            let gap = now - last;
            if max_gap.is_none_or(|max| gap < max) {
                self.secs.push(gap.as_secs_f64());
            }
        }
    }
}

/// A summary of the tick intervals of a loop meant to run every `period_secs`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub period_secs: f64,
    /// Median interval (s).
    pub interval_p50_secs: f64,
    /// |interval - period| (s): median, 99th percentile, largest.
    pub jitter_p50_secs: f64,
    pub jitter_p99_secs: f64,
    pub jitter_max_secs: f64,
    /// Intervals longer than 1.5 periods.
    pub missed: usize,
}

/// The `q` quantile of sorted `v` (nearest rank).
fn quantile(v: &[f64], q: f64) -> f64 {
    v[((v.len() - 1) as f64 * q).round() as usize]
}

impl Summary {
    /// Summarise `intervals` (s); `None` if there are none.
    pub fn of(intervals: &[f64], period_secs: f64) -> Option<Self> {
        if intervals.is_empty() {
            return None;
        }
        let mut sorted = intervals.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mut jitter: Vec<f64> = intervals.iter().map(|i| (i - period_secs).abs()).collect();
        jitter.sort_by(f64::total_cmp);
        Some(Self {
            count: intervals.len(),
            period_secs,
            interval_p50_secs: quantile(&sorted, 0.5),
            jitter_p50_secs: quantile(&jitter, 0.5),
            jitter_p99_secs: quantile(&jitter, 0.99),
            jitter_max_secs: jitter[jitter.len() - 1],
            missed: intervals.iter().filter(|i| **i > 1.5 * period_secs).count(),
        })
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} intervals of {:.3} ms (median {:.3} ms): jitter p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; {} missed (> 1.5 periods)",
            self.count,
            self.period_secs * 1e3,
            self.interval_p50_secs * 1e3,
            self.jitter_p50_secs * 1e3,
            self.jitter_p99_secs * 1e3,
            self.jitter_max_secs * 1e3,
            self.missed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_percentiles_and_missed_cycles() {
        // 100 intervals: 2 ms + i us, one of them 4.5 ms.
        let mut v: Vec<f64> = (0..100).map(|i| 0.002 + f64::from(i) * 1e-6).collect();
        v[50] = 0.0045;
        let s = Summary::of(&v, 0.002).unwrap();
        assert_eq!((s.count, s.missed), (100, 1));
        assert!((s.jitter_max_secs - 0.0025).abs() < 1e-12, "{s}");
        assert!((s.jitter_p50_secs - 50e-6).abs() < 1.5e-6, "{s}");
        assert!((s.jitter_p99_secs - 99e-6).abs() < 1e-12, "{s}");
        // Early ticks are jitter too.
        let s = Summary::of(&[0.001, 0.003], 0.002).unwrap();
        assert!((s.jitter_p50_secs - 0.001).abs() < 1e-12 && s.missed == 0, "{s}");
        assert_eq!(Summary::of(&[], 0.002), None);
    }
}
