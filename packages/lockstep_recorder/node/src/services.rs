//! The recorder's services (`~/pause`, `~/resume`, `~/is_paused`, `~/split_bagfile`, `~/get_topology`, and
//! `~/snapshot` in snapshot mode) and
//! its `~/status` publisher, as tasks of the node.

use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use futures::{Future, StreamExt};
use lockstep_recorder::{Command, Recording};
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_trace::Topology;
use lockstep_trace_ros::topology_to_msg;
use r2r::lockstep_interfaces::msg::RecorderStatus;
use r2r::lockstep_interfaces::srv::{GetTopology, IsPaused};
use r2r::std_srvs::srv::Trigger;

use crate::{messages, StatusObserver};

/// Serve the services until the node stops.
pub fn serve(
    node: &SharedNode,
    recording: &Arc<Recording>,
    commands: &Sender<Command>,
    snapshot_mode: bool,
) -> anyhow::Result<impl Future<Output = ()>> {
    let mut n = lock(node)?;
    let pause = n.create_service::<Trigger::Service>("~/pause", qos::requests())?;
    let resume = n.create_service::<Trigger::Service>("~/resume", qos::requests())?;
    let split = n.create_service::<Trigger::Service>("~/split_bagfile", qos::requests())?;
    let is_paused = n.create_service::<IsPaused::Service>("~/is_paused", qos::requests())?;
    let get_topology = n.create_service::<GetTopology::Service>("~/get_topology", qos::requests())?;
    drop(n);
    let (r1, r2, r3, r4) = (
        recording.clone(),
        recording.clone(),
        recording.clone(),
        recording.clone(),
    );
    let pause_task = pause.for_each(move |req| {
        respond_trigger(req, true, r1.pause());
        futures::future::ready(())
    });
    let resume_task = resume.for_each(move |req| {
        respond_trigger(req, true, r2.resume());
        futures::future::ready(())
    });
    let is_paused_task = is_paused.for_each(move |req| {
        let paused = r3.paused.load(Ordering::SeqCst);
        let _ = req.respond(IsPaused::Response { paused });
        futures::future::ready(())
    });
    let topology_task = get_topology.for_each(move |req| {
        let topology = topology_to_msg(&Topology {
            components: r4.components(),
        });
        let success = true;
        let _ = req.respond(GetTopology::Response {
            success,
            message: String::new(),
            topology,
        });
        futures::future::ready(())
    });
    let to_thread = commands.clone();
    let split_task = split.for_each(move |req| split_now(to_thread.clone(), req));
    // As rosbag2's recorder: the service exists only in snapshot mode.
    let snapshot = match snapshot_mode {
        true => Some(lock(node)?.create_service::<Trigger::Service>("~/snapshot", qos::requests())?),
        false => None,
    };
    let commands = commands.clone();
    let snapshot_task = async move {
        if let Some(service) = snapshot {
            service
                .for_each(move |req| snapshot_now(commands.clone(), req))
                .await;
        }
    };
    Ok(async move {
        tokio::join!(
            pause_task,
            resume_task,
            is_paused_task,
            split_task,
            topology_task,
            snapshot_task
        );
    })
}

/// Ask the bag thread to write what snapshot mode holds, and answer with what it wrote, or why not.
async fn snapshot_now(commands: Sender<Command>, req: r2r::ServiceRequest<Trigger::Service>) {
    match ask(&commands, Command::Snapshot).await {
        Ok(s) => respond_trigger(
            req,
            true,
            &format!(
                "wrote {} messages ({} bytes) to file {}; {} older messages had left the cache",
                s.messages, s.bytes, s.file_index, s.evicted
            ),
        ),
        Err(reason) => respond_trigger(req, false, &reason),
    }
}

/// Ask the bag thread for a new file and answer with its index, or why not.
async fn split_now(commands: Sender<Command>, req: r2r::ServiceRequest<Trigger::Service>) {
    match ask(&commands, Command::Split).await {
        Ok(index) => respond_trigger(req, true, &format!("now writing file {index}")),
        Err(reason) => respond_trigger(req, false, &reason),
    }
}

/// Send the bag thread the command `make` builds around a reply, and wait for the reply.
async fn ask<T: Send + 'static>(
    commands: &Sender<Command>,
    make: impl FnOnce(Box<dyn FnOnce(Result<T, String>) + Send>) -> Command,
) -> Result<T, String> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let send = Box::new(move |outcome| {
        let _ = reply.send(outcome);
    });
    match commands.send(make(send)) {
        Ok(()) => answer
            .await
            .unwrap_or_else(|_| Err("the bag writer stopped".into())),
        Err(_) => Err("the bag writer stopped".into()),
    }
}

fn respond_trigger(req: r2r::ServiceRequest<Trigger::Service>, success: bool, message: &str) {
    let _ = req.respond(Trigger::Response {
        success,
        message: message.to_owned(),
    });
}

/// Publish `~/status` every `period` (and show it to `observer`), until the node stops.
pub fn status(
    node: &SharedNode,
    recording: Arc<Recording>,
    period: Duration,
    mut observer: Option<StatusObserver>,
) -> anyhow::Result<impl Future<Output = ()>> {
    let mut n = lock(node)?;
    let topic = format!("{}/status", n.fully_qualified_name()?);
    let publisher = n.create_publisher::<RecorderStatus>("~/status", qos::reliable(10))?;
    drop(n);
    let logger = lockstep_ros::logger_name(node)?;
    Ok(async move {
        let mut interval = tokio::time::interval(period);
        let mut failing = false;
        loop {
            interval.tick().await;
            let status = recording.status();
            if let Some(observer) = observer.as_mut() {
                observer(&status);
            }
            match publisher.publish(&messages::status_msg(&status)) {
                Err(e) if !failing => {
                    r2r::log_error!(&logger, "publishing {topic}: {e} (logged once)");
                    failing = true;
                }
                Err(_) => {}
                Ok(()) => failing = false,
            }
        }
    })
}
