//! Whether the actuator is busy (occupied through `~/occupy`, or a goal reserved or running; the rules are
//! the core's `sim::busy`), and the `actuator_states` publisher that reports it at 10 Hz and on every change.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use lockstep_interfaces::msg::ActuatorState;
use lockstep_interfaces::srv::Occupy;
use lockstep_tasks::sim::busy::Busy;
use r2r::lockstep_interfaces;
use tokio::sync::Notify;

/// Period of the `actuator_states` messages when nothing changes.
pub const STATE_PERIOD: Duration = Duration::from_millis(100);

/// The busy state ([`Busy`], the rules), shared by the goal handling, the occupy service and the state
/// publisher, with a notification on every change.
#[derive(Clone, Default)]
pub struct Status {
    inner: Arc<Mutex<Busy>>,
    changed: Arc<Notify>,
}

impl Status {
    fn with<R>(&self, f: impl FnOnce(&mut Busy) -> R) -> Option<R> {
        self.inner.lock().ok().map(|mut inner| f(&mut inner))
    }

    /// Take the actuator for a new goal, or say why it is busy. `deadline`: when the goal is expected to end.
    pub fn try_reserve(&self, deadline: Option<Instant>) -> Result<(), String> {
        let now = Instant::now();
        let outcome = self
            .with(|s| s.try_reserve(now, deadline))
            .unwrap_or_else(|| Err("internal lock poisoned".to_owned()));
        if outcome.is_ok() {
            self.changed.notify_one();
        }
        outcome
    }

    /// A new estimate of when the running goal ends (no message of its own: the next periodic one has it).
    pub fn set_goal_deadline(&self, deadline: Option<Instant>) {
        self.with(|s| s.set_goal_deadline(deadline));
    }

    /// The goal ended (or was never started): the actuator is free unless occupied.
    pub fn release(&self) {
        self.with(Busy::release);
        self.changed.notify_one();
    }

    /// Busy for `duration_s` from now (0: not occupied any more), or why not.
    pub fn occupy(&self, duration_s: f64) -> Result<String, String> {
        let now = Instant::now();
        let message = self
            .with(|s| s.occupy(now, duration_s))
            .ok_or_else(|| "internal lock poisoned".to_owned())??;
        self.changed.notify_one();
        Ok(message)
    }

    /// (busy, remaining busy time [s]) now.
    pub fn snapshot(&self) -> (bool, f64) {
        let now = Instant::now();
        self.with(|s| s.snapshot(now)).unwrap_or((false, 0.0))
    }

    /// When the occupation ends, if it is still ahead.
    fn occupied_until(&self) -> Option<Instant> {
        let now = Instant::now();
        self.with(|s| s.occupied_until(now)).flatten()
    }
}

/// Publish the state on `publisher` every [`STATE_PERIOD`], on every change, and when an occupation ends.
pub async fn publish_states(
    status: Status,
    publisher: r2r::Publisher<ActuatorState>,
    clock: Arc<Mutex<r2r::Clock>>,
    server: String,
    logger: String,
) {
    let mut failed_once = false;
    loop {
        let now = Instant::now();
        let mut wake = now + STATE_PERIOD;
        if let Some(until) = status.occupied_until() {
            wake = wake.min(until + Duration::from_millis(1));
        }
        tokio::select! {
            () = tokio::time::sleep_until(wake.into()) => {}
            () = status.changed.notified() => {}
        }
        let (busy, busy_remaining_s) = status.snapshot();
        let stamp = lockstep_ros::time::clock_stamp(&clock);
        let msg = ActuatorState {
            stamp,
            server: server.clone(),
            busy,
            busy_remaining_s,
        };
        if let Err(e) = publisher.publish(&msg) {
            if !failed_once {
                r2r::log_warn!(&logger, "could not publish on actuator_states: {e}");
                failed_once = true;
            }
        }
    }
}

/// Serve `~/occupy`: busy for the request's duration from now.
pub async fn serve_occupy(
    mut requests: impl Stream<Item = r2r::ServiceRequest<Occupy::Service>> + Unpin,
    status: Status,
    logger: String,
) {
    while let Some(request) = requests.next().await {
        let response = match status.occupy(request.message.duration_s) {
            Ok(message) => {
                r2r::log_info!(&logger, "occupy: {message}");
                Occupy::Response {
                    success: true,
                    message,
                }
            }
            Err(message) => {
                r2r::log_warn!(&logger, "occupy refused: {message}");
                Occupy::Response {
                    success: false,
                    message,
                }
            }
        };
        if let Err(e) = request.respond(response) {
            r2r::log_warn!(&logger, "could not answer an occupy request: {e}");
        }
    }
}
