//! The manager's request/answer services, each answered by the manager's loop.

use futures::StreamExt as _;
use tokio::sync::{mpsc, oneshot};

use crate::inputs::{Input, Reply};

/// Serve a request/answer service through the manager: `input` makes the loop's input (with the reply
/// channel), `response` the answer from (success, message).
pub async fn serve<S, E, R>(
    requests: impl futures::Stream<Item = r2r::ServiceRequest<S>> + Unpin,
    tx: mpsc::UnboundedSender<Input>,
    input: E,
    response: R,
) where
    S: r2r::WrappedServiceTypeSupport + 'static,
    E: Fn(S::Request, Reply) -> Input,
    R: Fn(bool, String) -> S::Response,
{
    let mut requests = requests;
    while let Some(req) = requests.next().await {
        let (reply, answer) = oneshot::channel();
        let _ = tx.send(input(req.message.clone(), reply));
        let (success, message) = match answer.await {
            Ok(Ok(message)) => (true, message),
            Ok(Err(message)) => (false, message),
            Err(_) => (false, "the manager stopped".to_owned()),
        };
        let _ = req.respond(response(success, message));
    }
}
