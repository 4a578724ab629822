//! What comes into the node: cmd_vel, the two services and run-time `time_scale` changes. Every input is
//! checked before it touches the simulator; garbage is dropped and counted (see [`crate::Shared::drop_input`]).

use std::sync::{Arc, Mutex};

use futures::{future, Stream, StreamExt};
use lockstep_sim::{check_time_scale, check_twist};
use r2r::geometry_msgs::msg::Twist;
use r2r::lockstep_interfaces::srv::SetDestination;
use r2r::std_srvs::srv::Trigger;

use crate::params::SimParams;
use crate::watch::Reloader;
use crate::SharedSim;

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

/// Watches run-time parameter changes: a `time_scale` that is not finite or outside [0, 1e4] is dropped
/// (counted), and the last valid value is written back -- into the typed parameters the loop reads and,
/// through `restore`, into what `~/get_parameters` reports. (r2r has no hook to refuse a set, so the service
/// has already answered `successful`.)
pub async fn time_scale_changes(
    changes: impl Stream<Item = (String, r2r::ParameterValue)> + Unpin,
    params: Arc<Mutex<SimParams>>,
    restore: impl Fn(f64),
    initial: f64,
    shared: SharedSim,
    logger: String,
) {
    let mut valid = initial;
    changes
        .for_each(|(name, value)| {
            if name == "time_scale" {
                if let r2r::ParameterValue::Double(requested) = value {
                    match check_time_scale(requested) {
                        Ok(scale) => valid = scale,
                        Err(e) => {
                            if let Ok(mut p) = params.lock() {
                                p.time_scale = valid;
                            }
                            restore(valid);
                            if let Ok(mut s) = shared.lock() {
                                s.drop_input("time_scale", e, &logger);
                            }
                        }
                    }
                }
            }
            future::ready(())
        })
        .await;
}
