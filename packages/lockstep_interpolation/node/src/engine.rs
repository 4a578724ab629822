//! The state the action servers, the request planner and the output thread share: the goal being played,
//! the latest joint states, the node's configuration, and a change planned ahead waiting for its tick.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use lockstep_interpolation::session::{Prepared, Session, Stale};
use lockstep_interpolation::timing::Intervals;
use lockstep_interpolation::{JointLimits, Plan};
use tokio::sync::{mpsc, oneshot};

use crate::goal::Goal;
use crate::params::PlayerParams;

/// The goal being played.
pub(crate) struct Active {
    pub(crate) session: Session,
    pub(crate) goal: Goal,
    pub(crate) joints: Vec<String>,
    /// The command of the last tick (the next measurement answers it).
    pub(crate) last_command: Vec<f64>,
    pub(crate) ticks: u64,
    /// Wall time between two ticks of this goal, for the timing line at its end.
    pub(crate) intervals: Intervals,
    /// Set when a pause, resume, speed change or cancel changed the motion ahead (the output thread clears
    /// it once it has sent what follows from the change).
    pub(crate) replanned: bool,
    /// A pause, resume, speed change or cancel planned ahead, waiting for its tick.
    pub(crate) pending: Option<Pending>,
}

/// What the node is doing: the goal being played, if any, and the latest joint states.
pub(crate) struct Engine {
    pub(crate) active: Option<Active>,
    /// Latest /joint_states position per joint name.
    pub(crate) measured: BTreeMap<String, f64>,
    /// Latest /joint_states velocity per joint name (joint states without velocities leave it empty).
    pub(crate) measured_velocity: BTreeMap<String, f64>,
    /// The last position commanded per joint: a trajectory starts from there when nothing moves.
    pub(crate) commanded: BTreeMap<String, f64>,
    /// The speed scaling factor last asked for on `speed_scaling_input` (1 until one comes).
    pub(crate) scaling: f64,
}

impl Default for Engine {
    fn default() -> Self {
        Self {
            active: None,
            measured: BTreeMap::new(),
            measured_velocity: BTreeMap::new(),
            commanded: BTreeMap::new(),
            scaling: 1.0,
        }
    }
}

impl Engine {
    /// Where `joints` are: the last command, else the measured positions; `None` while a joint has neither.
    pub(crate) fn at_rest(&self, joints: &[String]) -> Option<Vec<f64>> {
        joints
            .iter()
            .map(|j| self.commanded.get(j).or_else(|| self.measured.get(j)).copied())
            .collect()
    }
}

/// The engine, locked by the action server, the request handlers and the output thread.
pub(crate) type Shared = Arc<Mutex<Engine>>;

/// Everything a goal needs besides the engine.
pub(crate) struct Config {
    pub(crate) params: PlayerParams,
    pub(crate) limits: JointLimits,
    pub(crate) logger: String,
    /// Asks for a controlled stop of the motion (after a goal was aborted on a path tolerance).
    pub(crate) stops: mpsc::UnboundedSender<()>,
}

/// Wait (looking every 10 ms) until `found` finds something in the engine, at most `timeout_secs`.
pub(crate) async fn wait_for<T>(
    shared: &Shared,
    timeout_secs: f64,
    found: impl Fn(&Engine) -> Option<T>,
) -> Option<T> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs_f64(timeout_secs);
    loop {
        if let Some(t) = shared.lock().ok().and_then(|e| found(&e)) {
            return Some(t);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// A plan waiting for its tick, and where its outcome goes.
pub(crate) struct Pending {
    pub(crate) prepared: Prepared,
    /// A goal that takes over with the plan (a trajectory replacing the motion); given back when stale.
    pub(crate) takeover: Option<Goal>,
    pub(crate) reply: oneshot::Sender<(Result<Plan, Stale>, Option<Goal>)>,
}

/// At a tick boundary (before the tick): the plan waiting for this tick takes over; one whose tick has
/// passed goes back to be made again.
pub(crate) fn install_pending(active: &mut Active) {
    let Some(pending) = active.pending.take() else {
        return;
    };
    let now = active.session.ticks();
    if now < pending.prepared.at_tick {
        active.pending = Some(pending);
        return;
    }
    let outcome = active.session.install(pending.prepared);
    let mut takeover = pending.takeover;
    if outcome.is_ok() {
        active.replanned = true;
        if let Some(goal) = takeover.take() {
            let old = std::mem::replace(&mut active.goal, goal);
            old.preempted();
        }
    }
    let _ = pending.reply.send((outcome, takeover));
}
