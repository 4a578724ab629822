//! The node's services: `~/calibrate`, `~/reset` and `~/predict`.

use std::rc::Rc;

use futures::{Stream, StreamExt};
use lockstep_calibrator::{commands_from_arrays, predict_commands, Outcome, Pose};
use r2r::geometry_msgs::msg::Pose2D;
use r2r::lockstep_interfaces::srv::PredictMotion;
use r2r::std_srvs::srv::Trigger;

use crate::messages;
use crate::state::Shared;
use crate::stepping::{push_to_base, step, Outputs};

/// `~/calibrate`: one step now on the latest window; success when it ran (the message says what it did).
pub async fn calibrate_service(
    requests: impl Stream<Item = r2r::ServiceRequest<Trigger::Service>> + Unpin,
    shared: Shared,
    outputs: Rc<Outputs>,
) {
    requests
        .for_each(|req| {
            let (shared, outputs) = (shared.clone(), outputs.clone());
            async move {
                let (outcome, line) = step(&shared, &outputs).await;
                let success = !matches!(outcome, Outcome::Waiting(_));
                if let Err(e) = req.respond(Trigger::Response {
                    success,
                    message: line,
                }) {
                    r2r::log_warn!(&outputs.logger, "~/calibrate: cannot respond: {e}");
                }
            }
        })
        .await;
}

/// `~/reset`: back to the nominal parameters (republished on `~/parameters`, and pushed back to
/// `push_node` if set, so that the base and the calibrator agree again).
pub async fn reset_service(
    requests: impl Stream<Item = r2r::ServiceRequest<Trigger::Service>> + Unpin,
    shared: Shared,
    outputs: Rc<Outputs>,
    nominal: lockstep_calibrator::ModelParams,
) {
    requests
        .for_each(|req| {
            let (shared, outputs) = (shared.clone(), outputs.clone());
            async move {
                let t = shared
                    .lock()
                    .map(|mut s| {
                        s.reset();
                        s.data_secs().unwrap_or(0.0)
                    })
                    .unwrap_or(0.0);
                let mut msg = messages::nominal(&nominal, t);
                let mut message = format!("reset to nominal {nominal:?}");
                let mut success = true;
                if let Some(result) = push_to_base(&shared, &outputs, nominal).await {
                    msg.pushed = result.is_ok();
                    msg.push_result = result.unwrap_or_else(|e| {
                        message = format!("{message}; pushing it back failed: {e}");
                        success = false;
                        e
                    });
                }
                r2r::log_info!(&outputs.logger, "~/reset: {message}");
                if let Err(e) = outputs.result.publish(&msg) {
                    r2r::log_warn!(&outputs.logger, "cannot publish ~/parameters: {e}");
                }
                if let Err(e) = req.respond(Trigger::Response { success, message }) {
                    r2r::log_warn!(&outputs.logger, "~/reset: cannot respond: {e}");
                }
            }
        })
        .await;
}

/// `~/predict`: where a sequence of commands takes the robot, with the calibrated parameters in use and the
/// nominal ones the base turns commands into wheel speeds with. A bad request is answered `success` false
/// with the field at fault.
pub async fn predict_service(
    requests: impl Stream<Item = r2r::ServiceRequest<PredictMotion::Service>> + Unpin,
    shared: Shared,
    logger: String,
) {
    requests
        .for_each(|req| {
            let response = predict(&shared, &req.message);
            if !response.success {
                r2r::log_info!(&logger, "~/predict refused: {}", response.message);
            }
            if let Err(e) = req.respond(response) {
                r2r::log_warn!(&logger, "~/predict: cannot respond: {e}");
            }
            futures::future::ready(())
        })
        .await;
}

/// The answer to one `~/predict` request.
pub fn predict(shared: &Shared, r: &PredictMotion::Request) -> PredictMotion::Response {
    let Ok((nominal, actual)) = shared
        .lock()
        .map(|s| (s.calibrator.history().nominal(), s.calibrator.current()))
    else {
        return PredictMotion::Response {
            message: "internal error: state poisoned".into(),
            ..PredictMotion::Response::default()
        };
    };
    let start = Pose {
        x_m: r.start.x,
        y_m: r.start.y,
        yaw_rad: r.start.theta,
    };
    let predicted = commands_from_arrays(&r.command_v_mps, &r.command_w_radps, &r.command_duration_s)
        .and_then(|commands| predict_commands(&nominal, &actual, start, &commands, r.sample_period_s));
    let mut response = PredictMotion::Response {
        wheel_radius_m: actual.wheel_radius_m,
        track_width_m: actual.track_width_m,
        delay_secs: actual.delay_secs,
        centripetal_factor: actual.centripetal_factor,
        ..PredictMotion::Response::default()
    };
    match predicted {
        Ok(samples) => {
            response.success = true;
            response.message = format!(
                "{} poses over {:.3} s",
                samples.len(),
                samples.last().map_or(0.0, |(t, _)| *t)
            );
            (response.times_s, response.poses) = samples
                .into_iter()
                .map(|(t, p)| {
                    (
                        t,
                        Pose2D {
                            x: p.x_m,
                            y: p.y_m,
                            theta: p.yaw_rad,
                        },
                    )
                })
                .unzip();
        }
        Err(e) => response.message = e.to_string(),
    }
    response
}
