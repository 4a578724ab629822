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
//! Bounds (the graph may hold hostile nodes): at most [`MAX_MODULES`] modules, [`MAX_PARAMETERS`] parameters
//! each, names of [`MAX_NAME`] bytes, values of [`MAX_VALUE`](crate::pending_parameters::MAX_VALUE) bytes of
//! text (a longer one is stored as `unrecorded:<length>`), and
//! [`MAX_BYTES`](crate::pending_parameters::MAX_BYTES) of parameter text in all: changes beyond are counted
//! per module (record `lockstep_parameter_changes_dropped`), not stored. What is learnt waits in
//! [`Pending`](crate::pending_parameters::Pending) (module `pending_parameters`) for the bag thread.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_trace_ros::topology_topic;
use r2r::rcl_interfaces::msg::ParameterEvent;
use r2r::rcl_interfaces::srv::{GetParameters, ListParameters};

use crate::pending_parameters::{bounded_text, MAX_NAME};
use crate::shared::Shared;

/// Modules whose parameters are read.
pub const MAX_MODULES: usize = 256;
/// Parameters read per module.
pub const MAX_PARAMETERS: usize = 1000;
/// Longest wait for a parameter service to appear.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for one answer before the request is sent again, and how many times it is sent: a request
/// sent just as the service appeared may go unanswered (the answer leaves before its way back is matched).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(1);
const ASKS: u32 = 5;
/// Reads of one module before giving up (its failure is stored).
const ATTEMPTS: u32 = 2;
/// Discovery rounds spent looking for the node announcing a module's topology before trying `/<module>`.
const NODE_LOOKS: u32 = 20;

/// Read the parameters of every module learnt (every `period`), and keep the changes announced on
/// `/parameter_events`, until the node stops.
pub async fn watch(node: SharedNode, shared: Arc<Shared>, period: Duration) {
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
                shared
                    .parameters
                    .add_event(&event, lockstep_trace::now_ns() as u64);
                futures::future::ready(())
            }));
        }
        Err(e) => r2r::log_warn!(&logger, "parameter changes are not recorded: subscribing: {e}"),
    }
    let mut started: BTreeSet<String> = BTreeSet::new();
    let mut looks: BTreeMap<String, u32> = BTreeMap::new();
    let mut interval = tokio::time::interval(period.max(Duration::from_millis(50)));
    loop {
        interval.tick().await;
        let modules: Vec<String> = shared
            .with(|s| {
                s.topology
                    .components()
                    .into_iter()
                    .map(|c| c.module_name)
                    .collect()
            })
            .unwrap_or_default();
        for module in modules {
            if started.contains(&module) || started.len() >= MAX_MODULES {
                continue;
            }
            let node_name = match announcer(&node, &module) {
                Some(name) => name,
                None => {
                    let looked = looks.entry(module.clone()).or_default();
                    *looked += 1;
                    if *looked < NODE_LOOKS {
                        continue;
                    }
                    format!("/{module}")
                }
            };
            started.insert(module.clone());
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
    // A publisher whose node is not discovered yet is named `_NODE_NAME_UNKNOWN_` (in
    // `_NODE_NAMESPACE_UNKNOWN_`): look again later.
    let p = publishers.iter().find(|p| !p.node_name.contains("_UNKNOWN_"))?;
    if p.node_namespace.contains("_UNKNOWN_") {
        return None;
    }
    let namespace = p.node_namespace.trim_end_matches('/');
    Some(format!("{namespace}/{}", p.node_name))
}

/// Read `module`'s parameters from `node_name` (a few attempts) and keep them, or the reason they could not be.
async fn read_module(
    node: SharedNode,
    shared: Arc<Shared>,
    module: String,
    node_name: String,
    logger: String,
) {
    let mut error = String::new();
    for _ in 0..ATTEMPTS {
        match read(&node, &node_name).await {
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
async fn read(node: &SharedNode, node_name: &str) -> Result<(u64, Vec<(String, String)>), String> {
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
    let mut names: Vec<String> = (listed.result.names.into_iter())
        .filter(|n| n.len() <= MAX_NAME)
        .collect();
    names.sort();
    names.dedup();
    names.truncate(MAX_PARAMETERS);
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
        .zip(got.values.iter().map(bounded_text))
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
