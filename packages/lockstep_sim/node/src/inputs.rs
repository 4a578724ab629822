//! What comes into the node: cmd_vel, the two services and run-time parameter changes. Every input is
//! checked before it touches the simulator; garbage is dropped and counted (see [`crate::shared::Shared::drop_input`]).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::{future, Stream, StreamExt};
use lockstep_ros::{Guard, Guarded};
use lockstep_sim::{check_time_scale, check_twist, parse_facts, DiffDriveParams, RunningDrive};
use r2r::geometry_msgs::msg::Twist;
use r2r::lockstep_interfaces::srv::SetDestination;
use r2r::std_msgs::msg::String as StringMsg;
use r2r::std_srvs::srv::Trigger;
use r2r::ParameterValue;

use crate::params::{rule_paths, SimParams, VehicleParams};
use crate::shared::{Shared, SharedSim};
use crate::watch::Reloader;

/// Applies cmd_vel messages (commanded mode); `None` = not subscribed (autonomous mode).
pub async fn cmd_vel(stream: Option<impl Stream<Item = Twist> + Unpin>, shared: SharedSim, logger: String) {
    let Some(stream) = stream else {
        return future::pending::<()>().await;
    };
    stream
        .for_each(|t: Twist| {
            if let Ok(mut s) = shared.lock() {
                let checked = check_twist(
                    [t.linear.x, t.linear.y, t.linear.z],
                    [t.angular.x, t.angular.y, t.angular.z],
                    &s.sim.limits(),
                )
                .and_then(|(v, w)| s.sim.set_command(v, w));
                if let Err(e) = checked {
                    s.drop_input("cmd_vel", e, &logger);
                }
            }
            future::ready(())
        })
        .await;
}

/// Serves `~/reload` (std_srvs/Trigger): success, or false with the diagnostics.
pub async fn reload_service(
    requests: impl Stream<Item = r2r::ServiceRequest<Trigger::Service>> + Unpin,
    reloader: Arc<Reloader>,
    logger: String,
) {
    requests
        .for_each(|req| {
            let reloader = reloader.clone();
            let logger = logger.clone();
            async move {
                let response = match reloader.reload().await {
                    Ok(message) => {
                        r2r::log_info!(&logger, "~/reload: {message}");
                        Trigger::Response {
                            success: true,
                            message,
                        }
                    }
                    Err(message) => {
                        r2r::log_error!(
                            &logger,
                            "~/reload failed, the previous rules and scene stay:\n{message}"
                        );
                        Trigger::Response {
                            success: false,
                            message,
                        }
                    }
                };
                if let Err(e) = req.respond(response) {
                    r2r::log_warn!(&logger, "~/reload: cannot respond: {e}");
                }
            }
        })
        .await;
}

/// Serves `~/set_destination`: a cell outside the grid or on an obstacle is refused with the reason (and
/// counted as dropped input).
pub async fn set_destination_service(
    requests: impl Stream<Item = r2r::ServiceRequest<SetDestination::Service>> + Unpin,
    shared: SharedSim,
    logger: String,
) {
    requests
        .for_each(|req| {
            let (column, row) = (i64::from(req.message.column), i64::from(req.message.row));
            let result = match shared.lock() {
                Ok(mut s) => match s.sim.set_destination(column, row) {
                    Ok(()) => {
                        s.state_dirty = true;
                        Ok(())
                    }
                    Err(e) => {
                        s.drop_input("set_destination", &e, &logger);
                        Err(e.to_string())
                    }
                },
                Err(_) => Err("internal error: simulator mutex poisoned".to_owned()),
            };
            let response = match result {
                Ok(()) => {
                    let message = format!("destination set to column {column}, row {row}");
                    r2r::log_info!(&logger, "~/set_destination: {message}");
                    SetDestination::Response {
                        success: true,
                        message,
                    }
                }
                Err(message) => {
                    r2r::log_warn!(&logger, "~/set_destination rejected: {message}");
                    SetDestination::Response {
                        success: false,
                        message,
                    }
                }
            };
            if let Err(e) = req.respond(response) {
                r2r::log_warn!(&logger, "~/set_destination: cannot respond: {e}");
            }
            future::ready(())
        })
        .await;
}

/// Watches run-time parameter changes. (r2r has no hook to refuse a set, so the service has already answered
/// `successful`; a refused value is written back -- into the typed parameters and, through `restore`, into
/// what `~/get_parameters` reports -- and counted as dropped input.)
/// - `time_scale`: not finite or outside [0, 1e4] is refused; the loop reads the valid value.
/// - `nominal_vehicle.*` / `true_vehicle.*`: applied to the simulator at once (a calibration pushed through
///   SetParameters, a new load); a value that is not a physical vehicle is refused.
/// - `drive_script` / `drive_repeat`: the script (re)starts now; "" stops it; a file that does not parse is
///   refused with `file:line`.
pub async fn parameter_changes(
    changes: impl Stream<Item = (String, r2r::ParameterValue)> + Unpin,
    params: Arc<Mutex<Guarded<SimParams>>>,
    restore: impl Fn(&str, r2r::ParameterValue),
    initial: f64,
    shared: SharedSim,
    logger: String,
) {
    let mut valid_scale = initial;
    changes
        .for_each(|(name, value)| {
            let Ok(mut p) = params.lock() else {
                return future::ready(());
            };
            let Ok(mut s) = shared.lock() else {
                return future::ready(());
            };
            let mut change = Change {
                p: &mut p,
                s: &mut s,
                restore: &restore,
                logger: &logger,
            };
            if name == "time_scale" {
                if let r2r::ParameterValue::Double(requested) = value {
                    change.time_scale(requested, &mut valid_scale);
                }
            } else if let Some((which, field)) = name.split_once('.') {
                if which == "nominal_vehicle" || which == "true_vehicle" {
                    change.vehicle(&name, which, field);
                }
            } else if name == "drive_script" || name == "drive_repeat" {
                change.drive();
            }
            future::ready(())
        })
        .await;
}

/// One run-time parameter change, applied with the parameters and the simulator locked.
struct Change<'a, R> {
    p: &'a mut Guarded<SimParams>,
    s: &'a mut Shared,
    restore: &'a R,
    logger: &'a str,
}

impl<R: Fn(&str, r2r::ParameterValue)> Change<'_, R> {
    /// `time_scale`: not finite or outside [0, 1e4] is refused; the loop reads the valid value.
    fn time_scale(&mut self, requested: f64, valid_scale: &mut f64) {
        match check_time_scale(requested) {
            Ok(scale) => *valid_scale = scale,
            Err(e) => {
                self.p.time_scale = *valid_scale;
                (self.restore)("time_scale", r2r::ParameterValue::Double(*valid_scale));
                self.s.drop_input("time_scale", e, self.logger);
            }
        }
    }

    /// `nominal_vehicle.*` / `true_vehicle.*` (`which`, `field`): applied to the simulator at once; a value
    /// that is not a physical vehicle is refused and the vehicle in force written back.
    fn vehicle(&mut self, name: &str, which: &str, field: &str) {
        let nominal = which == "nominal_vehicle";
        let typed = if nominal {
            &mut self.p.nominal_vehicle
        } else {
            &mut self.p.true_vehicle
        };
        let wanted = DiffDriveParams::from(&*typed);
        let sim = &mut self.s.sim;
        let set = if nominal {
            sim.set_nominal_vehicle(wanted)
        } else {
            sim.set_true_vehicle(wanted)
        };
        match set {
            Ok(()) => r2r::log_info!(
                self.logger,
                "t={:.3} s: {which} is now {wanted:?}",
                sim.time_secs()
            ),
            Err(e) => {
                let c = sim.config();
                let current = if nominal {
                    c.nominal_vehicle
                } else {
                    c.true_vehicle
                };
                *typed = VehicleParams::from(&current);
                (self.restore)(name, r2r::ParameterValue::Double(current.field(field)));
                let input = if nominal {
                    "nominal_vehicle"
                } else {
                    "true_vehicle"
                };
                self.s.drop_input(input, e, self.logger);
            }
        }
    }

    /// `drive_script` / `drive_repeat`: the script (re)starts now; "" stops it; a file that does not parse is
    /// refused with `file:line` and the script in force stays.
    fn drive(&mut self) {
        let now = self.s.sim.time_secs();
        let p = &mut *self.p;
        match RunningDrive::start(&p.drive_script, &p.mode, p.drive_repeat, now) {
            Ok(drive) => {
                let what = (drive.as_ref()).map_or("no drive script".to_owned(), |d| d.describe());
                r2r::log_info!(self.logger, "t={now:.2} s: {what}");
                self.s.drive = drive;
            }
            Err(e) => {
                let previous = (self.s.drive.as_ref()).map_or(String::new(), |d| d.path.clone());
                p.drive_script = previous.clone();
                (self.restore)("drive_script", r2r::ParameterValue::String(previous));
                self.s.drop_input("drive_script", e, self.logger);
            }
        }
    }
}

/// Applies `sim_facts` messages (std_msgs/String holding Datalog facts: `wet_floor. load_kg(120.0).`): the
/// latest message is in force, asserted in every evaluation. A message that does not parse (bad syntax, too
/// deep or too large: the rules library refuses those with the limit), holds rules, or would leave a typecode
/// undecoded or the vehicle on an obstacle is dropped with the reason: counted as dropped input and logged at
/// most once per period with the running counts; the previous facts stay. Parsing runs off the node's thread
/// and outside the simulator's lock, so a large message does not stall the simulation loop.
pub async fn sim_facts(stream: impl Stream<Item = StringMsg> + Unpin, shared: SharedSim, logger: String) {
    stream
        .for_each(|msg: StringMsg| {
            let shared = shared.clone();
            let logger = logger.clone();
            async move {
                let parsed = tokio::task::spawn_blocking(move || parse_facts(&msg.data, "sim_facts"))
                    .await
                    .map_err(|e| format!("sim_facts: parsing stopped: {e}"));
                let Ok(mut s) = shared.lock() else { return };
                let set = parsed.and_then(|facts| {
                    facts.map_err(|e| e.to_string()).and_then(|facts| {
                        let n = facts.len();
                        s.sim.set_facts(facts).map(|()| n).map_err(|e| e.to_string())
                    })
                });
                match set {
                    Ok(n) => {
                        s.grid_dirty = true;
                        r2r::log_info!(
                            &logger,
                            "t={:.2} s: sim_facts: {n} fact(s) in force",
                            s.sim.time_secs()
                        );
                    }
                    Err(e) => {
                        let reason = format!("sim_facts refused, the previous facts stay: {}", one_line(&e));
                        s.drop_input("sim_facts", reason, &logger);
                    }
                }
            }
        })
        .await;
}

/// The first line of a diagnostic (a message can hold many), cut to a log line's length, with how many lines
/// were left out.
fn one_line(text: &str) -> String {
    const MAX_CHARS: usize = 300;
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let mut line: String = first.chars().take(MAX_CHARS).collect();
    if line.len() < first.len() {
        line.push_str("...");
    }
    let more = lines.count();
    if more > 0 {
        line.push_str(&format!(" (and {more} more error line(s))"));
    }
    line
}

/// The check of every `~/set_parameters` (see [`Guarded`]): a parameter the node cannot change while it runs
/// is refused with the reason. Applied here: `min_step_m`, `scene_file` and `rule_files` (the files are
/// loaded and checked at once; a file that does not load is refused with its `file:line:column`), and
/// `slip_model`, `lateral_slip_s`, `longitudinal_slip_s2pm` (the ground's slip model, from the next step; a
/// value that does not make a model is refused with the reason). Passed on
/// to [`parameter_changes`]: `time_scale`, `nominal_vehicle.*`, `true_vehicle.*`, `drive_script`,
/// `drive_repeat`.
pub fn parameter_guard(shared: SharedSim, reloader: Arc<Reloader>, logger: String) -> Guard<SimParams> {
    Box::new(move |name: &str, value: &ParameterValue, current: &SimParams| {
        let applied: Result<String, String> = match (name, value) {
            // A script is loaded here too, so a file that does not parse is refused in the answer (with
            // `file:line`) instead of accepted and then quietly set back; the run starts it at its next tick.
            ("drive_script", ParameterValue::String(path)) => {
                return RunningDrive::start(path, &current.mode, current.drive_repeat, 0.0)
                    .map(|_| ())
                    .map_err(|e| e.to_string());
            }
            ("time_scale" | "drive_script" | "drive_repeat", _) => return Ok(()),
            (n, _) if n.starts_with("nominal_vehicle.") || n.starts_with("true_vehicle.") => return Ok(()),
            ("min_step_m", ParameterValue::Double(v)) => match shared.lock() {
                Ok(mut s) => (s.sim.set_min_step_m(*v))
                    .map(|()| format!("{} m in force from the next tick", s.sim.min_step_m()))
                    .map_err(|e| e.to_string()),
                Err(_) => Err("internal error: simulator mutex poisoned".into()),
            },
            ("slip_model" | "lateral_slip_s" | "longitudinal_slip_s2pm", _) => match shared.lock() {
                Ok(mut s) => current.slip_with(name, value).and_then(|model| {
                    (s.sim.set_slip(model))
                        .map(|()| format!("the ground slips as {model:?} from the next step"))
                        .map_err(|e| e.to_string())
                }),
                Err(_) => Err("internal error: simulator mutex poisoned".into()),
            },
            ("scene_file", ParameterValue::String(path)) => reloader.switch(Some(PathBuf::from(path)), None),
            ("rule_files", ParameterValue::String(list)) => reloader.switch(None, Some(rule_paths(list))),
            ("mode", _) => Err(
                "`mode` cannot change while the node runs (the topics it serves depend on it); \
                                restart the node with the new mode"
                    .into(),
            ),
            (other, _) => Err(format!(
                "`{other}` is read at start only; restart the node to change it"
            )),
        };
        match applied {
            Ok(message) => {
                r2r::log_info!(&logger, "parameter {name}: {message}");
                Ok(())
            }
            Err(reason) => {
                r2r::log_warn!(&logger, "parameter {name} refused: {reason}");
                Err(reason)
            }
        }
    })
}
