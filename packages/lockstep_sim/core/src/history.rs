//! Bounded histories: the path the vehicle drove and the states it went through. A simulator may run for
//! days; what it keeps (and the node republishes for rviz and late subscribers) must not grow with it.

/// The true path as `(time, x, y)` samples at least `spacing_m` apart. When it would hold more than
/// `max_points`, every other sample is dropped (the first and the latest stay) and the spacing doubles: the
/// memory is bounded and the path still spans the whole run, at a coarser resolution the longer it gets.
#[derive(Debug, Clone, PartialEq)]
pub struct PathHistory {
    points: Vec<(f64, f64, f64)>,
    spacing_m: f64,
    max_points: usize,
}

impl PathHistory {
    /// A path starting at `start`, sampled every `spacing_m` (> 0), holding at most `max_points` (>= 2).
    pub fn new(start: (f64, f64, f64), spacing_m: f64, max_points: usize) -> Self {
        let max_points = max_points.max(2);
        let mut points = Vec::with_capacity(max_points.min(4096) + 1);
        points.push(start);
        PathHistory {
            points,
            spacing_m,
            max_points,
        }
    }

    /// Adds `(t, x, y)` if it is at least the current spacing away from the latest sample.
    pub fn record(&mut self, t: f64, x: f64, y: f64) {
        if let Some(&(_, lx, ly)) = self.points.last() {
            if (x - lx).hypot(y - ly) < self.spacing_m {
                return;
            }
        }
        self.points.push((t, x, y));
        if self.points.len() > self.max_points {
            let last = self.points.len() - 1;
            let mut i = 0;
            self.points.retain(|_| {
                let keep = i % 2 == 0 || i == last;
                i += 1;
                keep
            });
            self.spacing_m *= 2.0;
        }
    }

    /// The samples, oldest first.
    pub fn points(&self) -> &[(f64, f64, f64)] {
        &self.points
    }

    /// The current spacing between samples (m).
    pub fn spacing_m(&self) -> f64 {
        self.spacing_m
    }

    /// The bound on the number of samples.
    pub fn max_points(&self) -> usize {
        self.max_points
    }
}

/// The latest `depth` entries of a log; older ones are dropped (and counted).
#[derive(Debug, Clone, PartialEq)]
pub struct Recent<T> {
    items: Vec<T>,
    depth: usize,
    dropped: u64,
}

impl<T> Recent<T> {
    /// Keeps at most `depth` (>= 1) entries.
    pub fn new(depth: usize) -> Self {
        Recent {
            items: Vec::new(),
            depth: depth.max(1),
            dropped: 0,
        }
    }

    /// Appends, dropping the oldest entry when full. (A `Vec` so that [`Recent::as_slice`] works: removing
    /// the front moves at most `depth` entries, and entries come rarely -- state changes.)
    pub fn push(&mut self, item: T) {
        if self.items.len() >= self.depth {
            self.items.remove(0);
            self.dropped += 1;
        }
        self.items.push(item);
    }

    /// The entries, oldest first.
    pub fn as_slice(&self) -> &[T] {
        &self.items
    }

    /// How many entries were dropped to stay within the depth.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_drive_keeps_a_bounded_path_spanning_the_whole_run() {
        let mut path = PathHistory::new((0.0, 0.0, 0.0), 0.05, 100);
        // 10 km in 1 cm steps.
        for i in 1..=1_000_000 {
            let x = f64::from(i) * 0.01;
            path.record(f64::from(i), x, 0.0);
            assert!(path.points().len() <= 100);
        }
        let points = path.points();
        assert_eq!(points[0], (0.0, 0.0, 0.0), "the start stays");
        let (_, last_x, _) = points[points.len() - 1];
        assert!(last_x > 10_000.0 - 2.0 * path.spacing_m(), "{last_x}");
        assert!(points.len() >= 50, "{}", points.len());
        assert!(points.windows(2).all(|w| w[0].0 < w[1].0), "in time order");
        assert!(
            path.spacing_m() > 100.0 && path.spacing_m() < 400.0,
            "{}",
            path.spacing_m()
        );
    }

    #[test]
    fn a_short_drive_keeps_every_sample() {
        let mut path = PathHistory::new((0.0, 1.0, 1.0), 0.05, 2000);
        for i in 1..=100 {
            path.record(f64::from(i), 1.0 + f64::from(i) * 0.06, 1.0);
        }
        assert_eq!(path.points().len(), 101);
        assert_eq!(path.spacing_m(), 0.05);
        path.record(101.0, 7.0 + 0.01, 1.0);
        assert_eq!(path.points().len(), 101, "closer than the spacing: not a sample");
    }

    #[test]
    fn recent_keeps_the_latest() {
        let mut r = Recent::new(3);
        for i in 0..10 {
            r.push(i);
        }
        assert_eq!(r.as_slice(), [7, 8, 9]);
        assert_eq!(r.dropped(), 7);
        let mut one = Recent::new(0);
        one.push("a");
        one.push("b");
        assert_eq!(one.as_slice(), ["b"]);
    }
}
