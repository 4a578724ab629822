//! Pause, resume, speed changes and cancel, planned off the output thread.
//!
//! Planning a change runs copies of the stream through candidate ramps: milliseconds in a release build, tens
//! of milliseconds in a debug one. Done under the engine's lock, as it once was, it held up the output tick
//! (a drive faults on a 44 ms gap). Now a request is planned on a copy of the session a few ticks ahead
//! (`Session::prepare`), without the lock; the output thread installs the plan at exactly that tick
//! ([`crate::engine::install_pending`]) and keeps following the current plan until then. A plan ready too late (the
//! motion passed its tick) is made again further ahead. One request is planned at a time, each on top of the
//! last one installed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use lockstep_interpolation::session::{Request, Stale, State};
use lockstep_interpolation::{Plan, PlanningTimes, Refusal};
use tokio::sync::{oneshot, Mutex};

use crate::engine::{Engine, Pending, Shared};
use crate::goal::Goal;

/// Tries before a request is refused because the motion kept moving past its plan.
const ATTEMPTS: u32 = 4;

/// Requests waiting to be planned beyond which a new one is refused at once ("busy"): each takes a plan
/// of a few ticks, so a storm queued without end would be answered minutes later, if at all.
pub(crate) const MAX_WAITING: usize = 8;

/// Serializes requests and learns how long planning takes.
pub(crate) struct Planner {
    recent: Mutex<PlanningTimes>,
    /// Requests planned or waiting to be.
    waiting: AtomicUsize,
}

/// Counts a request among the waiting ones while it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Planner {
    pub(crate) fn new() -> Self {
        Self {
            recent: Mutex::new(PlanningTimes::default()),
            waiting: AtomicUsize::new(0),
        }
    }

    /// Carry out `request` on the goal being played: planned on a copy `ahead` ticks in the future, then
    /// installed by the output thread at that tick. Requests on a session settling at the first point (no
    /// motion to plan) are applied at once.
    pub(crate) async fn handle(
        &self,
        shared: &Shared,
        period_s: f64,
        request: Request,
    ) -> Result<Plan, Refusal> {
        self.handle_with(shared, period_s, request, None).await.0
    }

    /// [`Planner::handle`] for a request from a service (`pause`, `resume`, `set_speed`): refused at once as busy
    /// when [`MAX_WAITING`] requests are already waiting. Cancels, stops after an abort and speed scaling are
    /// never refused that way (they go through [`Planner::handle`]).
    pub(crate) async fn handle_unless_busy(
        &self,
        shared: &Shared,
        period_s: f64,
        request: Request,
    ) -> Result<Plan, Refusal> {
        let waiting = self.waiting.load(Ordering::Relaxed);
        if waiting >= MAX_WAITING {
            return Err(Refusal::Invalid(format!(
                "busy: {waiting} requests are being planned ahead of this one; send it again once they are answered"
            )));
        }
        self.handle(shared, period_s, request).await
    }

    /// [`Planner::handle`], and `takeover` becomes the active goal at the tick the plan starts (the goal it
    /// replaces is told it was preempted); given back if the request was not carried out.
    pub(crate) async fn handle_with(
        &self,
        shared: &Shared,
        period_s: f64,
        request: Request,
        mut takeover: Option<Goal>,
    ) -> (Result<Plan, Refusal>, Option<Goal>) {
        let result = self
            .plan_and_install(shared, period_s, request, &mut takeover)
            .await;
        (result, takeover)
    }

    async fn plan_and_install(
        &self,
        shared: &Shared,
        period_s: f64,
        request: Request,
        takeover: &mut Option<Goal>,
    ) -> Result<Plan, Refusal> {
        let _waiting = Waiting(&self.waiting);
        self.waiting.fetch_add(1, Ordering::Relaxed);
        // Held for the whole request: the next one plans on top of this one's outcome.
        let mut recent = self.recent.lock().await;
        let mut late = 0;
        for _ in 0..ATTEMPTS {
            let session = {
                let mut engine = lock(shared)?;
                let active = engine.active.as_mut().ok_or_else(nothing_playing)?;
                if active.session.state() == State::Settling {
                    let plan = active.session.apply(request)?;
                    active.replanned = true;
                    if let Some(goal) = takeover.take() {
                        std::mem::replace(&mut active.goal, goal).preempted();
                    }
                    return Ok(plan);
                }
                active.session.clone()
            };
            let ahead = recent.ticks_ahead(period_s, late);
            let started = Instant::now();
            let asked = request.clone();
            let prepared = tokio::task::spawn_blocking(move || session.prepare(asked, ahead))
                .await
                .map_err(|e| Refusal::Invalid(format!("planning failed: {e}")))??;
            recent.record(started.elapsed());
            let (reply, outcome) = oneshot::channel();
            {
                let mut engine = lock(shared)?;
                let active = engine.active.as_mut().ok_or_else(nothing_playing)?;
                active.pending = Some(Pending {
                    prepared,
                    takeover: takeover.take(),
                    reply,
                });
            }
            let outcome = outcome.await.map(|(outcome, back)| {
                *takeover = back;
                outcome
            });
            match outcome {
                Ok(Ok(plan)) => return Ok(plan),
                Ok(Err(Stale::Late { .. })) => late += 1,
                Ok(Err(Stale::StateChanged)) => {}
                Err(_) => {
                    return Err(Refusal::Invalid(
                        "the goal ended before the change took effect".into(),
                    ))
                }
            }
        }
        Err(Refusal::Invalid(format!(
            "the motion kept moving past the plan ({ATTEMPTS} tries): the machine is too busy to plan in time"
        )))
    }
}

fn lock(shared: &Shared) -> Result<std::sync::MutexGuard<'_, Engine>, Refusal> {
    shared
        .lock()
        .map_err(|_| Refusal::Invalid("internal lock poisoned".into()))
}

fn nothing_playing() -> Refusal {
    Refusal::Invalid("nothing is playing: send a MovePlay goal first".into())
}

/// Serves the cancel requests of the action goal `uuid`: while it is the goal being played, a cancel is
/// accepted and stops the motion along its path within every limit; a goal that ended or was replaced has
/// nothing left to cancel (the motion is another's), so its cancel is rejected.
pub(crate) async fn serve_cancels(
    planner: Arc<Planner>,
    shared: Shared,
    period_s: f64,
    logger: String,
    uuid: r2r::uuid::Uuid,
    mut cancels: impl futures::Stream<Item = r2r::ActionServerCancelRequest> + Unpin,
) {
    use futures::StreamExt as _;
    while let Some(cancel) = cancels.next().await {
        let playing =
            (shared.lock().ok()).is_some_and(|e| e.active.as_ref().is_some_and(|a| a.goal.is(&uuid)));
        if !playing {
            cancel.reject();
            continue;
        }
        cancel.accept();
        if let Err(refusal) = planner.handle(&shared, period_s, Request::Cancel).await {
            r2r::log_warn!(&logger, "cancel: {refusal}");
        }
    }
}
