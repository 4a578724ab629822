//! The calibration step as the node runs it: whenever a window's worth of data came in (or on `~/calibrate`),
//! step the calibrator, publish the status, and on acceptance push the parameters to the base and publish
//! them. A module of its own so that the services and `main` both import it and neither imports the other.

use std::rc::Rc;
use std::time::Duration;

use lockstep_calibrator::Outcome;
use r2r::diagnostic_msgs::msg::DiagnosticArray;
use r2r::lockstep_interfaces::msg::{CalibrationResult, CalibrationStatus};
use r2r::rcl_interfaces::srv::SetParameters;

use crate::state::Shared;
use crate::{messages, push};

/// How often the node looks whether a window's worth of data came in (wall time).
const POLL: Duration = Duration::from_millis(20);

/// What the step task publishes to and pushes with.
pub(crate) struct Outputs {
    pub(crate) status: r2r::Publisher<CalibrationStatus>,
    pub(crate) result: r2r::Publisher<CalibrationResult>,
    pub(crate) diagnostics: r2r::Publisher<DiagnosticArray>,
    pub(crate) push: Option<Push>,
    pub(crate) node_name: String,
    pub(crate) logger: String,
}

/// Where accepted parameters are pushed: the base's `set_parameters` service, with the parameters' prefix.
pub(crate) struct Push {
    pub(crate) client: r2r::Client<SetParameters::Service>,
    pub(crate) service: String,
    pub(crate) prefix: String,
}

/// Steps whenever a window's worth of data came in.
pub(crate) async fn step_loop(shared: Shared, outputs: Rc<Outputs>) {
    let mut ticker = tokio::time::interval(POLL);
    loop {
        ticker.tick().await;
        let due = shared.lock().map(|s| s.due()).unwrap_or(false);
        if due {
            step(&shared, &outputs).await;
        }
    }
}

/// One step: publish the status, and on acceptance the result (after pushing it, if configured).
pub(crate) async fn step(shared: &Shared, out: &Outputs) -> (Outcome, String) {
    let (outcome, t, threshold2, status) = {
        let Ok(mut s) = shared.lock() else {
            return (
                Outcome::Waiting("internal error".into()),
                "internal error: state poisoned".into(),
            );
        };
        let outcome = s.step();
        let t = s.data_secs().unwrap_or(0.0);
        let status = messages::status(&s, &outcome, t);
        (outcome, t, s.calibrator.config().threshold2, status)
    };
    let (name, reason) = messages::describe(&outcome);
    let line = format!("t={t:.2} s: {name}: {reason}");
    if let Err(e) = out.status.publish(&status) {
        r2r::log_warn!(&out.logger, "cannot publish ~/status: {e}");
    }
    match &outcome {
        Outcome::Accepted(a) => {
            r2r::log_info!(&out.logger, "{line}");
            for alarm in &a.alarms {
                r2r::log_warn!(&out.logger, "drift alarm: {alarm}");
            }
            let mut msg = messages::accepted(a, threshold2, t);
            if let Some(result) = push_to_base(shared, out, a.params).await {
                msg.pushed = result.is_ok();
                msg.push_result = result.unwrap_or_else(|e| {
                    r2r::log_warn!(&out.logger, "push failed: {e}");
                    e
                });
            }
            if let Err(e) = out.result.publish(&msg) {
                r2r::log_warn!(&out.logger, "cannot publish ~/parameters: {e}");
            }
            if let Err(e) = out
                .diagnostics
                .publish(&messages::diagnostics(&out.node_name, a, t))
            {
                r2r::log_warn!(&out.logger, "cannot publish /diagnostics: {e}");
            }
        }
        Outcome::Rejected { .. } | Outcome::Skipped(_) => r2r::log_info!(&out.logger, "{line}"),
        Outcome::Waiting(_) | Outcome::Unchanged { .. } => r2r::log_debug!(&out.logger, "{line}"),
    }
    (outcome, line)
}

/// Pushes `params` to `push_node` (None when no push is configured); once taken they are the history's
/// nominal too: the base now turns commands into wheel speeds and odometry with them.
pub(crate) async fn push_to_base(
    shared: &Shared,
    out: &Outputs,
    params: lockstep_calibrator::ModelParams,
) -> Option<Result<String, String>> {
    let p = out.push.as_ref()?;
    let result = match r2r::Node::is_available(&p.client) {
        Ok(available) => {
            push::push(
                &p.client,
                available,
                &p.service,
                &push::request(&p.prefix, &params),
            )
            .await
        }
        Err(e) => Err(format!("{}: {e}", p.service)),
    };
    Some(result.map(|()| {
        if let Ok(mut s) = shared.lock() {
            s.calibrator.history_mut().set_nominal(params);
        }
        format!("set on {}", p.service)
    }))
}
