//! Figures of a periodic loop: the intervals between its ticks, summarised as the jitter benchmark reports
//! them (median, 99th percentile, largest, and ticks later than 1.5 periods: missed cycles).

/// A summary of tick intervals (s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub p50_secs: f64,
    pub p99_secs: f64,
    pub max_secs: f64,
    /// Intervals longer than 1.5 periods.
    pub late: usize,
}

impl Summary {
    /// Summarise `intervals` (sorted in place) of a loop meant to run every `period_secs`; `None` if empty.
    pub fn of(intervals: &mut [f64], period_secs: f64) -> Option<Self> {
        if intervals.is_empty() {
            return None;
        }
        intervals.sort_by(f64::total_cmp);
        let at = |q: f64| intervals[((intervals.len() - 1) as f64 * q).round() as usize];
        Some(Self {
            count: intervals.len(),
            p50_secs: at(0.5),
            p99_secs: at(0.99),
            max_secs: intervals[intervals.len() - 1],
            late: intervals.iter().filter(|i| **i > 1.5 * period_secs).count(),
        })
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} intervals: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms, {} late (> 1.5 periods)",
            self.count,
            self.p50_secs * 1e3,
            self.p99_secs * 1e3,
            self.max_secs * 1e3,
            self.late
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_late_ticks() {
        let mut v: Vec<f64> = (0..100).map(|i| 0.002 + f64::from(i) * 1e-6).collect();
        v[50] = 0.0045;
        let s = Summary::of(&mut v, 0.002).unwrap();
        assert_eq!((s.count, s.late), (100, 1));
        assert_eq!(s.max_secs, 0.0045);
        assert!((s.p50_secs - 0.00205).abs() < 2e-6, "{s}");
        assert_eq!(Summary::of(&mut [], 0.002), None);
    }
}
