//! What the node's services take and answer, without their message types: a request read from the service
//! fields (0 meaning "not given"), the text of each answer, and how long planning a request takes, which sets
//! how far ahead the next one is planned.

use std::collections::VecDeque;
use std::time::Duration;

use crate::plan::{Plan, Refusal};
use crate::session::Request;

/// A value of a request field, where 0 (or less) means "not given". NaN is kept: the plan refuses it.
fn given(value: f64) -> Option<f64> {
    (value > 0.0 || value.is_nan()).then_some(value)
}

impl Request {
    /// A pause request: `stop_time_secs` 0 asks for the shortest feasible stop.
    pub fn pause(stop_time_secs: f64) -> Request {
        Request::Pause {
            stop_secs: given(stop_time_secs),
        }
    }

    /// A resume request: `start_time_secs` 0 for the shortest feasible ramp, `speed_factor` 0 for the factor
    /// before the pause.
    pub fn resume(start_time_secs: f64, speed_factor: f64) -> Request {
        Request::Resume {
            start_secs: given(start_time_secs),
            factor: given(speed_factor),
        }
    }
}

/// The speed factor a goal asks for: 0 (or less) plays at 1; NaN stays NaN, which the session refuses.
pub fn goal_factor(speed_factor: f64) -> f64 {
    given(speed_factor).unwrap_or(1.0)
}

impl Plan {
    /// The answer to a pause that will happen.
    pub fn pause_message(&self) -> String {
        format!(
            "stopping along the path in {:.4} s (ramp {:.4} s after {:.4} s); t_min {:.4} s, t_feasible {:.4} s",
            self.total_secs(),
            self.ramp_secs,
            self.delay_secs,
            self.t_min_secs,
            self.t_feasible_secs
        )
    }

    /// The answer to a resume that will happen.
    pub fn resume_message(&self) -> String {
        format!("resuming to s = {:.4} in {:.4} s", self.to, self.total_secs())
    }

    /// The answer to a speed change to `factor` that will happen (at once, or when the goal plays).
    pub fn speed_message(&self, factor: f64) -> String {
        if *self == Plan::NOTHING {
            format!("s = {factor} once playing")
        } else {
            format!(
                "ramping s {:.4} -> {:.4} in {:.4} s",
                self.from,
                self.to,
                self.total_secs()
            )
        }
    }
}

impl Refusal {
    /// `(t_min, t_feasible)` of a refused pause, as far as they were found (0 where not).
    pub fn stop_times(&self) -> (f64, f64) {
        match self {
            Refusal::TooShort {
                t_min_secs,
                t_feasible_secs,
                ..
            } => (*t_min_secs, *t_feasible_secs),
            // Refused on the lower bound alone: the shortest feasible stop was not searched for.
            Refusal::BelowMinimum { t_min_secs, .. } => (*t_min_secs, 0.0),
            _ => (0.0, 0.0),
        }
    }
}

/// Planning times remembered to size the ticks ahead.
const REMEMBERED: usize = 8;
/// Planning time assumed before any was measured.
const FIRST_GUESS: Duration = Duration::from_millis(5);
/// The most the change of a request is put off to plan it.
const LONGEST_AHEAD: Duration = Duration::from_millis(500);

/// The last few planning times: a request is planned far enough ahead to be ready in time.
#[derive(Debug, Default, Clone)]
pub struct PlanningTimes {
    recent: VecDeque<Duration>,
}

impl PlanningTimes {
    /// Remembers how long one planning took (the oldest of [`REMEMBERED`] is forgotten).
    pub fn record(&mut self, took: Duration) {
        if self.recent.len() == REMEMBERED {
            self.recent.pop_front();
        }
        self.recent.push_back(took);
    }

    /// Ticks ahead to plan a request at: twice the longest recent planning time, doubled again per late try
    /// (`late`), at least 2 ticks and at most [`LONGEST_AHEAD`].
    pub fn ticks_ahead(&self, period_s: f64, late: u32) -> u64 {
        let longest = self.recent.iter().max().copied().unwrap_or(FIRST_GUESS);
        let wanted = longest.as_secs_f64() * 2.0 * f64::from(1u32 << late.min(8)) + 0.001;
        let most = (LONGEST_AHEAD.as_secs_f64() / period_s).ceil().max(2.0);
        ((wanted / period_s).ceil() + 1.0).clamp(2.0, most) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_fields_mean_not_given() {
        assert_eq!(Request::pause(0.0), Request::Pause { stop_secs: None });
        assert_eq!(Request::pause(0.5), Request::Pause { stop_secs: Some(0.5) });
        assert_eq!(
            Request::resume(0.0, 2.0),
            Request::Resume {
                start_secs: None,
                factor: Some(2.0)
            }
        );
        assert_eq!(goal_factor(0.0), 1.0);
        assert_eq!(goal_factor(-1.0), 1.0);
        assert_eq!(goal_factor(0.5), 0.5);
        assert!(goal_factor(f64::NAN).is_nan());
    }

    #[test]
    fn answers_say_what_will_happen() {
        assert_eq!(Plan::NOTHING.speed_message(0.5), "s = 0.5 once playing");
        let plan = Plan {
            delay_secs: 0.1,
            ramp_secs: 0.4,
            from: 1.0,
            to: 0.5,
            ..Plan::NOTHING
        };
        assert_eq!(plan.speed_message(0.5), "ramping s 1.0000 -> 0.5000 in 0.5000 s");
        assert_eq!(plan.resume_message(), "resuming to s = 0.5000 in 0.5000 s");
        assert!(plan
            .pause_message()
            .starts_with("stopping along the path in 0.5000 s (ramp 0.4000 s after 0.1000 s)"));
        assert_eq!(Refusal::Invalid("x".into()).stop_times(), (0.0, 0.0));
        let refusal = Refusal::AboveMax {
            requested: 3.0,
            s_max: 2.0,
        };
        assert_eq!(refusal.stop_times(), (0.0, 0.0));
    }

    #[test]
    fn planning_ahead_grows_with_planning_time_and_late_tries() {
        let mut times = PlanningTimes::default();
        // 5 ms guessed, doubled, + 1 ms over 4 ms ticks: 3 ticks, + 1.
        assert_eq!(times.ticks_ahead(0.004, 0), 4);
        assert_eq!(times.ticks_ahead(0.004, 1), 7);
        for _ in 0..20 {
            times.record(Duration::from_millis(1));
        }
        assert_eq!(times.ticks_ahead(0.004, 0), 2);
        times.record(Duration::from_secs(10));
        // Never more than 500 ms ahead.
        assert_eq!(times.ticks_ahead(0.004, 0), 125);
    }
}
