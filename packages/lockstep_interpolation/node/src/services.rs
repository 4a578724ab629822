//! The `pause`, `resume` and `set_speed` services: each request planned on the goal being played, on a task of
//! its own (the planner refuses at once what it cannot plan soon).

use std::sync::Arc;

use futures::{future, StreamExt};
use lockstep_interpolation::session::Request;
use lockstep_interpolation::{Plan, Refusal};
use lockstep_ros::{lock, qos, SharedNode};
use r2r::lockstep_interfaces::srv::{PauseMotion, ResumeMotion, SetSpeed};

use crate::engine::Shared;
use crate::requests;

/// What the `pause`, `resume` and `set_speed` services need: each request is planned by the planner on the
/// goal being played.
pub(crate) struct Services {
    pub(crate) shared: Shared,
    pub(crate) planner: Arc<requests::Planner>,
    pub(crate) period_s: f64,
}

impl Services {
    /// Serves `pause` (PauseMotion).
    pub(crate) fn pause(&self, node: &SharedNode) -> anyhow::Result<impl future::Future<Output = ()>> {
        let pause = lock(node)?.create_service::<PauseMotion::Service>("pause", qos::requests())?;
        let (shared, planner, period_s) = (self.shared.clone(), self.planner.clone(), self.period_s);
        Ok(pause.for_each(move |req| {
            let (shared, planner) = (shared.clone(), planner.clone());
            // Each request on a task of its own: the stream is drained at once, so a storm is answered
            // (the planner refuses what it cannot plan soon) instead of overflowing r2r's channel.
            tokio::spawn(async move {
                let request = Request::pause(req.message.stop_time_secs);
                let answer = planner.handle_unless_busy(&shared, period_s, request).await;
                let _ = req.respond(pause_response(answer));
            });
            future::ready(())
        }))
    }

    /// Serves `resume` (ResumeMotion).
    pub(crate) fn resume(&self, node: &SharedNode) -> anyhow::Result<impl future::Future<Output = ()>> {
        let resume = lock(node)?.create_service::<ResumeMotion::Service>("resume", qos::requests())?;
        let (shared, planner, period_s) = (self.shared.clone(), self.planner.clone(), self.period_s);
        Ok(resume.for_each(move |req| {
            let (shared, planner) = (shared.clone(), planner.clone());
            // Each request on a task of its own: the stream is drained at once, so a storm is answered
            // (the planner refuses what it cannot plan soon) instead of overflowing r2r's channel.
            tokio::spawn(async move {
                let request = Request::resume(req.message.start_time_secs, req.message.speed_factor);
                let response = match planner.handle_unless_busy(&shared, period_s, request).await {
                    Ok(plan) => ResumeMotion::Response {
                        success: true,
                        message: plan.resume_message(),
                        ramp_secs: plan.ramp_secs,
                        delay_secs: plan.delay_secs,
                        speed_factor: plan.to,
                    },
                    Err(refusal) => ResumeMotion::Response {
                        success: false,
                        message: refusal.to_string(),
                        ..Default::default()
                    },
                };
                let _ = req.respond(response);
            });
            future::ready(())
        }))
    }

    /// Serves `set_speed` (SetSpeed); every answer carries the playing file's s_max (0: nothing plays).
    pub(crate) fn set_speed(&self, node: &SharedNode) -> anyhow::Result<impl future::Future<Output = ()>> {
        let set_speed = lock(node)?.create_service::<SetSpeed::Service>("set_speed", qos::requests())?;
        let (shared, planner, period_s) = (self.shared.clone(), self.planner.clone(), self.period_s);
        Ok(set_speed.for_each(move |req| {
            let (shared, planner) = (shared.clone(), planner.clone());
            // Each request on a task of its own: the stream is drained at once, so a storm is answered
            // (the planner refuses what it cannot plan soon) instead of overflowing r2r's channel.
            tokio::spawn(async move {
                let factor = req.message.speed_factor;
                let s_max = shared
                    .lock()
                    .ok()
                    .and_then(|e| e.active.as_ref().map(|a| a.session.s_max()))
                    .unwrap_or(0.0);
                let request = Request::SetSpeed { factor };
                let response = match planner.handle_unless_busy(&shared, period_s, request).await {
                    Ok(plan) => SetSpeed::Response {
                        success: true,
                        message: plan.speed_message(factor),
                        ramp_secs: plan.total_secs(),
                        s_max,
                    },
                    Err(refusal) => SetSpeed::Response {
                        success: false,
                        message: refusal.to_string(),
                        ramp_secs: 0.0,
                        s_max,
                    },
                };
                let _ = req.respond(response);
            });
            future::ready(())
        }))
    }
}

/// The answer to a pause request.
fn pause_response(answer: Result<Plan, Refusal>) -> PauseMotion::Response {
    match answer {
        Ok(plan) => PauseMotion::Response {
            success: true,
            message: plan.pause_message(),
            stop_time_secs: plan.total_secs(),
            t_min_secs: plan.t_min_secs,
            t_feasible_secs: plan.t_feasible_secs,
            delay_secs: plan.delay_secs,
        },
        Err(refusal) => {
            let (t_min_secs, t_feasible_secs) = refusal.stop_times();
            PauseMotion::Response {
                success: false,
                message: refusal.to_string(),
                t_min_secs,
                t_feasible_secs,
                ..Default::default()
            }
        }
    }
}
