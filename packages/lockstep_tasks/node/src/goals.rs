//! A goal's decomposition and check before it is accepted, and a task's actuator goals: sending one (tagged so its events find their way back) and cancelling one (now if
//! accepted, else the moment it is).

use std::time::Duration;

use lockstep_tasks::{Attribute, Id, Params, Tree};
use r2r::lockstep_interfaces::action::ExecuteTask;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::actuators;
use crate::environment::{check_query, Environment};
use crate::manager::Event;
use crate::task::{LeafGoal, Task};
use crate::Loaded;

/// Decompose and check every action's goal, before anything is accepted or sent.
pub fn decompose(loaded: &Loaded, wanted: &ExecuteTask::Goal) -> Result<Tree, String> {
    let text = if wanted.parameters_json.trim().is_empty() {
        "{}"
    } else {
        wanted.parameters_json.as_str()
    };
    let params: Params =
        serde_json::from_str(text).map_err(|e| format!("parameters_json is not a JSON object: {e}"))?;
    let config = &loaded.config;
    let tree = Tree::decompose(config, &wanted.task_type, &params).map_err(|e| e.to_string())?;
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
            .zip(loaded.clients.get(name))
            .ok_or_else(|| format!("{}: actuator `{name}` is not configured", node.path))?;
        let goal = actuators::goal(&node.path, actuator, &node.params)?;
        client
            .check(&goal)
            .map_err(|e| format!("{}: {} goal: {e}", node.path, actuator.action_type))?;
    }
    Ok(tree)
}

/// Send a leaf's goal; its events come back tagged with the task, leaf and generation.
pub fn send_goal(
    task: &mut Task,
    leaf: Id,
    path: &str,
    actuator: &str,
    params: &Params,
    tx: &mpsc::UnboundedSender<Event>,
    wait: Duration,
) -> Result<(), String> {
    let loaded = task.loaded.clone();
    let (config, client) = loaded
        .config
        .actuators
        .get(actuator)
        .zip(loaded.clients.get(actuator))
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
    task.cancelled.insert(g.generation, g.actuator.clone());
    env.draining(&g.actuator);
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
