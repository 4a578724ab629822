//! One MovePlay goal from start to end: an alignment motion to the section's first point when the robot is
//! elsewhere, waiting until the measured positions are there, then the section itself.
//! Pause, resume, speed changes and cancel act on whichever of the two is playing. The node calls
//! [`Session::tick`] once per output period and sends what it returns.

use std::sync::Arc;

use crate::file::InterpolationFile;
use crate::limits::AxisLimits;
use crate::plan::{self, Plan, Refusal};
use crate::speed_limit;
use crate::spline::Interpolation;
use crate::stream::{Phase, Stream};
use crate::trajectory::Checked;

/// What went wrong in a session.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SessionError {
    #[error("points {start}..{end} are not a section of a file with {points} points")]
    Section { start: i64, end: i64, points: usize },
    #[error("the section ends at point {end} while joint `{joint}` moves at {velocity:.4} there: end it where the file is at rest (stopping mid-path at a section end is not supported yet)")]
    EndsMoving {
        end: usize,
        joint: String,
        velocity: f64,
    },
    #[error("no alignment trajectory to the first point: {0}")]
    Alignment(String),
    #[error("the joints did not reach the first point within {timeout_secs} s (largest error {error:.5})")]
    NotAligned { timeout_secs: f64, error: f64 },
    #[error("cannot start: {0}")]
    Start(Refusal),
}

/// How a session is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// Output period T_c (s).
    pub period_secs: f64,
    /// Speed factor to play at.
    pub factor: f64,
    /// Insert an alignment motion when the robot is more than `tolerance` from the first point.
    pub align: bool,
    /// Position tolerance (rad or m) for "at the first point".
    pub tolerance: f64,
    /// Longest wait for the measured positions to reach the first point after the alignment (s).
    pub settle_timeout_secs: f64,
    /// Between file points (and the alignment motion's): linear interpolation, or the cubic
    /// spline jerk limits need (see [`crate::spline`]).
    pub interpolation: Interpolation,
}

/// Where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Aligning,
    /// Alignment sent; waiting for the joints to get there.
    Settling,
    Playing,
}

/// A MovePlay goal in progress.
#[derive(Debug, Clone)]
pub struct Session {
    alignment: Option<Stream>,
    main: Stream,
    s_max: f64,
    options: Options,
    state: State,
    settle_ticks: u64,
    first: Vec<f64>,
    points_played: u64,
    max_tracking_error: f64,
    cancelled: bool,
    /// Ticks taken since the start.
    ticks: u64,
}

/// A change of the motion ahead, as the node's services and the action's cancel ask for it.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Stop along the path, within the given seconds (or the shortest feasible).
    Pause { stop_secs: Option<f64> },
    /// Move again, ramping within the given seconds to the given factor (or the one before the pause).
    Resume {
        start_secs: Option<f64>,
        factor: Option<f64>,
    },
    /// Ramp the speed factor to this.
    SetSpeed { factor: f64 },
    /// Stop along the path, then end.
    Cancel,
    /// Replace the rest of the motion with this trajectory, from where the motion is (see
    /// [`Session::follow`]); `factor`: the speed to start at if nothing moves.
    Replace { trajectory: Arc<Checked>, factor: f64 },
}

/// A request planned on a copy of the session a few ticks ahead, ready to take effect at that tick: the
/// motion stays the current plan's until then, so planning never holds up an output tick.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The tick (in [`Session::ticks`]) at which the plan starts.
    pub at_tick: u64,
    /// The plan, its delay counted from when it was asked for (the ticks ahead included).
    pub plan: Plan,
    /// The copy with the plan applied, and its state before the plan (to tell whether the live session is
    /// where the copy was when the plan was made).
    planned: Session,
    state_before: State,
}

/// Why a prepared plan could not be installed: the live session is no longer where the copy was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Stale {
    #[error("the motion passed tick {at_tick} (now at {now}) before the plan was ready")]
    Late { at_tick: u64, now: u64 },
    #[error("the session changed state while the plan was made")]
    StateChanged,
}

impl Session {
    /// Start a session of `file` from point `start` to `end` (-1: first / last). `current`: the measured
    /// joint positions in the file's joint order, if known.
    pub fn new(
        file: Arc<InterpolationFile>,
        limits: Vec<AxisLimits>,
        start: i64,
        end: i64,
        current: Option<&[f64]>,
        options: Options,
    ) -> Result<Self, SessionError> {
        let points = file.points.len();
        let first_index = if start < 0 { 0 } else { start };
        let last_index = if end < 0 { points as i64 - 1 } else { end };
        if first_index > last_index || last_index >= points as i64 {
            return Err(SessionError::Section { start, end, points });
        }
        let (first_index, last_index) = (first_index as usize, last_index as usize);
        if last_index > 0 {
            let (a, b) = (&file.points[last_index - 1], &file.points[last_index]);
            // Slower than one tick of full deceleration: stopping there stays within the limit.
            let moving = a
                .iter()
                .zip(b)
                .zip(&limits)
                .enumerate()
                .find_map(|(axis, ((x, y), l))| {
                    let velocity = (y - x).abs() / file.period_secs;
                    (velocity > l.max_acceleration * options.period_secs).then_some((axis, velocity))
                });
            if let Some((axis, velocity)) = moving {
                return Err(SessionError::EndsMoving {
                    end: last_index,
                    joint: file.joints[axis].clone(),
                    velocity,
                });
            }
        }
        let first = file.points[first_index].clone();
        let main = speed_limit::section(
            file.clone(),
            limits.clone(),
            options.period_secs,
            first_index,
            last_index,
            options.interpolation,
        );
        let s_max = speed_limit::s_max(&main);
        // Refused now rather than once an alignment is over.
        plan::valid_factor(options.factor, s_max).map_err(SessionError::Start)?;
        let away = current.filter(|c| max_difference(c, &first) > options.tolerance);
        let mut session = Self {
            alignment: None,
            main,
            s_max,
            state: State::Playing,
            settle_ticks: 0,
            first,
            points_played: 0,
            max_tracking_error: 0.0,
            cancelled: false,
            ticks: 0,
            options,
        };
        match away {
            Some(current) if session.options.align => {
                let waypoints = vec![current.to_vec(), session.first.clone()];
                let motion =
                    crate::generate::generate(&file.joints, &waypoints, &limits, session.options.period_secs)
                        .map_err(|e| SessionError::Alignment(e.to_string()))?;
                let end = motion.points.len() - 1;
                let mut stream = Stream::new(Arc::new(motion), limits, session.options.period_secs, 0, end)
                    .interpolated(session.options.interpolation);
                let s_max = plan::s_max(&stream).max(1.0);
                plan::start(&mut stream, 1.0, s_max).map_err(|e| SessionError::Alignment(e.to_string()))?;
                session.alignment = Some(stream);
                session.state = State::Aligning;
            }
            _ => session.start_main()?,
        }
        Ok(session)
    }

    fn start_main(&mut self) -> Result<(), SessionError> {
        plan::start(&mut self.main, self.options.factor, self.s_max).map_err(SessionError::Start)?;
        self.state = State::Playing;
        Ok(())
    }

    /// One output tick; `measured`: the latest joint positions in the file's order, if any. The positions to
    /// send, or the error that ends the session.
    pub fn tick(&mut self, measured: Option<&[f64]>) -> Result<&[f64], SessionError> {
        self.ticks += 1;
        match self.state {
            State::Aligning => {
                let Some(alignment) = self.alignment.as_mut() else {
                    return Err(SessionError::Alignment("lost".into()));
                };
                alignment.step();
                if alignment.phase() == Phase::Done {
                    self.state = State::Settling;
                }
                Ok(alignment.position())
            }
            State::Settling => {
                self.settle_ticks += 1;
                let error = measured.map_or(f64::INFINITY, |m| max_difference(m, &self.first));
                if error <= self.options.tolerance {
                    self.start_main()?;
                } else if self.settle_ticks as f64 * self.options.period_secs
                    > self.options.settle_timeout_secs
                {
                    return Err(SessionError::NotAligned {
                        timeout_secs: self.options.settle_timeout_secs,
                        error,
                    });
                }
                Ok(&self.first)
            }
            State::Playing => {
                if let Some(m) = measured {
                    // The measurement answers the previous command.
                    let error = max_difference(m, self.main.position());
                    self.max_tracking_error = self.max_tracking_error.max(error);
                }
                if self.main.phase() != Phase::Done {
                    self.points_played += 1;
                }
                Ok(self.main.step())
            }
        }
    }

    /// The stream pause, resume and speed changes act on.
    fn active_stream(&self) -> &Stream {
        match (self.state, self.alignment.as_ref()) {
            (State::Aligning, Some(a)) => a,
            _ => &self.main,
        }
    }

    /// The stream pause, resume and speed changes act on, to change it.
    fn active(&mut self) -> &mut Stream {
        match (self.state, self.alignment.as_mut()) {
            (State::Aligning, Some(a)) => a,
            _ => &mut self.main,
        }
    }

    pub fn pause(&mut self, stop_secs: Option<f64>) -> Result<Plan, Refusal> {
        plan::pause(self.active(), stop_secs)
    }

    pub fn resume(&mut self, start_secs: Option<f64>, factor: Option<f64>) -> Result<Plan, Refusal> {
        if self.state == State::Aligning {
            // The alignment resumes at its own speed; a factor applies to the section.
            if let Some(f) = factor {
                plan::valid_factor(f, self.s_max)?;
                self.options.factor = f;
            }
            return plan::resume(self.active(), start_secs, Some(1.0), f64::INFINITY);
        }
        let s_max = self.s_max;
        plan::resume(&mut self.main, start_secs, factor, s_max)
    }

    pub fn set_speed(&mut self, factor: f64) -> Result<Plan, Refusal> {
        if self.state != State::Playing {
            plan::valid_factor(factor, self.s_max)?;
            self.options.factor = factor;
            return Ok(Plan::NOTHING);
        }
        let s_max = self.s_max;
        plan::set_speed(&mut self.main, factor, s_max)
    }

    pub fn cancel(&mut self) -> Result<Plan, Refusal> {
        if self.state == State::Settling {
            // Nothing of the section was sent yet: cancelling it (at rest) ends it at the next tick.
            self.state = State::Playing;
        }
        let plan = plan::cancel(self.active())?;
        self.cancelled = true;
        Ok(plan)
    }

    /// Carry out `request` now.
    pub fn apply(&mut self, request: Request) -> Result<Plan, Refusal> {
        match request {
            Request::Pause { stop_secs } => self.pause(stop_secs),
            Request::Resume { start_secs, factor } => self.resume(start_secs, factor),
            Request::SetSpeed { factor } => self.set_speed(factor),
            Request::Cancel => self.cancel(),
            Request::Replace { trajectory, factor } => self.replace(&trajectory, factor),
        }
    }

    /// A session of a trajectory's motion: no alignment (it starts from where the joints are commanded).
    pub(crate) fn of_trajectory(main: Stream, s_max: f64, options: Options) -> Self {
        Self {
            alignment: None,
            first: main.position().to_vec(),
            main,
            s_max,
            state: State::Playing,
            settle_ticks: 0,
            points_played: 0,
            max_tracking_error: 0.0,
            cancelled: false,
            ticks: 0,
            options,
        }
    }

    /// Replace the rest of the motion with `trajectory`, taking over from where it is; the tick count goes on.
    fn replace(&mut self, trajectory: &Checked, factor: f64) -> Result<Plan, Refusal> {
        let stream = self.active_stream();
        let options = Options {
            factor,
            ..self.options.clone()
        };
        let position = stream.position().to_vec();
        let mut next = Session::follow(
            trajectory,
            stream.limits().to_vec(),
            options,
            Some(stream),
            &position,
        )
        .map_err(|e| Refusal::Invalid(e.message))?;
        next.ticks = self.ticks;
        *self = next;
        Ok(Plan::NOTHING)
    }

    /// Plan `request` to start `ahead` ticks from now, on a copy: `self` is untouched, so the caller can plan
    /// without holding up the ticks and [`Session::install`] the result at that tick. Times the request
    /// gives (a stop or start time) still count from now; so does the plan's delay.
    pub fn prepare(&self, request: Request, ahead: u64) -> Result<Prepared, Refusal> {
        let mut copy = self.clone();
        for _ in 0..ahead {
            // No measurement: the copy cannot settle; `install` refuses a plan made across that.
            copy.tick(None)
                .map_err(|e| Refusal::Invalid(format!("the motion ends before the change: {e}")))?;
        }
        let state_before = copy.state;
        let ahead_secs = ahead as f64 * self.options.period_secs;
        let given = time_of(&request);
        let shifted = |t: Option<f64>| -> Result<Option<f64>, Refusal> {
            match t {
                Some(t) if t.is_finite() && t >= ahead_secs => Ok(Some(t - ahead_secs)),
                // Sooner than the plan can take effect: below the lower bound, which counts the ticks ahead.
                Some(t) if t.is_finite() && t >= 0.0 => {
                    let t_min_secs = match copy.clone().apply(with_time(request.clone(), Some(0.0))) {
                        Err(Refusal::BelowMinimum { t_min_secs, .. }) => t_min_secs,
                        Err(Refusal::TooShort { .. }) | Ok(_) => 0.0,
                        Err(other) => return Err(other),
                    };
                    Err(Refusal::BelowMinimum {
                        requested_secs: t,
                        t_min_secs: t_min_secs + ahead_secs,
                        bound: crate::speed_limit::Bound::of(copy.active_stream().limits()),
                    })
                }
                other => Ok(other),
            }
        };
        let request = with_time(request.clone(), shifted(given)?);
        let mut plan = copy
            .apply(request)
            .map_err(|refusal| counted_from_now(refusal, ahead_secs))?;
        if plan != Plan::NOTHING {
            plan.delay_secs += ahead_secs;
            plan.t_min_secs += ahead_secs;
            plan.t_feasible_secs += ahead_secs;
        }
        Ok(Prepared {
            at_tick: self.ticks + ahead,
            plan,
            planned: copy,
            state_before,
        })
    }

    /// Take over the motion `prepared` planned, if this session is at the tick and in the state the plan was
    /// made for (stepping is deterministic, so the motion up to here is the copy's). The counters of what was
    /// played stay this session's.
    pub fn install(&mut self, prepared: Prepared) -> Result<Plan, Stale> {
        if self.ticks != prepared.at_tick {
            return Err(Stale::Late {
                at_tick: prepared.at_tick,
                now: self.ticks,
            });
        }
        if self.state != prepared.state_before {
            return Err(Stale::StateChanged);
        }
        let planned = prepared.planned;
        self.alignment = planned.alignment;
        self.main = planned.main;
        self.s_max = planned.s_max;
        self.first = planned.first;
        self.options.factor = planned.options.factor;
        self.state = planned.state;
        self.cancelled = planned.cancelled;
        Ok(prepared.plan)
    }

    /// Ticks taken since the start.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// Whether a cancel was accepted.
    pub fn cancelled(&self) -> bool {
        self.cancelled
    }

    /// Whether the section was played to its end, or a cancel's stop completed.
    pub fn finished(&self) -> bool {
        match (self.state, self.alignment.as_ref()) {
            (State::Aligning, Some(a)) => self.cancelled && a.phase() == Phase::Done,
            (State::Settling, _) => false,
            _ => self.main.phase() == Phase::Done,
        }
    }

    /// The MovePlay feedback state name.
    pub fn state_name(&self) -> &'static str {
        match self.state {
            State::Aligning => match self.alignment.as_ref().map(Stream::phase) {
                Some(Phase::Pausing) => "pausing",
                Some(Phase::Paused) => "paused",
                _ => "aligning",
            },
            State::Settling => "aligning",
            State::Playing => self.main.phase().as_str(),
        }
    }

    pub fn state(&self) -> State {
        self.state
    }
    pub fn main(&self) -> &Stream {
        &self.main
    }
    pub fn s_max(&self) -> f64 {
        self.s_max
    }
    pub fn points_played(&self) -> u64 {
        self.points_played
    }
    pub fn max_tracking_error(&self) -> f64 {
        self.max_tracking_error
    }
    /// Alarms of the alignment and the section together.
    pub fn alarms(&self) -> u64 {
        self.main.alarms() + self.alignment.as_ref().map_or(0, Stream::alarms)
    }
}

/// A refusal made `secs` ahead, its times counted from now.
fn counted_from_now(mut refusal: Refusal, secs: f64) -> Refusal {
    match &mut refusal {
        Refusal::BelowMinimum {
            requested_secs,
            t_min_secs,
            ..
        } => {
            *requested_secs += secs;
            *t_min_secs += secs;
        }
        Refusal::TooShort {
            requested_secs,
            t_min_secs,
            t_feasible_secs,
            ..
        } => {
            *requested_secs += secs;
            *t_min_secs += secs;
            *t_feasible_secs += secs;
        }
        _ => {}
    }
    refusal
}

/// The time a request gives (stop or start time), if any.
fn time_of(request: &Request) -> Option<f64> {
    match request {
        Request::Pause { stop_secs } => *stop_secs,
        Request::Resume { start_secs, .. } => *start_secs,
        Request::SetSpeed { .. } | Request::Cancel | Request::Replace { .. } => None,
    }
}

/// `request` with its time replaced (requests without one are returned as they are).
fn with_time(request: Request, time: Option<f64>) -> Request {
    match request {
        Request::Pause { .. } => Request::Pause { stop_secs: time },
        Request::Resume { factor, .. } => Request::Resume {
            start_secs: time,
            factor,
        },
        other => other,
    }
}

fn max_difference(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}
