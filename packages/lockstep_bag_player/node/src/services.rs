//! The player's services, with rosbag2's names and semantics, on the node's private namespace:
//! `~/pause`, `~/resume`, `~/toggle_paused`, `~/is_paused`, `~/set_rate`, `~/get_rate` (answered here, on
//! the shared clock) and `~/play_next`, `~/burst`, `~/seek`, `~/play` (handed to the play thread, which
//! answers when done). Every refusal says why; the node keeps running.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use lockstep_ros::{lock, qos, SharedNode};
use r2r::lockstep_interfaces::srv::{
    Burst, GetRate, IsPaused, Pause, Play, PlayNext, Resume, Seek, SetRate, TogglePaused,
};
use tokio::sync::oneshot;

use lockstep_bag_player::{seek_time, PlayRequest, Reply, PLAYER_STOPPED};

use crate::control::{Control, Request};

/// Create every service on `node` and return the future serving them.
pub fn serve(
    node: &SharedNode,
    control: Arc<Control>,
) -> anyhow::Result<impl std::future::Future<Output = ()>> {
    let clock = serve_clock(node, &control)?;
    let play = serve_play(node, &control)?;
    Ok(async move {
        tokio::join!(clock, play);
    })
}

/// `~/pause`, `~/resume`, `~/toggle_paused`, `~/is_paused`, `~/set_rate`, `~/get_rate`: answered at once,
/// on the shared clock.
fn serve_clock(
    node: &SharedNode,
    control: &Arc<Control>,
) -> anyhow::Result<impl std::future::Future<Output = ()>> {
    let mut n = lock(node)?;
    let q = qos::requests;
    let pause = n.create_service::<Pause::Service>("~/pause", q())?;
    let resume = n.create_service::<Resume::Service>("~/resume", q())?;
    let toggle = n.create_service::<TogglePaused::Service>("~/toggle_paused", q())?;
    let is_paused = n.create_service::<IsPaused::Service>("~/is_paused", q())?;
    let set_rate = n.create_service::<SetRate::Service>("~/set_rate", q())?;
    let get_rate = n.create_service::<GetRate::Service>("~/get_rate", q())?;
    drop(n);

    let c = control.clone();
    let pause = answer(pause, move |_| {
        c.pause();
        Pause::Response {}
    });
    let c = control.clone();
    let resume = answer(resume, move |_| {
        c.resume();
        Resume::Response {}
    });
    let c = control.clone();
    let toggle = answer(toggle, move |_| {
        c.toggle_paused();
        TogglePaused::Response {}
    });
    let c = control.clone();
    let is_paused = answer(is_paused, move |_| IsPaused::Response {
        paused: c.is_paused(),
    });
    let c = control.clone();
    let set_rate = answer(set_rate, move |req: SetRate::Request| {
        let outcome = c.set_rate(req.rate);
        SetRate::Response {
            success: outcome.is_ok(),
            message: outcome.err().unwrap_or_default(),
        }
    });
    let c = control.clone();
    let get_rate = answer(get_rate, move |_| GetRate::Response { rate: c.rate() });
    Ok(async move {
        tokio::join!(pause, resume, toggle, is_paused, set_rate, get_rate);
    })
}

/// `~/play_next`, `~/burst`, `~/seek`, `~/play`: handed to the play thread, which answers when done.
fn serve_play(
    node: &SharedNode,
    control: &Arc<Control>,
) -> anyhow::Result<impl std::future::Future<Output = ()>> {
    let mut n = lock(node)?;
    let q = qos::requests;
    let play_next = n.create_service::<PlayNext::Service>("~/play_next", q())?;
    let burst = n.create_service::<Burst::Service>("~/burst", q())?;
    let seek = n.create_service::<Seek::Service>("~/seek", q())?;
    let play = n.create_service::<Play::Service>("~/play", q())?;
    drop(n);

    let c = control.clone();
    let play_next = answer_async(play_next, move |_| {
        let (tx, rx) = oneshot::channel();
        c.request(Request::PlayNext(reply_to(tx)));
        async move {
            let outcome = outcome_of(rx).await;
            PlayNext::Response {
                success: outcome.is_ok(),
                message: outcome.err().unwrap_or_default(),
            }
        }
    });
    let c = control.clone();
    let burst = answer_async(burst, move |req: Burst::Request| {
        let (tx, rx) = oneshot::channel();
        c.request(Request::Burst(req.num_messages, reply_to(tx)));
        async move {
            let (actually_burst, message) = rx.await.unwrap_or_else(|_| (0, PLAYER_STOPPED.into()));
            Burst::Response {
                actually_burst,
                message,
            }
        }
    });
    let c = control.clone();
    let seek = answer_async(seek, move |req: Seek::Request| {
        let asked = seek_time(lockstep_ros::time::time_to_ns(&req.time)).map(|t| {
            let (tx, rx) = oneshot::channel();
            c.request(Request::Seek(t, reply_to(tx)));
            rx
        });
        async move {
            let outcome = match asked {
                Ok(rx) => outcome_of(rx).await,
                Err(e) => Err(e),
            };
            Seek::Response {
                success: outcome.is_ok(),
                message: outcome.err().unwrap_or_default(),
            }
        }
    });
    let c = control.clone();
    let play = answer_async(play, move |req: Play::Request| {
        let (tx, rx) = oneshot::channel();
        let request = PlayRequest::from_fields(
            lockstep_ros::time::time_to_ns(&req.start_offset),
            req.playback_duration.sec,
            req.playback_duration.nanosec,
            lockstep_ros::time::time_to_ns(&req.playback_until_timestamp),
        );
        c.request(Request::Play(request, reply_to(tx)));
        async move {
            let outcome = outcome_of(rx).await;
            Play::Response {
                success: outcome.is_ok(),
                message: outcome.err().unwrap_or_default(),
            }
        }
    });
    Ok(async move {
        tokio::join!(play_next, burst, seek, play);
    })
}

/// The play thread answers on `tx` (dropped unanswered, the asker hears that the player stopped).
fn reply_to<T: Send + 'static>(tx: oneshot::Sender<T>) -> Reply<T> {
    Box::new(move |answer| {
        let _ = tx.send(answer);
    })
}

/// The play thread's answer, or that it has gone.
async fn outcome_of(rx: oneshot::Receiver<Result<(), String>>) -> Result<(), String> {
    rx.await.unwrap_or_else(|_| Err(PLAYER_STOPPED.into()))
}

/// Serve `requests`, answering each with `f` at once.
async fn answer<S, F>(requests: impl Stream<Item = r2r::ServiceRequest<S>> + Unpin, mut f: F)
where
    S: r2r::WrappedServiceTypeSupport + 'static,
    F: FnMut(S::Request) -> S::Response,
{
    let mut requests = requests;
    while let Some(req) = requests.next().await {
        let response = f(req.message.clone());
        let _ = req.respond(response);
    }
}

/// Serve `requests`, answering each when the future `f` makes completes (requests run concurrently).
async fn answer_async<S, F, Fut>(requests: impl Stream<Item = r2r::ServiceRequest<S>> + Unpin, mut f: F)
where
    S: r2r::WrappedServiceTypeSupport + 'static,
    F: FnMut(S::Request) -> Fut,
    Fut: std::future::Future<Output = S::Response> + Send + 'static,
    r2r::ServiceRequest<S>: Send,
{
    let mut requests = requests;
    while let Some(req) = requests.next().await {
        let pending = f(req.message.clone());
        tokio::spawn(async move {
            let _ = req.respond(pending.await);
        });
    }
}
