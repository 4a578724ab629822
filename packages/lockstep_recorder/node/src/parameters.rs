//! The modules' parameters in the recording, so that a replay can tell (and set) the values the recording was
//! made with.
//!
//! Each module the recorder learns (from its latched topology or its dependency headers) is found in the ROS
//! graph as the node announcing `/lockstep/topology/<module>` (else `/<module>`), and its parameters are read
//! once through that node's standard services (`<node>/list_parameters`, `<node>/get_parameters`). From then
//! on every change the node announces on `/parameter_events` is kept with the time it was received, whether
//! or not the topic itself is recorded. The bag thread stores both as MCAP metadata records
//! (`lockstep_ros::parameter_text::records`: `lockstep_parameters`, `lockstep_parameter_nodes`,
//! `lockstep_parameter_changes`) as they come, with the topology's progress and at the end.
//!
//! The bounds and the choice of node are the core's ([`ModuleWatch`], [`Pending`](lockstep_recorder::Pending)).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use lockstep_ros::{lock, parameter_text, qos, SharedNode};
use lockstep_trace_ros::topology_topic;
use r2r::rcl_interfaces::msg::ParameterEvent;
use r2r::rcl_interfaces::srv::{GetParameters, ListParameters};

use lockstep_recorder::{announcer_name, names_to_read, ModuleWatch, Recording};

use crate::messages;
/// Longest wait for a parameter service to appear.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for one answer before the request is sent again, and how many times it is sent: a request
/// sent just as the service appeared may go unanswered (the answer leaves before its way back is matched).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(1);
const ASKS: u32 = 5;
/// Reads of one module before giving up (its failure is stored).
const ATTEMPTS: u32 = 2;

/// Read the parameters of every module learnt (every `period`), and keep the changes announced on
/// `/parameter_events`, until the node stops.
pub async fn watch(node: SharedNode, shared: Arc<Recording>, period: Duration) {
    let logger = lockstep_ros::logger_name(&node).unwrap_or_default();
    let events = lock(&node).map_err(|e| e.to_string()).and_then(|mut n| {
        n.subscribe::<ParameterEvent>(
            lockstep_ros::parameter_events::TOPIC,
            r2r::QosProfile::parameter_events(),
        )
        .map_err(|e| e.to_string())
    });
    match events {
        Ok(events) => {
            let shared = shared.clone();
            tokio::spawn(events.for_each(move |event| {
                let event = messages::parameter_event(&event, &shared.parameters);
                shared
                    .parameters
                    .add_event(&event, lockstep_trace::now_ns() as u64);
                futures::future::ready(())
            }));
        }
        Err(e) => r2r::log_warn!(&logger, "parameter changes are not recorded: subscribing: {e}"),
    }
    let mut watch = ModuleWatch::default();
    let mut interval = tokio::time::interval(period.max(Duration::from_millis(50)));
    loop {
        interval.tick().await;
        for component in shared.components() {
            let module = component.module_name;
            if !watch.wants(&module) {
                continue;
            }
            let Some(node_name) = watch.node_for(&module, announcer(&node, &module)) else {
                continue;
            };
            shared.parameters.watch_node(&node_name, &module);
            let task = read_module(node.clone(), shared.clone(), module, node_name, logger.clone());
            tokio::spawn(task);
        }
    }
}

/// The fully qualified name of the node announcing `module`'s topology, if the graph shows one.
fn announcer(node: &SharedNode, module: &str) -> Option<String> {
    let publishers = lock(node)
        .ok()?
        .get_publishers_info_by_topic(&topology_topic(module), false)
        .ok()?;
    announcer_name(
        publishers
            .iter()
            .map(|p| (p.node_name.as_str(), p.node_namespace.as_str())),
    )
}

/// Read `module`'s parameters from `node_name` (a few attempts) and keep them, or the reason they could not be.
async fn read_module(
    node: SharedNode,
    shared: Arc<Recording>,
    module: String,
    node_name: String,
    logger: String,
) {
    let mut error = String::new();
    for _ in 0..ATTEMPTS {
        match read(&node, &node_name, &shared).await {
            Ok((read_ns, values)) => {
                r2r::log_info!(
                    &logger,
                    "recorded {} parameters of {module} ({node_name})",
                    values.len()
                );
                shared
                    .parameters
                    .add_values(&module, &node_name, read_ns, &values);
                return;
            }
            Err(e) => error = e,
        }
    }
    r2r::log_warn!(&logger, "parameters of {module} not recorded: {error}");
    shared.parameters.add_error(&module, &node_name, &error);
}

/// (when the values were asked for, system time ns; (name, value text) sorted by name).
async fn read(
    node: &SharedNode,
    node_name: &str,
    shared: &Recording,
) -> Result<(u64, Vec<(String, String)>), String> {
    let (list, get, list_ready, get_ready) = {
        let mut n = lock(node).map_err(|e| e.to_string())?;
        let list_name = format!("{node_name}/list_parameters");
        let get_name = format!("{node_name}/get_parameters");
        let list = n
            .create_client::<ListParameters::Service>(&list_name, qos::reliable(10))
            .map_err(|e| format!("{list_name}: {e}"))?;
        let get = n
            .create_client::<GetParameters::Service>(&get_name, qos::reliable(10))
            .map_err(|e| format!("{get_name}: {e}"))?;
        let list_ready = r2r::Node::is_available(&list).map_err(|e| e.to_string())?;
        let get_ready = r2r::Node::is_available(&get).map_err(|e| e.to_string())?;
        (list, get, list_ready, get_ready)
    };
    let within = |what: String| move |_| format!("{what} did not appear within {CALL_TIMEOUT:?}");
    tokio::time::timeout(CALL_TIMEOUT, list_ready)
        .await
        .map_err(within(format!("{node_name}/list_parameters")))?
        .map_err(|e| e.to_string())?;
    tokio::time::timeout(CALL_TIMEOUT, get_ready)
        .await
        .map_err(within(format!("{node_name}/get_parameters")))?
        .map_err(|e| e.to_string())?;
    let request = ListParameters::Request {
        prefixes: Vec::new(),
        depth: 0, // every level
    };
    let listed = ask(&list, &request, &format!("{node_name}/list_parameters")).await?;
    let names = names_to_read(listed.result.names);
    let read_ns = lockstep_trace::now_ns() as u64;
    let request = GetParameters::Request { names: names.clone() };
    let got = ask(&get, &request, &format!("{node_name}/get_parameters")).await?;
    if got.values.len() != names.len() {
        return Err(format!(
            "{node_name}/get_parameters answered {} values for {} names",
            got.values.len(),
            names.len()
        ));
    }
    let values = names
        .into_iter()
        .zip(
            got.values
                .iter()
                .map(|v| shared.parameters.bounded_text(parameter_text::format(v))),
        )
        .collect();
    Ok((read_ns, values))
}

/// Send `request` on `client` and wait for the answer, sending it again after each [`ANSWER_TIMEOUT`] (at
/// most [`ASKS`] times).
async fn ask<S>(client: &r2r::Client<S>, request: &S::Request, service: &str) -> Result<S::Response, String>
where
    S: r2r::WrappedServiceTypeSupport + 'static,
{
    for _ in 0..ASKS {
        let answer = client.request(request).map_err(|e| format!("{service}: {e}"))?;
        if let Ok(answered) = tokio::time::timeout(ANSWER_TIMEOUT, answer).await {
            return answered.map_err(|e| format!("{service}: {e}"));
        }
    }
    Err(format!(
        "{service}: no answer to {ASKS} requests, {ANSWER_TIMEOUT:?} each"
    ))
}
