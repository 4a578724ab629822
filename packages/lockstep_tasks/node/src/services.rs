//! The manager's request/answer services (`list_tasks`, `pause_task`, `resume_task`, `add_attribute`,
//! `~/reload`), each request handed to the manager's loop and answered from it.

use futures::{Stream, StreamExt as _};
use lockstep_tasks::manager::AttributeRequest;
use r2r::lockstep_interfaces::srv::{AddAttribute, ListTasks, PauseTask, ResumeTask};
use r2r::std_srvs::srv::Trigger;
use tokio::sync::{mpsc, oneshot};

use crate::inputs::{Input, Reply};

/// The services' request streams.
pub struct Services {
    pub list: Box<dyn Stream<Item = r2r::ServiceRequest<ListTasks::Service>> + Unpin>,
    pub pause: Box<dyn Stream<Item = r2r::ServiceRequest<PauseTask::Service>> + Unpin>,
    pub resume: Box<dyn Stream<Item = r2r::ServiceRequest<ResumeTask::Service>> + Unpin>,
    pub add: Box<dyn Stream<Item = r2r::ServiceRequest<AddAttribute::Service>> + Unpin>,
    pub reload: Box<dyn Stream<Item = r2r::ServiceRequest<Trigger::Service>> + Unpin>,
}

/// Every service request becomes an input of the manager's loop, answered from it.
pub async fn forward_services(i: Services, tx: mpsc::UnboundedSender<Input>) {
    let list = i.list.for_each(|req| {
        let tx = tx.clone();
        async move {
            let (reply, answer) = oneshot::channel();
            let _ = tx.send(Input::List(reply));
            let _ = req.respond(answer.await.unwrap_or_default());
        }
    });
    let pause = serve(
        i.pause,
        tx.clone(),
        |m: PauseTask::Request, reply| Input::Pause {
            task: m.task_id,
            reason: m.reason,
            reply,
        },
        |success, message| PauseTask::Response { success, message },
    );
    let resume = serve(
        i.resume,
        tx.clone(),
        |m: ResumeTask::Request, reply| Input::Resume {
            task: m.task_id,
            reply,
        },
        |success, message| ResumeTask::Response { success, message },
    );
    let add = serve(
        i.add,
        tx.clone(),
        |m: AddAttribute::Request, reply| Input::AddAttribute {
            attribute: AttributeRequest {
                kind: m.kind,
                delay_s: m.delay_s,
                query: m.query,
                reason: m.reason,
            },
            task: m.task_id,
            path: m.path,
            reply,
        },
        |success, message| AddAttribute::Response { success, message },
    );
    let reload = serve(
        i.reload,
        tx.clone(),
        |_: Trigger::Request, reply| Input::Reload(reply),
        |success, message| Trigger::Response { success, message },
    );
    tokio::join!(list, pause, resume, add, reload);
}

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
