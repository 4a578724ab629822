//! The state the action server, the request planner and the output thread share: the goal being played,
//! the latest joint positions, the node's configuration, and a change planned ahead waiting for its tick.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use lockstep_interpolation::session::{Prepared, Session, Stale};
use lockstep_interpolation::timing::Intervals;
use lockstep_interpolation::{JointLimits, Plan};
use r2r::lockstep_interfaces::action::MovePlay;
use tokio::sync::oneshot;

use crate::params::PlayerParams;

/// The goal being played.
pub(crate) struct Active {
    pub(crate) session: Session,
    pub(crate) goal: r2r::ActionServerGoal<MovePlay::Action>,
    pub(crate) joints: Vec<String>,
    pub(crate) ticks: u64,
    /// Wall time between two ticks of this goal, for the timing line at its end.
    pub(crate) intervals: Intervals,
    /// Set when a pause, resume, speed change or cancel changed the motion ahead (the output thread clears
    /// it once it has sent what follows from the change).
    pub(crate) replanned: bool,
    /// A pause, resume, speed change or cancel planned ahead, waiting for its tick.
    pub(crate) pending: Option<Pending>,
}

/// What the node is doing: the goal being played, if any, and the latest measured joint positions.
#[derive(Default)]
pub(crate) struct Engine {
    pub(crate) active: Option<Active>,
    /// Latest /joint_states position per joint name.
    pub(crate) measured: BTreeMap<String, f64>,
}

/// The engine, locked by the action server, the request handlers and the output thread.
pub(crate) type Shared = Arc<Mutex<Engine>>;

/// Everything a goal needs besides the engine.
pub(crate) struct Config {
    pub(crate) params: PlayerParams,
    pub(crate) limits: JointLimits,
    pub(crate) logger: String,
}

/// A plan waiting for its tick, and where its outcome goes.
pub(crate) struct Pending {
    pub(crate) prepared: Prepared,
    pub(crate) reply: oneshot::Sender<Result<Plan, Stale>>,
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
    if outcome.is_ok() {
        active.replanned = true;
    }
    let _ = pending.reply.send(outcome);
}
