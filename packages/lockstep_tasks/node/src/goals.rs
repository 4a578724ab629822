//! A goal's decomposition and check before it is accepted, and a task's actuator goals: sending one (tagged so its events find their way back) and cancelling one (now if
//! accepted, else the moment it is).

use std::time::Duration;

use lockstep_tasks::map::StationMap;
use lockstep_tasks::routes::plan_routes;
use lockstep_tasks::{Attribute, Id, Params, Tree};
use r2r::lockstep_interfaces::action::ExecuteTask;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::actuators;
use crate::environment::{check_query, Environment};
use crate::manager::Event;
use crate::task::{LeafGoal, Task};
use crate::Loaded;

/// The goal's parameters (a JSON object), or why they are not.
pub fn goal_parameters(wanted: &ExecuteTask::Goal) -> Result<Params, String> {
    let text = if wanted.parameters_json.trim().is_empty() {
        "{}"
    } else {
        wanted.parameters_json.as_str()
    };
    serde_json::from_str(text).map_err(|e| format!("parameters_json is not a JSON object: {e}"))
}

/// Decompose a task for `robot` and check every action's goal, before anything is accepted or sent. Routes
/// given as `{from, to}` stations are planned on the station map (the speed meets each lane's limit).
pub fn decompose(
    loaded: &Loaded,
    task_type: &str,
    params: &Params,
    robot: &str,
    map: Option<&StationMap>,
) -> Result<Tree, String> {
    let config = &loaded.config;
    let mut tree = Tree::decompose(config, task_type, params).map_err(|e| e.to_string())?;
    match map {
        Some(map) => plan_routes(&mut tree, map, "speed").map_err(|e| e.to_string())?,
        None => {
            if let Some(node) =
                (tree.nodes.iter()).find(|n| n.params.get("route").is_some_and(Value::is_object))
            {
                return Err(format!(
                    "{}: route: a route between stations needs a station map (parameter 'map_file')",
                    node.path
                ));
            }
        }
    }
    let clients = loaded
        .clients
        .get(robot)
        .ok_or_else(|| format!("no robot `{robot}`"))?;
    for node in &tree.nodes {
        for attribute in &node.attributes {
            if let Attribute::Condition { query } = attribute {
                check_query(query).map_err(|e| format!("{}: {e}", node.path))?;
            }
        }
        let Some(name) = &node.actuator else { continue };
        let (actuator, client) = config
            .actuators
            .get(name)
            .zip(clients.get(name))
            .ok_or_else(|| format!("{}: actuator `{name}` is not configured", node.path))?;
        let goal = actuators::goal(&node.path, actuator, &node.params)?;
        client
            .check(&goal)
            .map_err(|e| format!("{}: {} goal: {e}", node.path, actuator.action_type))?;
    }
    Ok(tree)
}

/// Send a leaf's goal; its events come back tagged with the task, leaf and generation.
#[allow(clippy::too_many_arguments)]
pub fn send_goal(
    task: &mut Task,
    leaf: Id,
    path: &str,
    actuator: &str,
    server: &str,
    params: &Params,
    tx: &mpsc::UnboundedSender<Event>,
    wait: Duration,
) -> Result<(), String> {
    let loaded = task.loaded.clone();
    let (config, client) = loaded
        .config
        .actuators
        .get(actuator)
        .zip(loaded.clients.get(&task.robot).and_then(|c| c.get(actuator)))
        .ok_or_else(|| format!("actuator `{actuator}` is not configured"))?;
    let mut goal = actuators::goal(path, config, params)?;
    if let (Some(fields), Value::Object(goal)) = (task.resume_with.remove(&leaf), &mut goal) {
        goal.extend(fields);
    }
    task.generation += 1;
    let generation = task.generation;
    task.goals.insert(
        leaf,
        LeafGoal {
            generation,
            handle: None,
            cancel_pending: false,
            feedback: None,
            actuator: actuator.to_owned(),
            server: server.to_owned(),
        },
    );
    let tx = tx.clone();
    let id = task.id.clone();
    client.send(
        goal,
        wait,
        Box::new(move |event| {
            let _ = tx.send(Event::Leaf {
                task: id.clone(),
                leaf,
                generation,
                event,
            });
        }),
    );
    Ok(())
}

/// Cancel a leaf's goal: now if accepted, else the moment it is. A navigation cancelled part way is sent
/// again (after a resume) with the route it had left.
pub fn cancel_goal(task: &mut Task, leaf: Id, env: &mut Environment) {
    let Some(g) = task.goals.get_mut(&leaf) else {
        return;
    };
    task.cancelled.insert(g.generation, g.server.clone());
    env.draining(&g.server);
    let remaining = g
        .feedback
        .as_ref()
        .and_then(|f| f.get("remaining_route"))
        .filter(|r| r.as_array().is_some_and(|a| !a.is_empty()));
    if let Some(route) = remaining {
        let mut fields = serde_json::Map::new();
        fields.insert("route".into(), route.clone());
        task.resume_with.insert(leaf, fields);
    }
    match g.handle.take() {
        Some(handle) => {
            handle.cancel();
            task.goals.remove(&leaf);
        }
        None => g.cancel_pending = true,
    }
}

/// Pause a pausable actuator's goal along its path; if it cannot pause, the manager hears
/// [`Event::PauseFailed`] and cancels the goal instead.
pub fn pause_goal(task: &Task, leaf: Id, tx: &mpsc::UnboundedSender<Event>, wait: Duration, resume: bool) {
    let Some(g) = task.goals.get(&leaf) else { return };
    let Some(pauser) = (task.loaded.pausers.get(&task.robot)).and_then(|p| p.get(&g.actuator)) else {
        return;
    };
    let tx = tx.clone();
    let id = task.id.clone();
    let failed: Box<dyn FnOnce(String) + Send> = Box::new(move |reason| {
        let _ = tx.send(Event::PauseFailed {
            task: id,
            leaf,
            reason,
        });
    });
    if resume {
        pauser.resume(wait, failed);
    } else {
        pauser.pause(wait, failed);
    }
}
