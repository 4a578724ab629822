//! The simulation loop: every wall tick, the steps the [`Pacer`] asks for, then what is due to publish.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockstep_ros::Guarded;
use lockstep_sim::{Every, Pacer, WarningThrottle};

use crate::params::{SimParams, Statics};
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
    let mut markers = Every::new(st.marker_period_secs);
    let mut warnings = WarningThrottle::new(WARNING_PERIOD_SECS, WARNINGS_REMEMBERED);
    // The command last published on cmd_vel_out: it is published again when it changes.
    let mut last_command: Option<(f64, f64)> = None;
    loop {
        ticker.tick().await;
        let now = epoch.elapsed().as_secs_f64();
        if let Ok(p) = params.lock() {
            // A bad value is refused here too (it is counted and written back by `inputs::time_scale_changes`).
            let _ = pacer.set_time_scale(p.time_scale);
        }
        let tick = pacer.tick(now);
        if tick.started_lagging {
            r2r::log_warn!(
                &logger,
                "cannot keep up with time_scale {}: simulated time runs slower than requested",
                pacer.time_scale()
            );
        }
        let Ok(mut s) = shared.lock() else {
            r2r::log_error!(&logger, "simulator mutex poisoned; stopping the loop");
            return;
        };
        for _ in 0..tick.steps {
            drive(&mut s, &logger);
            let report = s.sim.step(pacer.step_secs());
            for w in report.warnings {
                if warnings.should_log(&w, now) {
                    r2r::log_warn!(&logger, "{w}");
                }
            }
            if let Some((from, to)) = report.transition {
                r2r::log_info!(&logger, "t={:.2} s: {from} -> {to}", s.sim.time_secs());
                s.state_dirty = true;
            }
            if report.slam_sample {
                pubs.slam(&s.sim, &st);
            }
            if s.state_dirty {
                s.state_dirty = false;
                pubs.state(&s.sim);
            }
            let (_, v, w) = s.sim.issued_command();
            let motion_due = pacer.count_step();
            if motion_due || last_command != Some((v, w)) {
                last_command = Some((v, w));
                pubs.command(&s.sim, &st);
            }
            if motion_due {
                pubs.motion(&s.sim, &st);
            }
        }
        if tick.republish {
            // Paused (time_scale 0) or very slow: repeat the current state so that late joiners see it.
            pubs.motion(&s.sim, &st);
        }
        if s.state_dirty {
            s.state_dirty = false;
            pubs.state(&s.sim);
        }
        if s.grid_dirty {
            s.grid_dirty = false;
            pubs.grid(&s.sim, &st);
        }
        if markers.due(now) {
            pubs.markers(&s.sim, &st);
        }
        s.flush_dropped(&logger);
    }
}

/// Feeds the drive script's command for the coming step (commanded mode); a script that has ended stops the
/// vehicle and is dropped.
fn drive(s: &mut Shared, logger: &str) {
    let Some(d) = &s.drive else {
        return;
    };
    let now = s.sim.time_secs();
    match d.command(now) {
        Some((v, w)) => {
            if let Err(e) = s.sim.set_command(v, w) {
                r2r::log_error!(logger, "drive script {}: {e}; the script stops", d.path);
                s.drive = None;
            }
        }
        None => {
            r2r::log_info!(
                logger,
                "t={now:.2} s: drive script {} ended; the vehicle stops",
                d.path
            );
            let _ = s.sim.set_command(0.0, 0.0);
            s.drive = None;
        }
    }
}
