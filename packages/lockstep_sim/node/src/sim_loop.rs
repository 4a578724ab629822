//! The simulation loop: every wall tick, the steps the [`Pacer`] asks for, then what is due to publish.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockstep_ros::Guarded;
use lockstep_sim::{DriveStep, Every, Pacer, WarningThrottle};

use crate::config::Statics;
use crate::params::SimParams;
use crate::publish::Publishers;
use crate::shared::{Shared, SharedSim};

/// How often the loop wakes up.
const WALL_TICK: Duration = Duration::from_millis(10);
/// The same rules warning is logged at most this often (wall seconds)...
const WARNING_PERIOD_SECS: f64 = 2.0;
/// ...and at most this many distinct warnings are remembered for that.
const WARNINGS_REMEMBERED: usize = 256;

/// Runs the simulation until the simulator's mutex is poisoned.
pub async fn run(
    shared: SharedSim,
    params: Arc<Mutex<Guarded<SimParams>>>,
    pubs: Publishers,
    mut pacer: Pacer,
    logger: String,
    st: Statics,
) {
    let mut ticker = tokio::time::interval(WALL_TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let epoch = Instant::now();
    let mut looping = Loop {
        markers: Every::new(st.marker_period_secs),
        warnings: WarningThrottle::new(WARNING_PERIOD_SECS, WARNINGS_REMEMBERED),
        last_command: None,
        pubs,
        st,
        logger,
    };
    loop {
        ticker.tick().await;
        let now = epoch.elapsed().as_secs_f64();
        if let Ok(p) = params.lock() {
            // A bad value is refused here too (counted and written back by `inputs::parameter_changes`).
            let _ = pacer.set_time_scale(p.time_scale);
        }
        let tick = pacer.tick(now);
        if tick.started_lagging {
            r2r::log_warn!(
                &looping.logger,
                "cannot keep up with time_scale {}: simulated time runs slower than requested",
                pacer.time_scale()
            );
        }
        let Ok(mut s) = shared.lock() else {
            r2r::log_error!(&looping.logger, "simulator mutex poisoned; stopping the loop");
            return;
        };
        for _ in 0..tick.steps {
            // A step whose rules ran into rules_max_seconds took that long: the node answers its services
            // and topics before the next one (the steps not run now are made up later, or dropped as lag).
            if looping.step(&mut s, &mut pacer, now) {
                break;
            }
        }
        looping.publish_due(&mut s, tick.republish, now);
    }
}

/// What the loop keeps from one wall tick to the next.
struct Loop {
    pubs: Publishers,
    st: Statics,
    logger: String,
    markers: Every,
    warnings: WarningThrottle,
    /// The command last published on cmd_vel_out: it is published again when it changes.
    last_command: Option<(f64, f64)>,
}

impl Loop {
    /// One simulation step, and what it makes due: warnings, transitions, SLAM, state, command and motion.
    /// Whether an evaluation of the rules stopped at its time limit.
    fn step(&mut self, s: &mut Shared, pacer: &mut Pacer, now: f64) -> bool {
        let (pubs, st, logger) = (&self.pubs, &self.st, self.logger.as_str());
        drive(s, logger);
        let report = s.sim.step(pacer.step_secs());
        for w in report.warnings {
            if self.warnings.should_log(&w, now) {
                r2r::log_warn!(logger, "{w}");
            }
        }
        if let Some((from, to)) = report.transition {
            r2r::log_info!(logger, "t={:.2} s: {from} -> {to}", s.sim.time_secs());
            s.state_dirty = true;
        }
        if report.slam_sample {
            pubs.slam(&s.sim, st);
        }
        if s.state_dirty {
            s.state_dirty = false;
            pubs.state(&s.sim);
        }
        let (_, v, w) = s.sim.issued_command();
        let motion_due = pacer.count_step();
        if motion_due || self.last_command != Some((v, w)) {
            self.last_command = Some((v, w));
            pubs.command(&s.sim, st);
        }
        if motion_due {
            pubs.motion(&s.sim, st);
        }
        report.over_time
    }

    /// After the steps of a tick: the repeated motion while paused, a changed state or grid, the markers, and
    /// the count of dropped inputs.
    fn publish_due(&mut self, s: &mut Shared, republish: bool, now: f64) {
        let (pubs, st) = (&self.pubs, &self.st);
        if republish {
            // Paused (time_scale 0) or very slow: repeat the current state so that late joiners see it.
            pubs.motion(&s.sim, st);
        }
        if s.state_dirty {
            s.state_dirty = false;
            pubs.state(&s.sim);
        }
        if s.grid_dirty {
            s.grid_dirty = false;
            pubs.grid(&s.sim, st);
        }
        if self.markers.due(now) {
            pubs.markers(&s.sim, st);
        }
        s.flush_dropped(&self.logger);
    }
}

/// Feeds the drive script's command for the coming step (commanded mode); a script that has ended stops the
/// vehicle and is dropped.
fn drive(s: &mut Shared, logger: &str) {
    let Some(d) = &s.drive else {
        return;
    };
    match d.feed(&mut s.sim) {
        DriveStep::Commanded => {}
        DriveStep::Refused(e) => {
            r2r::log_error!(logger, "drive script {}: {e}; the script stops", d.path);
            s.drive = None;
        }
        DriveStep::Ended => {
            r2r::log_info!(
                logger,
                "t={:.2} s: drive script {} ended; the vehicle stops",
                s.sim.time_secs(),
                d.path
            );
            s.drive = None;
        }
    }
}
