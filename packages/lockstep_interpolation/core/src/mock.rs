//! The mock joints' logic (`lockstep_mock_joints`), without ROS: position-controlled joints that take
//! forward commands or follow a trajectory like a joint_trajectory_controller, move at once or with a
//! first-order lag, and count an overspeed alarm whenever a commanded step needs more than a joint's limit.
//! The node feeds it the messages' numbers and publishes what it answers.

use std::time::{Duration, Instant};

use crate::limits::AxisLimits;
use crate::monitor::Monitor;
use crate::timing::{Intervals, Summary};

/// Commands stopping this long ends a burst: its arrival timing is logged.
pub const BURST_GAP: Duration = Duration::from_millis(500);

/// The command period: `command_period_s`, or `period_s` (the player's) when it is 0.
pub fn command_period(command_period_s: f64, period_s: f64) -> f64 {
    if command_period_s > 0.0 {
        command_period_s
    } else {
        period_s
    }
}

/// The start positions of `joints` joints from the values of a list (`None`: the parameter is empty, all
/// 0); the error says which value is wrong or how many there are.
pub fn initial_positions(values: Option<&[String]>, joints: usize) -> Result<Vec<f64>, String> {
    let positions: Vec<f64> = match values {
        None => vec![0.0; joints],
        Some(values) => (values.iter())
            .map(|v| {
                v.parse::<f64>()
                    .map_err(|_| format!("parameter `initial_positions`: `{v}` is not a number"))
            })
            .collect::<Result<_, _>>()?,
    };
    if positions.len() != joints {
        return Err(format!(
            "parameter `initial_positions` has {} values for {joints} joints",
            positions.len()
        ));
    }
    Ok(positions)
}

/// Seconds from a stamp (`stamp_secs`; 0 means "now") to `now_secs`; 0 for a stamp in the future.
pub fn seconds_since(stamp_secs: f64, now_secs: f64) -> f64 {
    if stamp_secs == 0.0 {
        return 0.0;
    }
    (now_secs - stamp_secs).max(0.0)
}

/// A trajectory being followed: from `from` (the command when it came) to each point at its time.
#[derive(Debug, Clone, PartialEq)]
pub struct Following {
    from: Vec<f64>,
    points: Vec<(f64, Vec<f64>)>,
    elapsed: f64,
}

impl Following {
    /// The positions at the elapsed time (linear between points), and whether the last point is reached.
    fn sample(&self) -> (Vec<f64>, bool) {
        let t = self.elapsed;
        let next = self.points.iter().position(|(at, _)| *at >= t - 1e-12);
        let Some(i) = next else {
            return (
                self.points.last().map(|(_, p)| p.clone()).unwrap_or_default(),
                true,
            );
        };
        let (t0, p0) = if i == 0 {
            (0.0, &self.from)
        } else {
            (self.points[i - 1].0, &self.points[i - 1].1)
        };
        let (t1, p1) = (self.points[i].0, &self.points[i].1);
        let w = if t1 > t0 {
            ((t - t0) / (t1 - t0)).clamp(0.0, 1.0)
        } else {
            1.0
        };
        let at: Vec<f64> = p0.iter().zip(p1).map(|(a, b)| a + w * (b - a)).collect();
        (at, i + 1 == self.points.len() && w >= 1.0)
    }
}

/// Why a trajectory was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrajectoryIgnored {
    /// No points, or a point without a position for every joint.
    Incomplete,
    /// Every point lies before the time already elapsed since the stamp.
    InThePast,
}

/// The joints: their positions, the commands they move to, the limit monitor and what is being followed.
#[derive(Debug)]
pub struct MockJoints {
    /// Joint names, in command order.
    pub names: Vec<String>,
    /// Where the joints are.
    pub positions: Vec<f64>,
    /// Where they were last commanded to.
    targets: Vec<f64>,
    monitor: Monitor,
    alarms: u64,
    intervals: Intervals,
    following: Option<Following>,
    /// Move to each command at once (no lag).
    lagless: bool,
}

impl MockJoints {
    /// Joints at `positions`, monitored against `limits` at `command_period_s`; `lagless` when they move to
    /// each command at once.
    pub fn new(
        names: Vec<String>,
        positions: Vec<f64>,
        limits: Vec<AxisLimits>,
        command_period_s: f64,
        lagless: bool,
    ) -> Self {
        let mut monitor = Monitor::new(command_period_s, limits);
        monitor.push(&positions);
        MockJoints {
            names,
            targets: positions.clone(),
            positions,
            monitor,
            alarms: 0,
            intervals: Intervals::default(),
            following: None,
            lagless,
        }
    }

    /// A forward command: it ends any trajectory being followed.
    pub fn forward(&mut self, positions: &[f64], now: Instant) -> Result<Option<String>, String> {
        self.following = None;
        self.command(positions, now)
    }

    /// Move to `positions` (at once when lagless, else [`Self::lag`] follows them). `Ok(Some(text))`: the
    /// step needs more than a limit (the overspeed alarm's text); `Err`: a command of the wrong length or
    /// not finite, ignored.
    pub fn command(&mut self, positions: &[f64], now: Instant) -> Result<Option<String>, String> {
        if positions.len() != self.names.len() || positions.iter().any(|p| !p.is_finite()) {
            return Err(format!(
                "a command of {} values for {} joints (or not finite): ignored",
                positions.len(),
                self.names.len()
            ));
        }
        self.intervals.mark(now, Some(BURST_GAP));
        let alarm = self.monitor.push(positions).map(|v| {
            self.alarms += 1;
            format!(
                "overspeed alarm {}: joint `{}` commanded {} {:.4}, over its limit {:.4}",
                self.alarms, self.names[v.axis], v.quantity, v.value, v.limit
            )
        });
        self.targets = positions.to_vec();
        if self.lagless {
            self.positions = positions.to_vec();
        }
        Ok(alarm)
    }

    /// Takes a trajectory: `points` are (seconds from its start, positions in `joint_names` order);
    /// `elapsed` is how long ago it started. It replaces any trajectory being followed, from the command in
    /// force.
    pub fn follow(
        &mut self,
        joint_names: &[String],
        points: &[(f64, &[f64])],
        elapsed: f64,
    ) -> Result<(), TrajectoryIgnored> {
        let points: Option<Vec<(f64, Vec<f64>)>> = (points.iter())
            .map(|(at, positions)| {
                let ordered: Option<Vec<f64>> = (self.names.iter())
                    .map(|name| {
                        (joint_names.iter().position(|m| m == name)).and_then(|i| positions.get(i).copied())
                    })
                    .collect();
                ordered.map(|p| (*at, p))
            })
            .collect();
        match points.filter(|p| !p.is_empty()) {
            None => Err(TrajectoryIgnored::Incomplete),
            Some(points) if points.last().is_some_and(|(at, _)| *at < elapsed) => {
                Err(TrajectoryIgnored::InThePast)
            }
            Some(points) => {
                self.following = Some(Following {
                    from: self.targets.clone(),
                    points,
                    elapsed,
                });
                Ok(())
            }
        }
    }

    /// One command period of the trajectory being followed: the positions to command (`None`: nothing is
    /// followed). The trajectory ends at its last point.
    pub fn advance(&mut self, period_s: f64) -> Option<Vec<f64>> {
        let f = self.following.as_mut()?;
        f.elapsed += period_s;
        let (at, over) = f.sample();
        if over {
            self.following = None;
        }
        Some(at)
    }

    /// First order lag over `dt_s` with time constant `tau_s`: closes 1 - exp(-dt / tau) of the gap to the
    /// command (nothing to do when lagless).
    pub fn lag(&mut self, dt_s: f64, tau_s: f64) {
        if self.lagless {
            return;
        }
        let gain = 1.0 - (-dt_s / tau_s).exp();
        for (x, target) in self.positions.iter_mut().zip(&self.targets) {
            *x += gain * (target - *x);
        }
    }

    /// The arrival timing of a burst of commands that ended (no command for [`BURST_GAP`]), once.
    pub fn ended_burst(&mut self, command_period_s: f64) -> Option<Summary> {
        let ended = self.intervals.last().is_some_and(|t| t.elapsed() > BURST_GAP);
        if !ended || self.intervals.secs.is_empty() {
            return None;
        }
        let intervals = std::mem::take(&mut self.intervals.secs);
        Summary::of(&intervals, command_period_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(n: usize) -> Vec<AxisLimits> {
        vec![
            AxisLimits {
                max_velocity: 1.0,
                max_acceleration: 1000.0,
                max_jerk: None,
            };
            n
        ]
    }

    fn joints(lagless: bool) -> MockJoints {
        MockJoints::new(
            vec!["a".into(), "b".into()],
            vec![0.0, 0.0],
            limits(2),
            0.01,
            lagless,
        )
    }

    #[test]
    fn parameters_give_the_period_and_start_positions() {
        assert_eq!(command_period(0.0, 0.002), 0.002);
        assert_eq!(command_period(0.004, 0.002), 0.004);
        assert_eq!(initial_positions(None, 2).unwrap(), [0.0, 0.0]);
        assert_eq!(
            initial_positions(Some(&["1".into(), "2.5".into()]), 2).unwrap(),
            [1.0, 2.5]
        );
        assert!(initial_positions(Some(&["x".into()]), 1)
            .unwrap_err()
            .contains("`x` is not a number"));
        assert_eq!(
            initial_positions(Some(&["1".into()]), 2).unwrap_err(),
            "parameter `initial_positions` has 1 values for 2 joints"
        );
        assert_eq!(seconds_since(0.0, 100.0), 0.0);
        assert_eq!(seconds_since(99.5, 100.0), 0.5);
        assert_eq!(seconds_since(101.0, 100.0), 0.0);
    }

    #[test]
    fn commands_move_the_joints_and_overspeed_raises_the_alarm() {
        let mut j = joints(true);
        let now = Instant::now();
        assert_eq!(j.command(&[0.001, 0.0], now), Ok(None));
        assert_eq!(j.positions, [0.001, 0.0]);
        let alarm = j.command(&[1.0, 0.0], now).unwrap().unwrap();
        assert!(
            alarm.starts_with("overspeed alarm 1: joint `a` commanded velocity"),
            "{alarm}"
        );
        assert!(j
            .command(&[1.0], now)
            .unwrap_err()
            .contains("1 values for 2 joints"));
        assert!(j.command(&[f64::NAN, 0.0], now).is_err());
        let mut lagging = joints(false);
        lagging.command(&[0.001, 0.001], now).unwrap();
        assert_eq!(lagging.positions, [0.0, 0.0]);
        lagging.lag(0.01, 0.01);
        assert!(lagging.positions[0] > 0.0 && lagging.positions[0] < 0.001);
    }

    #[test]
    fn a_trajectory_is_followed_by_name_and_ends_at_its_last_point() {
        let mut j = joints(true);
        let names = vec!["b".to_owned(), "a".to_owned()];
        let p1 = [0.02, 0.01];
        assert_eq!(j.follow(&names, &[(0.02, &p1)], 0.0), Ok(()));
        assert_eq!(j.advance(0.01), Some(vec![0.005, 0.01]));
        assert_eq!(j.advance(0.01), Some(vec![0.01, 0.02]));
        assert_eq!(j.advance(0.01), None);
        assert_eq!(
            j.follow(&names, &[(0.02, &p1)], 0.5),
            Err(TrajectoryIgnored::InThePast)
        );
        assert_eq!(j.follow(&names, &[], 0.0), Err(TrajectoryIgnored::Incomplete));
        let short = [0.1];
        assert_eq!(
            j.follow(&names, &[(0.02, &short)], 0.0),
            Err(TrajectoryIgnored::Incomplete)
        );
    }
}
