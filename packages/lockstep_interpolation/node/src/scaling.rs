//! `~/speed_scaling_input` in the trajectory-controller mode: each factor (the latest, when several arrive
//! while one is planned) becomes the pause, resume or speed change that reaches it within every limit, on
//! whatever motion plays; it also stays for the goals that follow. `~/speed_scaling_target` says what s is
//! heading for.

use futures::{future, StreamExt};
use lockstep_interpolation::scaling::request_for;
use lockstep_interpolation::session::Request;
use r2r::control_msgs::msg::SpeedScalingFactor;
use tokio::sync::watch;

use crate::context::Context;

/// Each factor on `speed_scaling_input` (the latest one when several come while one is planned) becomes a
/// pause, resume or speed change within the limits.
pub(crate) async fn speed_scaling(
    ctx: Context,
    input: impl futures::Stream<Item = SpeedScalingFactor> + Unpin,
    target: r2r::Publisher<SpeedScalingFactor>,
) {
    let initial = ctx.config.params.initial_speed_scaling_factor;
    if let Ok(mut e) = ctx.shared.lock() {
        e.scaling = initial;
    }
    let (latest, mut changes) = watch::channel(initial);
    let logger = ctx.config.logger.clone();
    let shared = ctx.shared.clone();
    let receive = input.for_each(move |msg| {
        if msg.factor.is_finite() && msg.factor >= 0.0 {
            if let Ok(mut e) = shared.lock() {
                e.scaling = msg.factor;
            }
            let _ = latest.send(msg.factor);
        } else {
            r2r::log_warn!(
                &logger,
                "speed_scaling_input: factor {} ignored: it must be 0 or more",
                msg.factor
            );
        }
        future::ready(())
    });
    let apply = async move {
        while changes.changed().await.is_ok() {
            let factor = *changes.borrow_and_update();
            apply_scaling(&ctx, factor, &target).await;
        }
    };
    tokio::join!(receive, apply);
}

/// Approach `factor` on the motion being played (see `lockstep_interpolation::scaling`).
async fn apply_scaling(ctx: &Context, factor: f64, target: &r2r::Publisher<SpeedScalingFactor>) {
    let request = ctx.shared.lock().ok().and_then(|e| {
        let a = e.active.as_ref()?;
        request_for(a.session.main(), a.session.s_max(), factor)
    });
    let Some(request) = request else { return };
    let to = match &request {
        Request::Resume { factor: Some(to), .. } | Request::SetSpeed { factor: to } => *to,
        _ => 0.0,
    };
    let _ = target.publish(&SpeedScalingFactor { factor: to });
    let period_s = ctx.config.params.period_s;
    if let Err(refusal) = ctx.planner.handle(&ctx.shared, period_s, request).await {
        r2r::log_info!(&ctx.config.logger, "speed scaling {factor}: {refusal}");
    }
}
