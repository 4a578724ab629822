//! Input the manager drops (a `/task_facts` message that does not parse, a goal rejected at once), logged at
//! most [`LINES_PER_PERIOD`] times per [`LOG_PERIOD_S`] seconds per kind, each line with the total so far and how many
//! went unlogged: a flood of bad input cannot flood the log, and the count says how much there was.

/// The window of the log limit [s].
pub const LOG_PERIOD_S: f64 = 5.0;
/// Log lines per kind of refusal and window.
pub const LINES_PER_PERIOD: u32 = 3;

pub struct Refusals {
    /// What is refused, for the log line (`/task_facts message`).
    what: &'static str,
    /// Refused since the node started.
    pub total: u64,
    /// Refused and not logged since the last log line.
    unlogged: u64,
    /// The current window: when it began and the lines logged in it.
    window: Option<(f64, u32)>,
}

impl Refusals {
    pub fn new(what: &'static str) -> Self {
        Self {
            what,
            total: 0,
            unlogged: 0,
            window: None,
        }
    }

    /// Count one refusal at `now` [s]; the log line to write now, if one is allowed.
    pub fn refused(&mut self, reason: &str, now: f64) -> Option<String> {
        self.total += 1;
        let lines = match self.window {
            Some((began, lines)) if now - began < LOG_PERIOD_S => lines,
            _ => {
                self.window = Some((now, 0));
                0
            }
        };
        if lines >= LINES_PER_PERIOD {
            self.unlogged += 1;
            return None;
        }
        if let Some((_, lines)) = self.window.as_mut() {
            *lines += 1;
        }
        let unlogged = std::mem::take(&mut self.unlogged);
        let also = if unlogged > 0 {
            format!("; {unlogged} more not logged since the last report")
        } else {
            String::new()
        };
        Some(format!(
            "{} refused ({} so far{also}): {reason}",
            self.what, self.total
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_gives_a_few_lines_per_period_with_the_counts() {
        let mut r = Refusals::new("/task_facts message");
        let t0 = 100.0;
        let first = r.refused("line 1:3: expected `)`", t0).unwrap_or_default();
        assert_eq!(
            first,
            "/task_facts message refused (1 so far): line 1:3: expected `)`"
        );
        let logged = (1..100)
            .filter_map(|i| r.refused("bad", t0 + i as f64 * 1e-3))
            .count();
        assert_eq!(logged as u32, LINES_PER_PERIOD - 1);
        let next = r.refused("bad", t0 + LOG_PERIOD_S).unwrap_or_default();
        let unlogged = 100 - LINES_PER_PERIOD;
        assert!(
            next.contains(&format!(
                "(101 so far; {unlogged} more not logged since the last report)"
            )),
            "{next}"
        );
        assert_eq!(r.total, 101);
    }
}
