//! The manager's request/answer services, each answered by the manager's loop.

use futures::StreamExt as _;
use lockstep_tasks::Attribute;
use r2r::lockstep_interfaces::srv::AddAttribute;
use tokio::sync::{mpsc, oneshot};

use crate::manager::{Event, Reply};

/// Serve a request/answer service through the manager: `event` makes the event (with the reply channel),
/// `response` the answer from (success, message).
pub async fn serve<S, E, R>(
    requests: impl futures::Stream<Item = r2r::ServiceRequest<S>> + Unpin,
    tx: mpsc::UnboundedSender<Event>,
    event: E,
    response: R,
) where
    S: r2r::WrappedServiceTypeSupport + 'static,
    E: Fn(S::Request, Reply) -> Event,
    R: Fn(bool, String) -> S::Response,
{
    let mut requests = requests;
    while let Some(req) = requests.next().await {
        let (reply, answer) = oneshot::channel();
        let _ = tx.send(event(req.message.clone(), reply));
        let (success, message) = match answer.await {
            Ok(Ok(message)) => (true, message),
            Ok(Err(message)) => (false, message),
            Err(_) => (false, "the manager stopped".to_owned()),
        };
        let _ = req.respond(response(success, message));
    }
}

/// The attribute an AddAttribute request asks for, or why it is not one.
pub fn attribute(m: &AddAttribute::Request) -> Result<Attribute, String> {
    match m.kind.as_str() {
        "delay" if m.delay_s >= 0.0 && m.delay_s.is_finite() => Ok(Attribute::Delay { secs: m.delay_s }),
        "delay" => Err(format!(
            "delay_s must be a finite number >= 0 (got {})",
            m.delay_s
        )),
        "condition" if !m.query.trim().is_empty() => Ok(Attribute::Condition {
            query: m.query.clone(),
        }),
        "condition" => Err("a condition needs a query (a Datalog rule body, e.g. clear(dock_b))".into()),
        "interrupt" => Ok(Attribute::Interrupt {
            reason: if m.reason.is_empty() {
                "operator".into()
            } else {
                m.reason.clone()
            },
        }),
        other => Err(format!(
            "kind `{other}` is not one of delay, condition, interrupt"
        )),
    }
}
